"""A kind from outside the package, end to end: named in GROUNDSWELL_KINDS_EXTRA, it is planned,
sent to its own queue, run by real ``groundswell worker`` processes over a real Redis, and its
counters and index rows are in the run's summary like the built-in kinds'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundswell.shared.runs import kinds
from groundswell.shared.runs.index import RunIndex
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.storage import open_store
from tests.conftest import Pipeline

pytestmark = pytest.mark.integration

TOY = "tests.workers.toy_kind"
TEXTS = {
    "a": "Revenue rose 12 percent in 2025, the company said.",
    "b": "The label lists three contraindications.\nNone of them is new.",
    "c": "A document with neither claims nor candidates still has its words counted.",
}


def _corpus(root: Path) -> Path:
    for sub in ("documents", "claims"):
        (root / sub).mkdir(parents=True)
    for doc_id, text in TEXTS.items():
        (root / "documents" / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    for doc_id in ("a", "b"):  # "c" has only the toy kind's unit
        claim = {"id": f"{doc_id}1", "claim": TEXTS[doc_id].split()[0]}
        (root / "claims" / f"{doc_id}.jsonl").write_text(json.dumps(claim) + "\n")
    return root


@pytest.fixture
def toy_pipeline(service_settings, output_bucket, tmp_path):
    # The submitting process loads the kind as the workers do (it reconciles, so it sends
    # batches of every kind); the registry is put back afterwards for the other tests.
    with kinds.restored():
        values = {
            **service_settings,
            "storage_url": f"s3://{output_bucket}/out",
            "kinds_extra": TOY,
        }
        pipe = Pipeline(values, tmp_path)
        try:
            yield pipe
        finally:
            pipe.stop()
    assert "words" not in kinds.names()


def test_a_kind_named_in_the_setting_runs_end_to_end_on_its_own_queue(toy_pipeline, tmp_path):
    kind = kinds.get("words")
    assert kind.queue == "words" and "words" in kinds.queues()
    # Two workers: one for the toy kind's queue alone, one for the built-in kinds' queues.
    toy_pipeline.start_worker("toy", queues="words")
    toy_pipeline.start_worker("rest", queues="read,verify,admit,control")
    corpus = _corpus(tmp_path / "corpus")
    record, _ = toy_pipeline.service.submit(RunSpec(corpus=str(corpus), policy="default"))
    summary = toy_pipeline.wait(record.id)

    assert summary["state"] == "succeeded", summary["errors"]
    words = {doc_id: len(text.split()) for doc_id, text in TEXTS.items()}
    assert summary["counts"]["words.total"] == sum(words.values())
    assert summary["counts"]["words.documents"] == len(TEXTS)
    assert summary["units"]["words"] == {
        "computed": 3,
        "cached": 0,
        "failed": 0,
        "done": 3,
        "planned": 3,
    }
    assert summary["units"]["verify"]["done"] == 2
    # Its units are index rows, beside the verify units.
    assert summary["index"]["units"] == 3 + 2
    out = open_store(toy_pipeline.settings.storage_url, toy_pipeline.settings)
    rows = [r for r in RunIndex(out, record.id).rows() if r["kind"] == "words"]
    assert sorted(r["doc_id"] for r in rows) == ["a", "b", "c"]
    assert {r["doc_id"]: r["bytes"] for r in rows} == {d: len(t.encode()) for d, t in TEXTS.items()}
    # Its queue was consumed (by the worker that announced it) and is empty now.
    assert "words" in (toy_pipeline.service.runs.consumed_queues() or set())
    assert toy_pipeline.service.runs.r.llen("words") == 0
