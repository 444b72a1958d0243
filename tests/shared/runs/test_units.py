"""One unit through the core: inputs read, receipt written once, records that fail alone."""

from __future__ import annotations

import json

from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store


def _runner(tmp_path, claims: list[dict]):
    corpus = open_store(str(tmp_path / "corpus"))
    corpus.put("documents/d.txt", b"Net sales rose 5% to $391.0 billion.")
    corpus.put("claims/d.jsonl", "".join(json.dumps(c) + "\n" for c in claims).encode())
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    return UnitRunner(corpus, output, registry.resolve("default@1"))


def test_offsets_outside_the_document_fail_their_record_alone(tmp_path):
    runner = _runner(
        tmp_path,
        [
            {"id": "a", "claim": "Net sales rose 5%", "start": 0, "end": 17},
            {"id": "b", "claim": "rose", "start": 10, "end": 500},
            {"id": "c", "claim": "rose", "start": 9, "end": 9},
            {"id": "d", "claim": "$391.0 billion"},
        ],
    )
    result = runner.verify("d")
    assert result.status == "computed"
    assert result.counts["claims"] == 2 and result.counts["claims.verdict.grounded"] == 2
    assert {(e.line, e.field) for e in result.errors} == {(2, "end"), (3, "start")}
    assert "document's length" in next(e for e in result.errors if e.line == 2).message


def test_a_receipt_is_written_once_and_reused(tmp_path):
    runner = _runner(tmp_path, [{"id": "a", "claim": "Net sales rose 5%"}])
    first = runner.verify("d")
    again = runner.verify("d")
    assert (first.status, again.status) == ("computed", "cached")
    assert first.receipt_key == again.receipt_key and first.receipt_sha256 == again.receipt_sha256
    assert first.counts == again.counts and first.inputs == again.inputs
