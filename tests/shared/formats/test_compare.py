"""Two producers' extractions of the same documents: `groundswell diff --extractions`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from groundswell.shared.cli.app import main
from groundswell.shared.formats.compare import normalized
from tests.shared.formats import lx_fixtures


def _x(cls: str, text: str, value: str | None = None, key: str | None = None) -> dict:
    attrs = {k: v for k, v in (("value", value), ("key", key)) if v is not None}
    return {"extraction_class": cls, "extraction_text": text, "attributes": attrs or None}


def test_values_compare_by_number_and_folded_text():
    assert normalized("$1,496.5") == normalized("1496.50") == normalized(1496.5) == "1496.5"
    assert normalized("(12)") == normalized("-12") == "-12"
    assert normalized("  Net  Sales ") == normalized("net sales")
    assert normalized("12") != normalized("13")


def test_two_models_extractions_of_the_same_documents(shared_corpus: Path, tmp_path: Path):
    docs = lx_fixtures.documents(shared_corpus, 3)
    a, b = [], []
    for n, (doc_id, text) in enumerate(docs):
        a.append({"document_id": doc_id, "text": text, "extractions": [
            _x("amount", "$1,496.5"), _x("sales", "10", key="2019"), _x("name", "Acme")]})  # fmt: skip
        b.append({"document_id": doc_id, "text": text, "extractions": [
            _x("amount", "1496.50"), _x("sales", "11" if n == 0 else "10", key="2019")]})  # fmt: skip
    b.append({"document_id": "extra", "text": "x", "extractions": []})
    for name, rows, model in (("a", a, "model-a"), ("b", b, "model-b")):
        src = tmp_path / f"{name}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        got = CliRunner().invoke(
            main,
            ["import", "langextract", str(src), "--to", str(tmp_path / name), "--model", model],
        )
        assert got.exit_code == 0, got.output
    result = CliRunner().invoke(
        main, ["diff", "--extractions", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["documents"] == 3 and report["documents_only_b"] == 1
    assert report["producers_a"] == [{"format": "langextract", "model": "model-a"}]
    assert report["producer_keys_b"] == ["langextract:model-b"]  # as a run's summary keys it
    # Without an import record, the producer corpus.yaml declares (import wrote one).
    (tmp_path / "a" / "import.json").unlink()
    again = CliRunner().invoke(
        main, ["diff", "--extractions", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]
    )
    assert json.loads(again.stdout)["producer_keys_a"] == ["langextract:model-a"]
    assert report["fields"] == {
        "amount": {"agree": 3, "differ": 0, "only_a": 0, "only_b": 0},
        "name": {"agree": 0, "differ": 0, "only_a": 3, "only_b": 0},
        "sales": {"agree": 2, "differ": 1, "only_a": 0, "only_b": 0},
    }
    (first,) = [d for d in report["differences"] if d["state"] == "differ"]
    assert first == {
        "doc_id": docs[0][0],
        "field": "sales",
        "key": "2019",
        "a": ["10"],
        "b": ["11"],
        "state": "differ",
    }
    shown = CliRunner().invoke(
        main, ["diff", "--extractions", str(tmp_path / "a"), str(tmp_path / "b")]
    )
    assert "A: " in shown.stdout and "langextract:model-a" in shown.stdout
    assert f"{docs[0][0]}  sales [2019]: 10 | 11" in shown.stdout
