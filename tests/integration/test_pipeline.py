"""The whole pipeline on real services: an S3 server (moto, SeaweedFS), a broker (Redis,
RabbitMQ), a redis-server for run state, two celery worker processes."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.runs.index import RunIndex, verify_index
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.storage import open_store
from tests.conftest import s3_client
from tests.integration.conftest import ALL_LANES, PIPELINE_DOCUMENTS, STORE_LANES
from tests.integration.corpus_gen import upload, write_corpus

pytestmark = pytest.mark.integration


def _same_results(summary: dict, expected: dict) -> None:
    assert summary["counts"] == expected["counts"]
    assert summary["documents"] == expected["documents"]
    assert summary["bytes"] == expected["bytes"]
    assert summary["index"]["units"] == expected["index"]["units"]
    assert summary["index"]["merkle_root"] == expected["index"]["merkle_root"]


@pytest.mark.parametrize("lane", STORE_LANES, indirect=True)
def test_s3_run_equals_in_process_core_and_a_second_run_recomputes_nothing(
    pipeline, s3_corpus, expected_summary
):
    pipeline.start_worker("w1")
    pipeline.start_worker("w2")
    first, created = pipeline.service.submit(RunSpec(corpus=s3_corpus, policy="default"))
    assert created
    summary = pipeline.wait(first.id)

    _same_results(summary, expected_summary)
    assert summary["documents"] == PIPELINE_DOCUMENTS
    counts = summary["counts"]
    assert counts["claims"] >= 5 * PIPELINE_DOCUMENTS and counts["candidates"] >= PIPELINE_DOCUMENTS
    assert counts["claims.labelled"] == counts["claims"]
    units = summary["units"]
    assert units["verify"]["computed"] + units["verify"]["failed"] == PIPELINE_DOCUMENTS
    assert units["admit"]["done"] == PIPELINE_DOCUMENTS
    assert units["verify"]["cached"] == units["admit"]["cached"] == 0

    # The run's files are in the output bucket: one index row per unit, each receipt present,
    # and a reader recomputes the Merkle root from the index pieces alone.
    out = open_store(pipeline.settings.storage_url, pipeline.settings)
    rows = list(RunIndex(out, first.id).rows())
    assert len(rows) == 2 * PIPELINE_DOCUMENTS
    assert len({r["unit"] for r in rows}) == len(rows)
    assert all(out.exists(r["receipt"]) for r in rows if r["receipt"])
    assert verify_index(out, first.id) == summary["index"]["merkle_root"]
    assert json.loads(out.get(f"runs/{first.id}/run.json"))["state"] == summary["state"]
    # Only the index stays: segments, plan steps and finalize's sorted runs are gone.
    leftovers = [i.key for p in out.list_pages(f"runs/{first.id}/") for i in p]
    assert not [k for k in leftovers if "/segments/" in k or "/plan/" in k or "/finalize/" in k]

    # The same corpus again: every receipt is found, nothing is recomputed.
    second, _ = pipeline.service.submit(RunSpec(corpus=s3_corpus, policy="default"))
    again = pipeline.wait(second.id)
    _same_results(again, expected_summary)
    assert again["units"]["verify"]["computed"] == again["units"]["admit"]["computed"] == 0
    assert again["units"]["verify"]["cached"] == units["verify"]["computed"]
    assert again["units"]["admit"]["cached"] == units["admit"]["computed"]


@pytest.mark.parametrize("lane", ALL_LANES, indirect=True)
def test_sigkill_of_a_worker_mid_run_still_counts_every_unit_exactly_once(
    pipeline, lane, s3_corpus, expected_summary
):
    victim = pipeline.start_worker("victim")
    pipeline.start_worker("survivor")
    record, _ = pipeline.service.submit(RunSpec(corpus=s3_corpus, policy="default"))
    killed_at: list[int] = []

    def kill_once(progress) -> None:
        if not killed_at and progress.planning_done and progress.done >= progress.planned // 5:
            assert progress.done < progress.planned, "the run finished before the kill"
            victim.kill()  # SIGKILL to the worker and its pool: no ack, no clean shutdown
            killed_at.append(progress.done)

    summary = pipeline.wait(record.id, on_progress=kill_once)
    assert killed_at, "the worker was never killed"
    _same_results(summary, expected_summary)
    assert summary["index"]["units"] == 2 * PIPELINE_DOCUMENTS
    if lane.broker_url:  # the batches went through RabbitMQ, not Redis
        assert {"verify", "admit", "control"} <= lane.broker_queues()


@pytest.mark.parametrize("lane", STORE_LANES, indirect=True)
def test_malformed_records_fail_alone_and_are_reported_by_file_and_line(
    pipeline, lane, shared_corpus, corpus_index, tmp_path
):
    folder = tmp_path / "bad-corpus"
    good = [r for r in corpus_index if r["part"] == "tatqa"][:6]
    write_corpus(folder, shared_corpus, good)
    text = "The rate was 4.5 percent in 2024.\n"
    (folder / "documents" / "bad-json.txt").write_text(text)
    (folder / "claims" / "bad-json.jsonl").write_text(
        '{"id": "a", "claim": "The rate was 4.5 percent"}\n{"id": "b", "claim": \n'
        '{"id": "c", "text": "no claim field"}\n{"id": "d", "claim": "in 2024"}\n'
    )
    (folder / "documents" / "latin1.txt").write_bytes(
        "Caf\xe9 revenue rose.\nSecond line \xa3 5.\n".encode("latin-1")
    )
    (folder / "claims" / "latin1.jsonl").write_text('{"id": "x", "claim": "revenue rose"}\n')
    (folder / "candidates" / "latin1.json").write_text(
        '[{"id": "k", "field": "figure_1", "value": "5"}]'
    )
    (folder / "documents" / "not-a-list.txt").write_text(text)
    (folder / "candidates" / "not-a-list.json").write_text(
        '{"id": "k", "field": "figure_1", "value": "4.5"}'
    )
    bucket = lane.new_bucket("bad")
    upload(folder, s3_client(lane.s3_endpoint), bucket, "bad-corpus")

    pipeline.start_worker("w1")
    pipeline.start_worker("w2")
    record, _ = pipeline.service.submit(RunSpec(corpus=f"s3://{bucket}/bad-corpus"))
    summary = pipeline.wait(record.id)

    assert summary["state"] == "partially_failed"
    where = {(e["file"], e["line"], e["field"]) for e in summary["errors"]}
    assert ("claims/bad-json.jsonl", 2, None) in where
    assert ("claims/bad-json.jsonl", 3, "claim") in where
    assert ("documents/latin1.txt", 1, None) in where
    assert ("candidates/not-a-list.json", None, None) in where
    # Every good unit is done: the six generated documents, and both good claims of bad-json.
    units = summary["units"]
    assert units["verify"]["computed"] == 7 and units["verify"]["failed"] == 1
    assert units["admit"]["computed"] == 6 and units["admit"]["failed"] == 2
    assert summary["counts"]["claims.verdict.grounded"] >= 2 + 6
    assert summary["errors_total"] == 5  # latin1.txt fails both of its units
