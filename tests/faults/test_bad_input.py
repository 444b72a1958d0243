"""Hostile and broken input: each bad record fails alone, named by file, line and field, and
is never retried; what makes a whole run impossible ends it failed, saying why."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from groundswell.shared.runs.models import RunSpec
from tests.conftest import Pipeline, s3_client

pytestmark = pytest.mark.integration

TEXT = "The rate was 4.5 percent in 2024. Net sales were $7,000 million.\n"
SCHEMA = {"fields": {"rate": {"type": "number"}, "year": {"type": "integer"}}}


def _claims(*records: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def _bad_corpus(root) -> None:
    for sub in ("documents", "claims", "candidates"):
        (root / sub).mkdir(parents=True)
    (root / "schema.json").write_text(json.dumps(SCHEMA))

    def doc(name: str, claims: str | None = None, candidates: str | None = None) -> None:
        (root / "documents" / f"{name}.txt").write_text(TEXT)
        if claims is not None:
            (root / "claims" / f"{name}.jsonl").write_text(claims)
        if candidates is not None:
            (root / "candidates" / f"{name}.json").write_text(candidates)

    good = {"id": "g", "claim": "The rate was 4.5 percent"}
    doc("good", _claims(good), json.dumps([{"id": "k", "field": "rate", "value": "4.5"}]))
    doc(
        "deep",
        _claims(good, '{"id": "x", "claim": "a", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    )
    doc("digits", _claims(good, '{"id": "x", "claim": "a", "n": ' + "9" * 5000 + "}"))
    doc("nan", _claims(good, '{"id": "x", "claim": "a", "score": NaN}'))
    doc("huge-int", _claims(good, {"id": "x", "claim": "a", "meta": {"n": 2**60}}))
    doc("dup-claim", _claims(good, {"id": "g", "claim": "in 2024"}))
    doc("bad-json", _claims(good, '{"id": "y", "claim": '))
    doc(
        "dup-candidate",
        None,
        json.dumps(
            [
                {"id": "k", "field": "rate", "value": "4.5"},
                {"id": "k", "field": "year", "value": 2024},
                {"id": "z", "field": "rate", "value": "4.5", "meta": {"n": 2**60}},
            ]
        ),
    )
    doc("no-units")  # a document with neither claims nor candidates
    (root / "documents" / "sub").mkdir()
    (root / "documents" / "sub" / "nested.txt").write_text(TEXT)  # outside the layout
    (root / "documents" / "link.txt").symlink_to("/etc/passwd")
    (root / "claims" / "link.jsonl").write_text(_claims(good))
    os.mkfifo(root / "documents" / "fifo.txt")
    (root / "claims" / "fifo.jsonl").write_text(_claims(good))
    (root / "documents" / "big.txt").write_text(TEXT * 6000)  # over max_document_bytes
    (root / "claims" / "big.jsonl").write_text(_claims(good))


def _run(pipeline: Pipeline, corpus: str, timeout: float = 120) -> tuple[dict, object]:
    record, _ = pipeline.service.submit(RunSpec(corpus=corpus))
    deadline = time.monotonic() + timeout
    while not pipeline.service.get(record.id).terminal:
        assert time.monotonic() < deadline, pipeline.service.progress(record.id)
        pipeline.service.reconcile()
        time.sleep(0.2)
    return pipeline.service.summary(record.id), pipeline.service.get(record.id)


def test_each_bad_record_fails_alone_with_file_line_and_field(service_settings, tmp_path):
    corpus = tmp_path / "corpus"
    _bad_corpus(corpus)
    values = {
        **service_settings,
        "storage_url": str(tmp_path / "out"),
        "max_document_bytes": 300_000,
    }
    pipeline = Pipeline(values, tmp_path)
    try:
        pipeline.start_worker("w1")
        pipeline.start_worker("w2")
        summary, _ = _run(pipeline, str(corpus))
    finally:
        pipeline.stop()
    assert summary["state"] == "partially_failed"
    where = {(e["file"], e["line"], e["field"]): e["message"] for e in summary["errors"]}

    def found(file: str, line: int | None, field: str | None, words: str) -> None:
        message = where.get((file, line, field))
        assert message is not None and words in message, (file, line, field, where)

    found("claims/deep.jsonl", 2, None, "nested too deeply")
    found("claims/digits.jsonl", 2, None, "too many digits")
    found("claims/nan.jsonl", 2, None, "NaN is not JSON")
    found("claims/huge-int.jsonl", 2, "meta.n", "beyond 2^53")
    found("claims/dup-claim.jsonl", 2, "id", "already used on line 1")
    found("claims/bad-json.jsonl", 2, None, "invalid JSON")
    found("candidates/dup-candidate.json", None, "[1].id", "already used by [0]")
    found("candidates/dup-candidate.json", None, "[2].meta.n", "beyond 2^53")
    found("documents/link.txt", None, None, "symbolic link")
    found("documents/fifo.txt", None, None, "FIFO")
    found("documents/big.txt", None, None, "over the limit of 300000")
    # The good records of every file were verified; no unit was given up or retried.
    assert not [e for e in summary["errors"] if "gave up" in e["message"]]
    units = summary["units"]
    assert units["verify"]["failed"] == 3  # the link, the FIFO, the oversized document
    assert units["verify"]["computed"] == 7 and units["admit"]["computed"] == 2
    assert summary["counts"]["claims"] == 7  # one good claim in each computed claims file
    assert summary["counts"]["ignored.documents_without_units"] == 1
    assert summary["counts"]["ignored.files"] == 1  # documents/sub/nested.txt
    # Nothing of /etc/passwd reached a receipt.
    receipts = list((tmp_path / "out" / "receipts").rglob("*.json"))
    assert receipts and not any("root:" in p.read_text() for p in receipts)


def test_runs_that_cannot_be_done_end_failed_with_the_cause(
    service_settings, s3_endpoint, tmp_path
):
    bad_schema = tmp_path / "bad-schema"
    (bad_schema / "documents").mkdir(parents=True)
    (bad_schema / "documents" / "a.txt").write_text(TEXT)
    (bad_schema / "candidates").mkdir()
    (bad_schema / "candidates" / "a.json").write_text("[]")
    (bad_schema / "schema.json").write_text(
        '{"fields": {"rate": {"type": "number", "maximum": 1e999}}}'
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    only_docs = tmp_path / "only-documents"
    (only_docs / "documents").mkdir(parents=True)
    (only_docs / "documents" / "a.txt").write_text(TEXT)
    bucket = f"out-{uuid.uuid4().hex[:8]}"
    s3_client(s3_endpoint).create_bucket(Bucket=bucket)
    values = {**service_settings, "storage_url": f"s3://{bucket}/out"}
    pipeline = Pipeline(values, tmp_path)
    try:
        pipeline.start_worker("w1")
        cases = {
            str(bad_schema): "schema.json",
            str(empty): "nothing to do",
            str(only_docs): "1 document without claims or candidates",
            "s3://no-such-bucket-here/corpus": "NoSuchBucket",
        }
        for corpus, words in cases.items():
            started = time.monotonic()
            summary, record = _run(pipeline, corpus, timeout=60)
            assert record.state == "failed" and words in (record.error or ""), (corpus, record)
            assert summary["state"] == "failed" and summary["error"] == record.error
            assert time.monotonic() - started < 30  # ends now, not after stall intervals
    finally:
        pipeline.stop()
