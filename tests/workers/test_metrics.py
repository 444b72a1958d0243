"""Worker metrics under prefork, scraped over HTTP and by a real Prometheus."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.models import RunSpec
from groundswell.workers.embedded import free_port, stop_process, wait_for_port
from tests.conftest import Pipeline, wait_until

pytestmark = pytest.mark.integration


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    # The worker's metrics server may drop one connection while a pool child starts or
    # exits (CI saw "Server disconnected without sending a response" once): ask again.
    for attempt in range(3):
        try:
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            break
        except httpx.TransportError:
            if attempt == 2:
                raise
            time.sleep(0.2)
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


@contextlib.contextmanager
def prometheus_scraping(port: int, tmp_path: Path) -> Iterator:
    """A real Prometheus scraping 127.0.0.1:``port`` every second; yields ``query(expr)``,
    the instant query's result list."""
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

    def query(expr: str) -> list[dict]:
        answer = httpx.get(
            f"http://127.0.0.1:{prom_port}/api/v1/query", params={"query": expr}, timeout=10
        ).json()
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def ready() -> bool:
        # Prometheus listens before its storage is open and answers 503 until then.
        return httpx.get(f"http://127.0.0.1:{prom_port}/-/ready", timeout=10).status_code == 200

    try:
        wait_for_port(prom_port, timeout=30, proc=proc)
        wait_until(ready, timeout=60, what="Prometheus ready")
        yield query
    finally:
        stop_process(proc)


def corpus_with_bad_input(root: Path) -> Path:
    """The sample corpus with a malformed claims line (a record that fails alone) and a
    candidates file that is not JSON (a unit that fails)."""
    shutil.copytree(SAMPLE_CORPUS, root)
    claims = sorted((root / "claims").glob("*.jsonl"))[0]
    claims.write_text(claims.read_text() + '{"id": "broken", "claim": \n')
    sorted((root / "candidates").glob("*.json"))[0].write_text("[{not json")
    return root


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
    with prometheus_scraping(port, tmp_path) as query:

        def claims_in_prometheus() -> float | None:
            result = query('sum(groundswell_claims_total{policy="default"})')
            return float(result[0]["value"][1]) if result else None

        assert wait_until(claims_in_prometheus, timeout=30, what="Prometheus") == counts["claims"]


def test_metrics_dir_is_wiped_when_a_worker_starts(tmp_path: Path, pipeline):
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    stale = metrics_dir / "counter_424242.db"
    stale.write_bytes(b"old")
    worker = pipeline.start_worker("w", metrics_dir=metrics_dir)
    wait_until(lambda: not stale.exists(), what="the stale file to go")
    stop_process(worker.proc)


DASHBOARD = Path(__file__).resolve().parents[2] / "deploy/grafana/dashboards/groundswell.json"


def dashboard_query(title: str) -> str:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    (panel,) = [p for p in panels if p["title"] == title]
    (target,) = panel["targets"]
    return target["expr"]


def test_input_errors_reach_the_dashboard_panel_from_the_first_failed_unit(pipeline, tmp_path):
    """A counter first seen at 1 has no earlier sample, and increase() cannot see that first
    step: the worker creates the input-error series at zero before any unit runs."""
    port = free_port()
    pipeline.start_worker("m1", metrics_port=port, metrics_dir=tmp_path / "metrics")
    corpus = corpus_with_bad_input(tmp_path / "corpus")
    with prometheus_scraping(port, tmp_path) as query:
        series = wait_until(
            lambda: query("groundswell_input_errors_total"), what="the input-error series at 0"
        )
        assert {(s["metric"]["kind"], s["metric"]["scope"]) for s in series} == {
            (kind, scope) for kind in ("verify", "admit") for scope in ("record", "unit")
        }
        assert {s["value"][1] for s in series} == {"0"}

        record, _ = pipeline.service.submit(RunSpec(corpus=str(corpus)))
        summary = pipeline.wait(record.id)
        counts = summary["counts"]
        assert counts["errors.verify"] == 1 and counts["errors.admit"] == 1
        samples = scrape(port)
        assert total(samples, "groundswell_input_errors_total", kind="verify", scope="record") == 1
        assert total(samples, "groundswell_input_errors_total", kind="admit", scope="unit") == 1
        assert total(samples, "groundswell_input_errors_total") == counts["errors"]

        # The dashboard's own query sees both errors, by the labels its legend shows.
        panel = dashboard_query("Input errors")

        def on_the_panel() -> dict[tuple[str, str], float] | None:
            shown = {
                (r["metric"]["kind"], r["metric"]["scope"]): float(r["value"][1])
                for r in query(panel)
            }
            seen = {key for key, value in shown.items() if value >= 1}
            return shown if seen == {("verify", "record"), ("admit", "unit")} else None

        wait_until(on_the_panel, what="the input errors on the dashboard panel")


def test_a_repeated_run_counts_cache_hits_and_nothing_it_did_not_compute(pipeline, tmp_path):
    port = free_port()
    pipeline.start_worker("m1", concurrency=2, metrics_port=port, metrics_dir=tmp_path / "m")
    corpus = str(corpus_with_bad_input(tmp_path / "corpus"))
    first, _ = pipeline.service.submit(RunSpec(corpus=corpus))
    summary = pipeline.wait(first.id)
    wait_for_port(port)
    before = scrape(port)
    domain = (
        "groundswell_claims_total",
        "groundswell_candidates_total",
        "groundswell_decision_codes_total",
        "groundswell_labelled_total",
        "groundswell_escapes_total",
        "groundswell_input_errors_total",
    )
    for name in domain:
        assert total(before, name) > 0, name
    assert total(before, "groundswell_units_total", status="cached") == 0

    second, _ = pipeline.service.submit(RunSpec(corpus=corpus))
    again = pipeline.wait(second.id)
    assert again["counts"] == summary["counts"]  # the summary still counts every unit
    assert again["units"]["verify"]["cached"] == 9 and again["units"]["admit"]["cached"] == 8
    after = scrape(port)
    for name in domain:
        assert total(after, name) == total(before, name), name
    assert total(after, "groundswell_units_total", kind="verify", status="cached") == 9
    assert total(after, "groundswell_units_total", kind="admit", status="cached") == 8
    # What was read to find the receipts is still counted.
    assert total(after, "groundswell_documents_total") == 2 * total(
        before, "groundswell_documents_total"
    )


def test_the_reconcile_timestamp_moves_while_beat_runs_and_stops_with_it(
    service_settings, output_bucket, tmp_path
):
    """What GroundswellBeatDown reads: beat sends reconcile, a worker records its success."""
    values = {**service_settings, "storage_url": f"s3://{output_bucket}/out"}
    pipeline = Pipeline({**values, "reconcile_interval": 1}, tmp_path)
    port = free_port()
    try:
        pipeline.start_worker("m1", metrics_port=port, metrics_dir=tmp_path / "metrics")
        wait_for_port(port)
        beat = pipeline.start_beat("beat")

        def last_reconcile() -> float:
            return total(
                scrape(port), "groundswell_task_last_success_timestamp_seconds", task="reconcile"
            )

        started = time.time()
        first = wait_until(
            lambda: last_reconcile() >= started and last_reconcile(),
            what="a reconcile sent by beat",
        )
        wait_until(lambda: last_reconcile() > first, what="the next reconcile")
        stop_process(beat)
        time.sleep(1.5)  # a reconcile already queued may still run
        stopped = last_reconcile()
        time.sleep(3)
        assert last_reconcile() == stopped  # beat is gone: the timestamp stands still
    finally:
        pipeline.stop()
