"""LangExtract files as corpora: `groundswell import langextract`, then admission receipts equal
to groundgate's own adapter (``admit_document``, the oracle) byte for byte on 320 documents made
over real documents, and the producer/verifier disagreements counted."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from groundgate.adapters.langextract import admit_document
from groundgate.canonical import jcs

from groundswell.shared.cli.app import main
from groundswell.shared.formats import convert_file
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store
from tests.shared.formats import lx_fixtures

DOCUMENTS = 320


def _nfc(doc: dict) -> dict:
    """The oracle's input for a non-NFC document: groundgate refuses one, so it gets the NFC
    text with each interval moved to the NFC of the text before it (computed here, apart from
    the conversion under test)."""
    text = doc["text"]
    if unicodedata.is_normalized("NFC", text):
        return doc
    doc = copy.deepcopy(doc)
    for x in doc["extractions"]:
        ci = x.get("char_interval")
        if ci and ci.get("start_pos") is not None:
            ci["start_pos"] = len(unicodedata.normalize("NFC", text[: ci["start_pos"]]))
            ci["end_pos"] = len(unicodedata.normalize("NFC", text[: ci["end_pos"]]))
    doc["text"] = unicodedata.normalize("NFC", text)
    return doc


@pytest.fixture(scope="module")
def imported(shared_corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("lx")
    source, not_nfc = lx_fixtures.write(shared_corpus, base / "src", DOCUMENTS)
    (base / "schema.json").write_text(json.dumps(lx_fixtures.SCHEMA))
    result = CliRunner().invoke(
        main,
        [
            "import",
            "langextract",
            str(source),
            "--to",
            str(base / "corpus"),
            "--schema",
            str(base / "schema.json"),
            "--model",
            "gemini-2.5-flash",
            "--producer-version",
            "1.7.1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    return base, source, not_nfc, json.loads(result.stdout)


def test_the_import_writes_the_layout_and_counts_disagreements(imported):
    base, source, not_nfc, report = imported
    corpus = base / "corpus"
    assert report["documents"] == DOCUMENTS and report["errors"] == []
    assert len(list((corpus / "documents").glob("*.txt"))) == DOCUMENTS
    assert len(list((corpus / "candidates").glob("*.json"))) == DOCUMENTS
    assert (corpus / "schema.json").read_bytes() == (base / "schema.json").read_bytes()
    assert report["producers"] == [
        {"format": "langextract", "producer_version": "1.7.1", "model": "gemini-2.5-flash"}
    ]
    # Every case-shifted span (two a document) is called exact and does not verify at the
    # exact or whitespace tier; every match_lesser span (one a document) is short; and the
    # unaligned extractions copied from the text are located.
    d = report["disagreements"]
    assert d["exact_not_verified"] >= 2 * DOCUMENTS
    assert d["lesser_short"] == report["alignment"]["lesser"] == DOCUMENTS
    assert 0 < d["unaligned_located"] < report["alignment"]["unaligned"]
    line = json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    text = (corpus / "documents" / f"{line['document_id']}.txt").read_text(encoding="utf-8")
    assert text == line["text"]
    claims = [json.loads(c) for c in (corpus / "claims" / f"{line['document_id']}.jsonl").open()]
    for claim, x in zip(claims, line["extractions"], strict=True):
        assert claim["claim"] == x["extraction_text"]
        ci = x["char_interval"]
        if ci is None:
            assert "start" not in claim and claim["alignment"] == "unaligned"
        else:
            assert (claim["start"], claim["end"]) == (ci["start_pos"], ci["end_pos"])
    assert not_nfc, "some documents are not NFC"


@pytest.mark.corpus
def test_admission_receipts_equal_groundgates_adapter_byte_for_byte(imported):
    base, source, not_nfc, _ = imported
    schema = lx_fixtures.SCHEMA
    corpus, output = open_store(str(base / "corpus")), open_store(str(base / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    runner = UnitRunner(corpus, output, registry.resolve("default@1"))
    equal, codes, normalized = 0, Counter(), 0
    for raw in source.read_text(encoding="utf-8").splitlines():
        doc = json.loads(raw)
        doc_id = doc.pop("document_id")  # a run's receipt names no document id
        oracle = admit_document(_nfc(doc), schema).to_dict()
        result = runner.unit("admit", doc_id)
        assert result.status == "computed", result.errors
        body = json.loads(output.get(result.receipt_key))
        normalized += "normalized" in body
        assert jcs(body["receipt"]) == jcs(oracle), doc_id
        equal += 1
        codes.update(c for d in oracle["decisions"] for c in d.get("codes") or [d["outcome"]])
    assert equal == DOCUMENTS
    assert normalized == len(not_nfc)
    # The documents exercise what the adapter maps: unaligned without evidence, invalid role
    # lists, outside evidence, unknown fields, and values admitted at their spans.
    for code in (
        "NO_EVIDENCE",
        "CANDIDATE_INVALID",
        "FIELD_UNKNOWN",
        "EVIDENCE_STATED",
        "admitted",
    ):
        assert codes[code] > 0, (code, codes)


def test_a_run_verifies_the_imported_claims(imported):
    base, source, _, _ = imported
    corpus, output = open_store(str(base / "corpus")), open_store(str(base / "out-verify"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    runner = UnitRunner(corpus, output, registry.resolve("default@1"))
    for raw in source.read_text(encoding="utf-8").splitlines()[:20]:
        doc_id = json.loads(raw)["document_id"]
        result = runner.unit("verify", doc_id)
        assert result.status == "computed" and not result.errors, result.errors
        assert result.counts["claims"] > 0 and result.counts["claims.accepted"] > 0


def test_a_malformed_record_fails_alone_naming_file_line_and_field(tmp_path):
    good = {"document_id": "a", "text": "Sales were $5.", "extractions": []}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"document_id": "b", "text": 7}),
        json.dumps(
            {
                "document_id": "c",
                "text": "abc",
                "extractions": [
                    {
                        "extraction_class": "x",
                        "extraction_text": "abc",
                        "char_interval": {"start_pos": 1, "end_pos": 9},
                    }
                ],
            }
        ),
        json.dumps(
            {
                "document_id": "d",
                "text": "abc",
                "extractions": [{"extraction_class": "x", "extraction_text": 5}],
            }
        ),
    ]
    got = list(convert_file("langextract", "\n".join(lines).encode(), "lx.jsonl", {}))
    docs = [g for g in got if hasattr(g, "doc_id")]
    errors = [str(g) for g in got if not hasattr(g, "doc_id")]
    assert [d.doc_id for d in docs] == ["a"]
    assert errors[0].startswith("lx.jsonl:2: invalid JSON")
    assert errors[1].startswith("lx.jsonl:3: text:")
    assert errors[2].startswith("lx.jsonl:4: extractions[0].char_interval: need 0 <= start_pos")
    assert errors[3].startswith("lx.jsonl:5: extractions[0].extraction_text:")
    result = CliRunner().invoke(
        main, ["import", "langextract", str(_write(tmp_path, lines)), "--to", str(tmp_path / "c")]
    )
    assert result.exit_code == 1
    assert "lx.jsonl:4: extractions[0].char_interval" in result.stderr
    assert "imported 1 documents" in result.stdout


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "lx.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rss_of_import(source: Path, corpus: Path) -> int:
    """The peak resident memory (KiB) of `groundswell import` in a process of its own."""
    code = (
        "import resource, sys\n"
        "from groundswell.shared.cli.app import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "import",
            "langextract",
            str(source),
            "--to",
            str(corpus),
            "--no-check",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.strip().splitlines()[-1])


def test_a_large_jsonl_file_is_imported_with_flat_memory(shared_corpus, tmp_path):
    texts = [t for _, t in lx_fixtures.documents(shared_corpus, 40)]

    def write(path: Path, count: int) -> int:
        with path.open("w", encoding="utf-8") as fh:
            for n in range(count):
                text = texts[n % len(texts)]
                line = {
                    "document_id": f"d{n}",
                    "text": text,
                    "extractions": [
                        {
                            "extraction_class": "amount",
                            "extraction_text": text[:5],
                            "char_interval": {"start_pos": 0, "end_pos": 5},
                            "alignment_status": "match_exact",
                        }
                    ],
                }
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        return path.stat().st_size

    small = write(tmp_path / "small.jsonl", 300)
    large = write(tmp_path / "large.jsonl", 3000)
    assert large > 9 * small and large > 20_000_000
    base = _rss_of_import(tmp_path / "small.jsonl", tmp_path / "c1")
    grown = _rss_of_import(tmp_path / "large.jsonl", tmp_path / "c2")
    # Ten times the records: the peak grows by far less than the file (a line at a time).
    assert grown - base < (large - small) / 1024 / 4, (base, grown, large)
    assert len(list((tmp_path / "c2" / "documents").iterdir())) == 3000
