"""`groundswell admit` and `groundswell check-receipt`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main

DOC = "For 2025, the limit is $7,000. The fee is up to $79,000 in total."
SCHEMA = {
    "fields": {
        "limit": {"type": "integer", "unit": "USD", "required": True},
        "fee": {"type": "integer", "unit": "USD"},
        "other": {"type": "integer", "required": True},
    }
}
CANDIDATES = [
    {"id": "a", "field": "limit", "value": "7000", "unit": "USD", "evidence": {"text": "$7,000"}},
    {"id": "b", "field": "fee", "value": "79000", "unit": "USD", "evidence": {"text": "$79,000"}},
    {"id": "c", "field": "limit", "value": "70000", "unit": "USD", "evidence": {"text": "$7,000"}},
    {"id": "d", "field": 5, "value": "1"},
]


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "doc": tmp_path / "doc.txt",
        "schema": tmp_path / "schema.json",
        "cands": tmp_path / "cands.json",
    }
    paths["doc"].write_bytes(DOC.encode("utf-8"))
    paths["schema"].write_text(json.dumps(SCHEMA), encoding="utf-8")
    paths["cands"].write_text(json.dumps(CANDIDATES), encoding="utf-8")
    return paths


def _run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_admit_writes_a_receipt_that_check_receipt_verifies(inputs, tmp_path):
    out = tmp_path / "receipt.json"
    result = _run(
        "admit", str(inputs["doc"]), str(inputs["schema"]), str(inputs["cands"]), "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    receipt = json.loads(out.read_text(encoding="utf-8"))
    by_id = {d["candidate_id"]: d for d in receipt["decisions"]}
    assert by_id["a"]["outcome"] == "admitted"
    assert by_id["b"]["codes"] == ["QUALIFIED_VALUE"]
    assert by_id["c"]["codes"] == ["VALUE_NOT_IN_EVIDENCE"]
    assert by_id["d"]["codes"] == ["CANDIDATE_INVALID"]
    assert receipt["coverage"] == [{"field": "other", "code": "REQUIRED_FIELD_MISSING"}]
    check = _run(
        "check-receipt", str(out), str(inputs["doc"]), str(inputs["schema"]), str(inputs["cands"])
    )
    assert check.exit_code == 0 and "receipt verified" in check.output


def test_check_receipt_fails_on_a_changed_document_outcome_or_policy(inputs, tmp_path):
    out = tmp_path / "receipt.json"
    _run("admit", str(inputs["doc"]), str(inputs["schema"]), str(inputs["cands"]), "-o", str(out))
    args = [str(inputs["schema"]), str(inputs["cands"])]
    changed_doc = tmp_path / "changed.txt"
    changed_doc.write_text(DOC.replace("7,000", "8,000"), encoding="utf-8")
    result = _run("check-receipt", str(out), str(changed_doc), *args)
    assert result.exit_code == 1 and "document differs" in result.output

    receipt = json.loads(out.read_text(encoding="utf-8"))
    first = receipt["decisions"][0]
    first["outcome"] = "admitted" if first["outcome"] != "admitted" else "rejected"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(receipt), encoding="utf-8")
    result = _run("check-receipt", str(tampered), str(inputs["doc"]), *args)
    assert result.exit_code == 1 and "receipt_sha256 does not match" in result.output

    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"reanchor": False}), encoding="utf-8")
    result = _run("check-receipt", str(out), str(inputs["doc"]), *args, "--policy", str(policy))
    assert result.exit_code == 1 and "policy_sha256 differs" in result.output


def test_admit_json_prints_the_receipt(inputs):
    result = _run(
        "admit", str(inputs["doc"]), str(inputs["schema"]), str(inputs["cands"]), "--json"
    )
    assert result.exit_code == 0
    assert json.loads(result.output)["summary"] == {
        "admitted": 1,
        "needs_verification": 1,
        "rejected": 2,
    }


def test_packet_on_stdin_and_refusal_of_an_invalid_packet():
    packet = {"document": DOC, "schema": SCHEMA, "candidates": CANDIDATES[:1], "policy": None}
    result = _run("admit", "--packet", "-", input=json.dumps(packet))
    assert result.exit_code == 0
    assert json.loads(result.output)["decisions"][0]["outcome"] == "admitted"
    bad = dict(packet, document="Cafe\u0301")  # not NFC
    result = _run("admit", "--packet", "-", input=json.dumps(bad))
    assert result.exit_code == 2
    assert "Normalization Form C" in result.output
    assert not result.output.lstrip().startswith("{")


def test_batch_over_folders_writes_receipts_and_a_summary(tmp_path):
    docs, cands, out = tmp_path / "docs", tmp_path / "cands", tmp_path / "receipts"
    docs.mkdir()
    cands.mkdir()
    (docs / "one.txt").write_text(DOC, encoding="utf-8")
    (cands / "one.json").write_text(json.dumps(CANDIDATES), encoding="utf-8")
    (docs / "two.txt").write_text("Nothing here.", encoding="utf-8")
    (cands / "two.json").write_text("[]", encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    result = _run("admit", str(docs), str(schema), str(cands), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("2 documents")  # no progress output when not a terminal
    assert "| rejected | 2 |" in result.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["totals"]["outcomes"] == {"admitted": 1, "needs_verification": 1, "rejected": 2}
    assert summary["totals"]["codes"]["REQUIRED_FIELD_MISSING"] == 3
    assert summary["documents"]["two"]["codes"] == {"REQUIRED_FIELD_MISSING": 2}
    assert json.loads((out / "one.json").read_text(encoding="utf-8"))["document"]["id"] == "one"


def test_batch_refuses_a_missing_candidate_file_and_writes_nothing(tmp_path):
    docs, cands, out = tmp_path / "docs", tmp_path / "cands", tmp_path / "receipts"
    docs.mkdir()
    cands.mkdir()
    (docs / "one.txt").write_text(DOC, encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    result = _run("admit", str(docs), str(schema), str(cands), "-o", str(out))
    assert result.exit_code == 2
    assert not out.exists()


def test_duplicate_json_keys_are_refused(inputs, tmp_path):
    schema = tmp_path / "dup.json"
    schema.write_text('{"fields": {}, "fields": {}}', encoding="utf-8")
    result = _run("admit", str(inputs["doc"]), str(schema), str(inputs["cands"]))
    assert result.exit_code == 2 and "duplicate key" in result.output
