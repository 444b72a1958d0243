"""The sample corpus shipped in the package (``shared/sample/corpus``), which ``groundswell demo`` runs.

The reference engines are the oracles here: gtrex 1.1.0 under its DEFAULT policy for the claims,
groundgate 0.11.0 with its default policy for the candidates. The corpus must be well formed,
and it must exercise every verification tier and verdict, the admission codes listed below, and
both kinds of labelled error (escapes and false rejections), so that the demo shows each of them.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from importlib.resources import files
from pathlib import Path

import groundgate
import gtrex
import pytest

CORPUS = Path(str(files("groundswell.shared.sample") / "corpus"))

TIERS = {"exact", "whitespace", "typography", "case", "skeleton"}
VERDICTS = {"grounded", "grounded_loose", "stitched", "unlocated", "degenerate"}
ADMISSION_CODES = {
    "VALUE_NOT_IN_EVIDENCE",
    "UNIT_NOT_IN_EVIDENCE",
    "QUOTE_NOT_FOUND",
    "SCALE_WORD",
    "QUALIFIED_VALUE",
    "CONFLICTING_CANDIDATES",
    "FIELD_UNKNOWN",
    "TYPE_INVALID",
    "NO_EVIDENCE",
    "SPAN_INVALID",
    "REQUIRED_FIELD_MISSING",
}
# Characters of real filings and labels that the normalization tiers must cope with.
TYPOGRAPHY = {
    "left double quotation mark": "\u201c",
    "right single quotation mark": "\u2019",
    "em dash": "\u2014",
    "en dash": "\u2013",
    "no-break space": "\u00a0",
    "soft hyphen": "\u00ad",
    "fi ligature": "\ufb01",
    "HTML entity": "&amp;",
    "vulgar fraction one half": "\u00bd",
    "tab-separated cell": "\t",
}


def doc_ids() -> list[str]:
    return sorted(p.stem for p in (CORPUS / "documents").glob("*.txt"))


def read_claims(doc_id: str) -> list[dict]:
    path = CORPUS / "claims" / f"{doc_id}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def read_json(*parts: str):
    return json.loads(CORPUS.joinpath(*parts).read_text(encoding="utf-8"))


def value_item(candidate: dict) -> dict | None:
    """The candidate's document item with role ``value`` (SPEC §2.5), if it has one."""
    evidence = candidate.get("evidence")
    items = [evidence] if isinstance(evidence, dict) else (evidence or [])
    for item in items:
        if item.get("source", "document") == "document" and item.get("role", "value") == "value":
            return item
    return None


@pytest.fixture(scope="module")
def schema() -> dict:
    return read_json("schema.json")


@pytest.fixture(scope="module")
def claim_results() -> list[tuple[str, dict, gtrex.Certificate]]:
    """(doc_id, claim record, certificate) for every claim, under gtrex DEFAULT."""
    results = []
    for doc_id in doc_ids():
        text = (CORPUS / "documents" / f"{doc_id}.txt").read_text(encoding="utf-8")
        verifier = gtrex.Verifier(text, gtrex.DEFAULT)
        for record in read_claims(doc_id):
            if "start" in record:
                cert = verifier.verify_at(record["claim"], record["start"], record["end"])
            else:
                cert = verifier.verify(record["claim"])
            results.append((doc_id, record, cert))
    return results


@pytest.fixture(scope="module")
def receipts(schema: dict) -> dict[str, dict]:
    """The groundgate receipt of each document, as a dict."""
    out = {}
    for doc_id in doc_ids():
        text = (CORPUS / "documents" / f"{doc_id}.txt").read_text(encoding="utf-8")
        candidates = read_json("candidates", f"{doc_id}.json")
        out[doc_id] = groundgate.admit(text, schema, candidates, document_id=doc_id).to_dict()
    return out


def test_layout_is_complete() -> None:
    ids = doc_ids()
    assert 8 <= len(ids) <= 12
    for sub, suffix in (("claims", ".jsonl"), ("candidates", ".json"), ("labels", ".json")):
        names = sorted(p.name for p in (CORPUS / sub).iterdir())
        assert names == [f"{doc_id}{suffix}" for doc_id in ids], sub
    assert (CORPUS / "schema.json").is_file()


@pytest.mark.parametrize("doc_id", doc_ids())
def test_document_is_nfc_utf8(doc_id: str) -> None:
    data = (CORPUS / "documents" / f"{doc_id}.txt").read_bytes()
    text = data.decode("utf-8")  # strict: raises on a bad byte
    assert not text.startswith("\ufeff"), "no byte order mark"
    assert unicodedata.is_normalized("NFC", text)
    assert 1_000 <= len(data) <= 6_000, len(data)


def test_documents_carry_real_typography() -> None:
    corpus_text = "".join(
        (CORPUS / "documents" / f"{doc_id}.txt").read_text(encoding="utf-8") for doc_id in doc_ids()
    )
    missing = [name for name, char in TYPOGRAPHY.items() if char not in corpus_text]
    assert not missing


@pytest.mark.parametrize("doc_id", doc_ids())
def test_claims_parse(doc_id: str) -> None:
    text = (CORPUS / "documents" / f"{doc_id}.txt").read_text(encoding="utf-8")
    path = CORPUS / "claims" / f"{doc_id}.jsonl"
    ids = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        record = json.loads(line)  # every line, blank lines included, is one record
        assert isinstance(record, dict), f"{path.name}:{number}"
        assert isinstance(record["id"], str) and record["id"], f"{path.name}:{number}"
        assert isinstance(record["claim"], str), f"{path.name}:{number}"
        assert ("start" in record) == ("end" in record), f"{path.name}:{number}"
        if "start" in record:
            start, end = record["start"], record["end"]
            assert type(start) is int and type(end) is int, f"{path.name}:{number}"
            assert 0 <= start < end <= len(text), f"{path.name}:{number}"
        ids.append(record["id"])
    assert len(ids) == len(set(ids)), "claim ids are unique within a document"
    assert 8 <= len(ids) <= 15


@pytest.mark.parametrize("doc_id", doc_ids())
def test_candidates_parse(doc_id: str) -> None:
    candidates = read_json("candidates", f"{doc_id}.json")
    assert isinstance(candidates, list)
    assert 4 <= len(candidates) <= 10
    ids = [c["id"] for c in candidates]
    assert all(isinstance(i, str) and i for i in ids)
    assert len(ids) == len(set(ids)), "candidate ids are unique within a document"
    assert all(isinstance(c["field"], str) for c in candidates)


@pytest.mark.parametrize("doc_id", doc_ids())
def test_every_extraction_has_a_label(doc_id: str) -> None:
    labels = read_json("labels", f"{doc_id}.json")
    assert set(labels) == {"claims", "candidates"}
    assert set(labels["claims"]) == {r["id"] for r in read_claims(doc_id)}
    assert set(labels["candidates"]) == {c["id"] for c in read_json("candidates", f"{doc_id}.json")}
    assert all(type(v) is bool for kind in labels.values() for v in kind.values())


def test_every_tier_and_verdict_occurs(claim_results) -> None:
    tiers = Counter(cert.tier for _, _, cert in claim_results)
    verdicts = Counter(cert.verdict for _, _, cert in claim_results)
    assert not TIERS - set(tiers), tiers
    assert not VERDICTS - set(verdicts), verdicts
    # Under DEFAULT the skeleton tier lies beyond the accepted one: found, but not grounded.
    loose = [cert for _, _, cert in claim_results if cert.tier == "skeleton"]
    assert all(cert.verdict == "grounded_loose" and not cert.grounded for cert in loose)


def test_claims_bound_to_offsets_pass_and_fail(claim_results) -> None:
    bound = [cert for _, record, cert in claim_results if "start" in record]
    assert all(cert.scope == "span" for cert in bound)
    assert any(cert.grounded for cert in bound), "an offset-bound claim at the right place"
    assert any(cert.verdict == "unlocated" and cert.found_elsewhere for cert in bound), (
        "an offset-bound claim at the wrong place, whose text occurs elsewhere"
    )


def test_every_listed_admission_code_occurs(receipts) -> None:
    codes = Counter()
    for receipt in receipts.values():
        codes.update(code for d in receipt["decisions"] for code in d["codes"])
        codes.update(finding["code"] for finding in receipt["coverage"])
    missing = ADMISSION_CODES - set(codes)
    assert not missing, sorted(missing)


def test_admitted_candidates_cite_quotes_and_byte_offsets(receipts) -> None:
    kinds = set()
    for doc_id, receipt in receipts.items():
        candidates = {c["id"]: c for c in read_json("candidates", f"{doc_id}.json")}
        for decision in receipt["decisions"]:
            if decision["outcome"] != "admitted":
                continue
            item = value_item(candidates[decision["candidate_id"]])
            assert item is not None
            kinds.add("offsets" if "start" in item else "quote")
    assert kinds == {"quote", "offsets"}


def test_offsets_are_utf8_bytes(receipts) -> None:
    """A cited span with text names those bytes; at least one span crosses non-ASCII text."""
    crossed = False
    for doc_id in doc_ids():
        data = (CORPUS / "documents" / f"{doc_id}.txt").read_bytes()
        for candidate in read_json("candidates", f"{doc_id}.json"):
            item = value_item(candidate)
            if item is None or "start" not in item or "text" not in item:
                continue
            if item["end"] > len(data):
                continue  # the deliberately invalid span (SPAN_INVALID)
            assert data[item["start"] : item["end"]].decode("utf-8") == item["text"]
            crossed = crossed or any(b > 0x7F for b in data[: item["start"]])
    assert crossed


def test_labels_show_escapes_and_false_rejections(claim_results, receipts) -> None:
    claim_escapes = claim_false_rejections = 0
    for doc_id, record, cert in claim_results:
        label = read_json("labels", f"{doc_id}.json")["claims"][record["id"]]
        claim_escapes += cert.grounded and not label
        claim_false_rejections += label and not cert.grounded
    candidate_escapes = candidate_false_rejections = 0
    for doc_id, receipt in receipts.items():
        labels = read_json("labels", f"{doc_id}.json")["candidates"]
        for decision in receipt["decisions"]:
            label = labels[decision["candidate_id"]]
            candidate_escapes += decision["outcome"] == "admitted" and not label
            candidate_false_rejections += decision["outcome"] == "rejected" and label
    assert claim_escapes >= 1
    assert claim_false_rejections >= 1
    assert candidate_escapes >= 1
    assert candidate_false_rejections >= 1
