"""The user's own JSON through a YAML mapping: OpenAI/Instructor-style ``{fact,
substring_quote[]}`` records and LlamaExtract citations (the README's two examples), over real
documents of ../shared/corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundswell.shared.cli.app import main
from groundswell.shared.corpus import InputFileError
from groundswell.shared.formats import Converted, convert_file
from groundswell.shared.formats.mapped import load_mapping, select

INSTRUCTOR = """\
mapping: 1
document:
  id: $.doc_id
  text: $.text
claims:
  each: $.facts[*]
  quote: $.substring_quote[*]
  keep: {fact: $.fact}
producer: {model: gpt-4o-2024-08-06, prompt_version: facts-v2}
"""

LLAMAEXTRACT = """\
mapping: 1
document:
  id: $.id
  path: $.file
claims:
  each: $.extraction_metadata.field_metadata.*
  quote: $.citation[*].matching_text
  keep: {field: "@key", page: "$.citation[0].page"}
candidates:
  each: $.extraction_metadata.field_metadata.*
  field: "@key"
  value: $$.data[@key]
  quote: $.citation[0].matching_text
  confidence: $.confidence
producer: {model: $.model}
"""

SENTENCE = re.compile(r"(?<![\w$])[A-Z][^.\n]{30,120}\.(?=\s|$)")
NUMBER = re.compile(r"\$?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


@pytest.fixture(scope="module")
def docs(shared_corpus: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted((shared_corpus / "documents").glob("tatqa-dev-*.txt")):
        text = path.read_text(encoding="utf-8")
        if len(SENTENCE.findall(text)) >= 2 and NUMBER.search(text):
            out.append((path.stem, text))
        if len(out) == 5:
            return out
    raise AssertionError("too few documents")


def test_instructor_facts_with_substring_quotes(docs, tmp_path):
    (tmp_path / "mapping.yaml").write_text(INSTRUCTOR)
    lines = []
    for doc_id, text in docs:
        one, two = SENTENCE.findall(text)[:2]
        facts = [
            {"fact": "what the document says", "substring_quote": [one, two]},
            {"fact": "made up", "substring_quote": ["The company sold forty moons in 2019."]},
        ]
        lines.append(json.dumps({"doc_id": doc_id, "text": text, "facts": facts}))
    lines.append(json.dumps({"doc_id": "broken", "text": "x", "facts": [{"substring_quote": [3]}]}))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "out.jsonl").write_text("\n".join(lines) + "\n")
    report = _import(str(tmp_path / "src"), str(tmp_path / "mapping.yaml"), tmp_path / "c", 1)
    assert report["documents"] == 5 and report["claims"] == 15
    assert report["producers"] == [
        {"format": "mapped", "model": "gpt-4o-2024-08-06", "prompt_version": "facts-v2"}
    ]
    (error,) = report["errors"]
    assert error["line"] == 6 and error["field"].endswith("$.substring_quote[*]")
    claims = [json.loads(c) for c in (tmp_path / "c" / "claims" / f"{docs[0][0]}.jsonl").open()]
    assert [c["fact"] for c in claims] == ["what the document says"] * 2 + ["made up"]
    # Unbound quotations: the verifier locates the two real ones, not the invented one.
    assert report["disagreements"]["unaligned_located"] == 10


def test_llamaextract_citations_with_a_page_and_a_document_file(docs, tmp_path):
    mapping = load_mapping(LLAMAEXTRACT.encode(), "llama.yaml")
    src = tmp_path / "src"
    src.mkdir()
    doc_id, text = docs[0]
    (src / "filing.txt").write_text(text, encoding="utf-8")
    amount = NUMBER.search(text).group(0)
    record = {
        "id": doc_id,
        "file": "filing.txt",
        "model": "llamaextract-balanced",
        "data": {"total": amount.strip("$").replace(",", ""), "missing": "12"},
        "extraction_metadata": {
            "field_metadata": {
                "total": {"citation": [{"page": 1, "matching_text": amount}], "confidence": 0.9},
                "missing": {"citation": [{"page": 3, "matching_text": "not in it"}]},
            }
        },
    }
    got = list(
        convert_file(
            "mapped",
            json.dumps(record).encode(),
            str(src / "r.json"),
            {"format": "mapped"},
            {"mapping": mapping, "base": src},
        )
    )
    (doc,) = got
    assert isinstance(doc, Converted) and doc.doc_id == doc_id and doc.text == text
    assert doc.producer == {"format": "mapped", "model": "llamaextract-balanced"}
    assert [c["page"] for c in doc.claims] == [1, 3]
    assert [c["field"] for c in doc.claims] == ["total", "missing"]
    total = doc.candidates[0]
    assert total == {
        "id": 0,
        "field": "total",
        "value": amount.strip("$").replace(",", ""),
        "confidence": 0.9,
        "evidence": [{"text": amount}],
    }
    # A path outside the source folder is refused, naming the mapping's path.
    outside = dict(record, file="../../etc/passwd")
    (error,) = convert_file(
        "mapped", json.dumps(outside).encode(), "r.json", {}, {"mapping": mapping, "base": src}
    )
    assert str(error).startswith("r.json: $.file: no document file")


def test_paths_and_a_bad_mapping():
    value = {"a": {"x": [1, 2], "y": [3]}, "k": {"x": "X"}}
    assert [v for v, _ in select("$.a.*[*]", value, value)] == [1, 2, 3]
    assert [v for v, _ in select("$$.k[@key]", None, value, "x")] == ["X"]
    assert select("$.a['y'][0]", value, value) == [(3, None)]
    assert select("$.a.x[-1]", value, value) == [(2, None)]
    assert select("constant", value, value) == [("constant", None)]
    with pytest.raises(InputFileError, match="document: give the text or the path"):
        load_mapping(b"document: {id: $.id}\n", "m.yaml")
    with pytest.raises(InputFileError, match=r"m.yaml:3: invalid YAML"):
        load_mapping(b"document:\n  - [\n", "m.yaml")
    with pytest.raises(InputFileError, match=r"claims\.quote: required"):
        load_mapping(b"document: {text: $.t}\nclaims: {each: $.f}\n", "m.yaml")


def test_a_page_citation_is_verified_on_that_page_of_the_pdf(tmp_path):
    from tests.shared.read import minipdf

    src = tmp_path / "src"
    src.mkdir()
    pdf = minipdf.build(
        [
            minipdf.text(72, 700, "Net sales were 391,035 in fiscal 2024."),
            minipdf.text(72, 700, "Operating income was 123,216 in fiscal 2024."),
        ]
    )
    (src / "filing.pdf").write_bytes(pdf)
    record = {
        "id": "filing",
        "file": "filing.pdf",
        "data": {"net_sales": "391035", "operating_income": "123216", "ghost": "1"},
        "extraction_metadata": {
            "field_metadata": {
                "net_sales": {"citation": [{"page": 1, "matching_text": "391,035"}]},
                # the right text, the wrong page
                "operating_income": {"citation": [{"page": 1, "matching_text": "123,216"}]},
                "ghost": {"citation": [{"page": 2, "matching_text": "not in the filing"}]},
            }
        },
    }
    (src / "results.json").write_text(json.dumps(record))
    (tmp_path / "llama.yaml").write_text(LLAMAEXTRACT)
    report = _import(str(src / "results.json"), str(tmp_path / "llama.yaml"), tmp_path / "c", 0)
    assert report["pages"] == {"elsewhere": 1, "located": 1, "not_found": 1}
    corpus = tmp_path / "c"
    assert (corpus / "documents" / "filing.pdf").read_bytes() == pdf
    claims = [json.loads(c) for c in (corpus / "claims" / "filing.jsonl").open()]
    from groundswell.shared.read import read_bytes

    text = read_bytes(pdf, "filing.pdf").text
    bound = claims[0]
    assert text[bound["start"] : bound["end"]] == "391,035"
    assert "start" not in claims[1] and "start" not in claims[2]
    # A run reads the PDF as the import did, and verifies the bound quotation at its span.
    from groundswell.shared.policies import PolicyRegistry
    from groundswell.shared.runs.units import UnitRunner
    from groundswell.shared.storage import open_store

    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    runner = UnitRunner(open_store(str(corpus)), output, registry.resolve("default@1"))
    result = runner.unit("verify", "filing", "documents/filing.pdf")
    assert result.status == "computed", result.errors
    receipt = json.loads(output.get(result.receipt_key))
    at_span = receipt["records"][0]["certificate"]
    assert at_span["scope"] == "span" and at_span["grounded"]
    assert receipt["records"][0]["pages"] == [1]


def _import(src: Path, mapping: Path, corpus: Path, code: int) -> dict:
    """`groundswell import mapped` and its JSON report; the exit code is ``code``."""
    args = ["import", "mapped", str(src), "--mapping", str(mapping), "--to", str(corpus), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)
