"""Worker metrics under prefork, scraped over HTTP and by a real Prometheus."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.models import RunSpec
from groundswell.workers.embedded import free_port, stop_process, wait_for_port
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    out: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(
        v
        for (n, lab), v in samples.items()
        if n == name and all((k, x) in lab for k, x in labels.items())
    )


def test_worker_metrics_equal_the_summary_and_survive_a_dead_pool_child(pipeline, tmp_path):
    port = free_port()
    metrics_dir = tmp_path / "metrics"
    worker = pipeline.start_worker("m1", concurrency=2, metrics_port=port, metrics_dir=metrics_dir)
    record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    summary = pipeline.wait(record.id)
    counts = summary["counts"]
    wait_for_port(port)

    before = scrape(port)
    assert total(before, "groundswell_claims_total") == counts["claims"]
    assert total(before, "groundswell_claims_total", tier="exact") == counts["claims.tier.exact"]
    assert (
        total(before, "groundswell_claims_total", verdict="grounded", policy="default", version="1")
        == counts["claims.verdict.grounded"]
    )
    assert (
        total(before, "groundswell_candidates_total", outcome="admitted")
        == counts["candidates.outcome.admitted"]
    )
    assert (
        total(before, "groundswell_decision_codes_total", code="SCALE_WORD")
        == counts["candidates.code.SCALE_WORD"]
    )
    assert (
        total(before, "groundswell_escapes_total", kind="candidate") == counts["candidates.escapes"]
    )
    assert total(before, "groundswell_labelled_total", kind="claim") == counts["claims.labelled"]
    assert total(before, "groundswell_units_total", kind="verify", status="computed") == 9
    assert total(before, "groundswell_tasks_total", task="verify", status="succeeded") >= 1
    assert total(before, "groundswell_task_duration_seconds_count", task="admit") >= 1

    # SIGKILL one pool child: the pool replaces it, and its counts must not be lost.
    children = wait_until(
        lambda: worker.children() if len(worker.children()) == 2 else None, what="pool"
    )
    os.kill(children[0], signal.SIGKILL)
    wait_until(
        lambda: len(worker.children()) == 2 and children[0] not in worker.children(),
        what="a new child",
    )
    after = scrape(port)
    for name in (
        "groundswell_claims_total",
        "groundswell_candidates_total",
        "groundswell_tasks_total",
    ):
        assert total(after, name) == total(before, name), name
    leftovers = [p.name for p in metrics_dir.glob(f"*_{children[0]}.db")]
    assert leftovers == [], leftovers  # folded into the archive, not piling up
    assert (metrics_dir / "counter_archive.db").exists()

    # A real Prometheus scrapes the worker and agrees with the summary.
    prometheus = shutil.which("prometheus")
    assert prometheus, "Prometheus is needed: apt-get install prometheus (.ci/run does it)"
    prom_port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: worker\n    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
    )
    proc = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(prom_port, timeout=30, proc=proc)

        def claims_in_prometheus() -> float | None:
            response = httpx.get(
                f"http://127.0.0.1:{prom_port}/api/v1/query",
                params={"query": 'sum(groundswell_claims_total{policy="default"})'},
            ).json()
            result = response["data"]["result"]
            return float(result[0]["value"][1]) if result else None

        assert wait_until(claims_in_prometheus, timeout=30, what="Prometheus") == counts["claims"]
    finally:
        stop_process(proc)


def test_metrics_dir_is_wiped_when_a_worker_starts(tmp_path: Path, pipeline):
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    stale = metrics_dir / "counter_424242.db"
    stale.write_bytes(b"old")
    worker = pipeline.start_worker("w", metrics_dir=metrics_dir)
    wait_until(lambda: not stale.exists(), what="the stale file to go")
    stop_process(worker.proc)
