"""Run bookkeeping on real services: Redis holds a window, storage holds the run.

Redis is flushed (FLUSHALL) after runs finish and in the middle of one; the finished runs
are still read through the API, and the interrupted one completes with the in-process
core's summary after reconcile rebuilds it from storage.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.models import RunSpec
from tests.conftest import Pipeline

pytestmark = pytest.mark.integration


def _wait_api(client, pipeline: Pipeline, run_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = client.get(f"/v1/runs/{run_id}").json()
        if state["state"] in ("succeeded", "partially_failed", "failed", "cancelled"):
            return state
        assert time.monotonic() < deadline, state
        pipeline.service.reconcile()
        time.sleep(0.2)


def _all_receipts(client, run_id: str, limit: int) -> list[dict]:
    items, cursor = [], None
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = client.get(f"/v1/runs/{run_id}/receipts", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if not body["has_next_page"]:
            return items


def test_finished_runs_are_read_from_storage_after_redis_is_flushed(client, pipeline):
    pipeline.start_worker("w1")
    pipeline.start_worker("w2")
    ids = []
    for policy in ("default", "strict"):
        created = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "policy": policy})
        assert created.status_code == 202
        ids.append(created.json()["id"])
    before = {}
    for run_id in ids:
        state = _wait_api(client, pipeline, run_id)
        before[run_id] = {
            "state": state,
            "summary": client.get(f"/v1/runs/{run_id}/summary").json(),
            "receipts": _all_receipts(client, run_id, 7),
        }

    redis.Redis.from_url(pipeline.settings.broker_url).flushall()

    listed = client.get("/v1/runs", params={"limit": 10}).json()
    assert [r["id"] for r in listed["items"]] == ids[::-1]  # newest first, from the catalog
    assert listed["pagination"]["total_count"] == 2
    for run_id in ids:
        state = client.get(f"/v1/runs/{run_id}").json()
        assert state["state"] == before[run_id]["state"]["state"]
        assert state["progress"] == before[run_id]["state"]["progress"]
        assert client.get(f"/v1/runs/{run_id}/summary").json() == before[run_id]["summary"]
        assert _all_receipts(client, run_id, 7) == before[run_id]["receipts"]
    a, b = ids
    doc_id = before[a]["receipts"][0]["doc_id"]
    receipts = client.get(f"/v1/runs/{a}/documents/{doc_id}/receipts").json()
    assert receipts["doc_id"] == doc_id and receipts["verify"]["kind"] == "verify"
    report = client.get(f"/v1/runs/{a}/report", params={"documents": 4})
    assert report.status_code == 200 and report.text.count("<h3 id=") == 4
    assert "5 more documents not shown" in report.text
    diff = client.get(f"/v1/runs/{a}/diff/{b}", params={"limit": 3}).json()
    assert diff["run_a"] == a and diff["run_b"] == b and diff["moved_total"] > 3
    assert len(diff["moved"]) == 3 and diff["pagination"]["total_count"] == diff["moved_total"]
    last = client.get(
        f"/v1/runs/{a}/diff/{b}", params={"limit": 3, "page": diff["pagination"]["max_page"]}
    ).json()
    assert 1 <= len(last["moved"]) <= 3

    # A new run after the loss still follows the last run of its corpus to finish (the two
    # ran side by side on two workers: either may have finished last).
    finished_last = max(ids, key=lambda run_id: before[run_id]["state"]["finished_at"])
    again = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "policy": "strict"})
    assert again.json()["previous_run"] == finished_last
    assert _wait_api(client, pipeline, again.json()["id"])["state"] == "succeeded"


def test_a_run_completes_with_the_same_summary_after_redis_is_flushed_mid_run(
    pipeline, s3_corpus, expected_summary
):
    pipeline.start_worker("w1")
    pipeline.start_worker("w2")
    record, _ = pipeline.service.submit(RunSpec(corpus=s3_corpus, policy="default"))
    flushed_at: list[int] = []

    def flush_once(progress) -> None:
        if not flushed_at and progress.done >= progress.planned // 3 > 0:
            assert not progress.planning_done or progress.done < progress.planned
            redis.Redis.from_url(pipeline.settings.broker_url).flushall()
            flushed_at.append(progress.done)
            # The next reconcile finds the run in storage's catalog and rebuilds it.
            assert pipeline.service.reconcile()["rebuilt"] == 1
            rebuilt = pipeline.service.runs.progress(record.id)
            assert rebuilt is not None and rebuilt.done >= progress.done

    summary = pipeline.wait(record.id, on_progress=flush_once)
    assert flushed_at, "Redis was never flushed"
    for key in ("counts", "documents", "bytes"):
        assert summary[key] == expected_summary[key], key
    assert summary["index"]["units"] == expected_summary["index"]["units"]
    assert summary["index"]["merkle_root"] == expected_summary["index"]["merkle_root"]


def test_redis_holds_a_window_while_running_and_a_few_numbers_after(service_settings, tmp_path):
    values = {**service_settings, "max_inflight_batches": 3, "batch_max_units": 1}
    pipeline = Pipeline(values, tmp_path)
    try:
        pipeline.start_worker("w1")
        client = redis.Redis.from_url(pipeline.settings.broker_url, decode_responses=True)
        record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
        peak = {"pending": 0, "queued": 0}
        ended = threading.Event()

        # A sampler of its own, every few milliseconds: the wait loop polls every 0.2 s, and
        # a warm worker can finish the 18 batches between two of its polls.
        def watch() -> None:
            while not ended.is_set():
                progress = pipeline.service.runs.progress(record.id)
                if progress is not None:
                    peak["pending"] = max(peak["pending"], progress.outstanding)
                queued = sum(client.llen(q) for q in ("verify", "admit"))
                peak["queued"] = max(peak["queued"], queued)
                time.sleep(0.002)

        sampler = threading.Thread(target=watch, daemon=True)
        sampler.start()
        try:
            summary = pipeline.wait(record.id)
        finally:
            ended.set()
            sampler.join()
        assert summary["index"]["units"] == 18  # 18 batches of one unit each
        # Planning paused at the window: never more than 3 batches sent and not recorded, but
        # for the units of the one document a step always takes (its claims and candidates:
        # with one unit per batch, one more batch).
        assert 1 <= peak["pending"] <= 3 + 1 and peak["queued"] <= 3 + 1, peak
        # After the run: one small hash (record and numbers), expiring; nothing per unit.
        keys = sorted(client.scan_iter(f"gs:run:{record.id}*"))
        assert keys == [f"gs:run:{record.id}"]
        # (a fixed set of fields: per-kind sent and recorded batch counters among them)
        assert client.memory_usage(keys[0]) < 8192
        assert 0 < client.ttl(keys[0]) <= 7 * 24 * 3600
        assert not client.sismember("gs:active", record.id)
    finally:
        pipeline.stop()


def test_reconcile_resends_only_lost_batches_never_queued_ones(service_settings, tmp_path):
    """Batches wait in their queue far longer than the stall time: reconcile leaves them."""
    values = {**service_settings, "batch_max_units": 1, "stall_seconds": 0.1}
    pipeline = Pipeline(values, tmp_path)
    try:
        pipeline.start_worker("w1")
        record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
        resent = []

        def reconcile_often(progress) -> None:
            resent.append(pipeline.service.reconcile()["batches"])

        summary = pipeline.wait(record.id, on_progress=reconcile_often)
        assert summary["index"]["units"] == 18 and len(resent) >= 3  # many stall periods
        assert sum(resent) == 0, resent
    finally:
        pipeline.stop()


def test_planning_and_finalize_hand_over_step_by_step_with_no_reconcile(service_settings, tmp_path):
    """Steps of a millisecond: each planning and finalize step sends the next one itself."""
    values = {**service_settings, "step_seconds": 0.001, "batch_max_units": 2, "list_page_size": 4}
    pipeline = Pipeline(values, tmp_path)
    try:
        pipeline.start_worker("w1")
        pipeline.start_worker("w2")
        record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
        deadline = time.monotonic() + 60
        while not pipeline.service.get(record.id).terminal:  # nobody calls reconcile here
            assert time.monotonic() < deadline, pipeline.service.progress(record.id)
            time.sleep(0.1)
        summary = pipeline.service.summary(record.id)
        assert summary is not None and summary["index"]["units"] == 18
    finally:
        pipeline.stop()
