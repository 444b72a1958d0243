"""A run with work on a queue no live worker consumes says so, wherever it is looked at:
the API's run state (``waiting_for``), /metrics, `groundswell status` and `run --wait`; and
the word clears when a worker for that queue starts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from groundswell.shared.runs.state import redis_client
from groundswell.shared.settings import hash_api_key
from groundswell.workers.embedded import service_env
from tests.conftest import API_KEY, Pipeline, running_api, wait_until
from tests.shared.cli.test_runs_cli import groundswell

pytestmark = pytest.mark.integration

PDF = "NCT06159946_Prot_000.pdf"  # 2 pages: a read unit, on the read queue


def pdf_corpus(root: Path, raw: Path) -> Path:
    for sub in ("documents", "claims"):
        (root / sub).mkdir(parents=True)
    shutil.copyfile(raw / PDF, root / "documents" / "protocol.pdf")
    (root / "claims" / "protocol.jsonl").write_text('{"id": "p1", "claim": "Protocol"}\n')
    return root


def test_a_run_waiting_on_an_unconsumed_queue_says_so_within_a_stall_interval(
    service_settings, shared_raw, tmp_path
):
    corpus = pdf_corpus(tmp_path / "corpus", shared_raw)
    values = {
        **service_settings,
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": str(tmp_path),
    }
    stall = float(values["stall_seconds"])
    pipeline = Pipeline(values, tmp_path)
    redis = redis_client(pipeline.settings.state_redis_url)
    # The README's old "Without Docker" worker: no read queue.
    pipeline.start_worker("checker", queues="verify,admit,control")
    wait_until(lambda: list(redis.scan_iter("gs:consumes:checker@*")), what="its queues announced")
    env = {**service_env(**values), "GROUNDSWELL_API_KEY": API_KEY}
    waiter = subprocess.Popen(
        [sys.executable, "-m", "groundswell", "run", str(corpus), "--wait"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(waiter.stderr), daemon=True)
    reader.start()
    try:
        with (
            running_api(values, tmp_path) as url,
            httpx.Client(base_url=url, headers={"X-API-Key": API_KEY}, timeout=30) as api,
        ):
            first = wait_until(lambda: next((x for x in lines if x.startswith("run ")), None))
            run_id = first.split()[1].rstrip(":")

            def read_pending() -> bool:
                specs = redis.hvals(f"gs:run:{run_id}:pending")
                return any(json.loads(spec)["kind"] == "read" for spec in specs)

            wait_until(read_pending, timeout=60, what="the read batch planned")
            planned = time.monotonic()
            state = wait_until(
                lambda: api.get(f"/v1/runs/{run_id}").json()["waiting_for"],
                timeout=stall,
                what="waiting_for in the API's run state",
            )
            noticed = time.monotonic() - planned
            print(f"waiting_for in the API {noticed:.2f} s after the read batch was planned")
            assert noticed <= stall
            assert state["queue"] == "read" and state["since"].endswith("Z")
            # The time it was first seen stays put while the run waits.
            assert api.get(f"/v1/runs/{run_id}").json()["waiting_for"] == state

            metrics = api.get("/metrics").text
            assert 'groundswell_queues_unconsumed{queue="read"} 1.0' in metrics
            assert 'groundswell_queues_unconsumed{queue="verify"} 0.0' in metrics

            status = groundswell("status", run_id, env={**env, "GROUNDSWELL_API_URL": url})
            assert "waiting for a worker on queue 'read' since" in status.stdout, status
            assert "groundswell worker --queues read" in status.stdout

            wait_until(
                lambda: any("waiting for a worker on queue 'read'" in x for x in lines),
                timeout=stall,
                what="run --wait's warning",
            )

            pipeline.start_worker("reader", queues="read,control")
            wait_until(
                lambda: api.get(f"/v1/runs/{run_id}").json()["waiting_for"] is None,
                timeout=30,
                what="waiting_for cleared by a read worker",
            )
            assert waiter.wait(timeout=120) == 0, "".join(lines)
            reader.join(timeout=10)
            metrics = api.get("/metrics").text
            assert 'groundswell_queues_unconsumed{queue="read"} 0.0' in metrics
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
        pipeline.stop()
