"""Reading relations files: each line a claim or a refusal naming file, line and field."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.ledger.importer import (
    INVALID,
    NO_DOCUMENT,
    OWNED,
    QUOTE_NOT_FOUND,
    VOCABULARY,
    claims_of_file,
)
from groundswell.shared.ledger.models import entity_id
from groundswell.shared.ledger.vocab import load_vocabulary

DOC = (
    "1.1  Acme Ltd hereby acquires Beta Inc, effective 1 March 2026.\n"
    "2.3  Reuters reports that Beta Inc owns Gamma Holdings, though the\n"
    "     registry has not been updated.\n"
)
VOCAB = load_vocabulary(
    "entity_types: [Party, Instrument]\n"
    "relations:\n  ACQUIRED: {subject: [Party], object: [Party]}\n  OWNS:\n",
    "v.yaml",
)
FILE = "relations/contract.jsonl"


def line(**fields) -> dict:
    base = {
        "claim_id": "c1",
        "relation": "ACQUIRED",
        "subject_id": "Acme Ltd",
        "object_id": "Beta Inc",
        "asserter": "the agreement",
        "quote": "Acme Ltd hereby acquires Beta Inc",
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def read(*records, text=DOC, vocab=VOCAB, fixed=True):
    data = b"".join(
        (r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records
    )
    return claims_of_file(data, FILE, text, "contract", vocab=vocab, fixed_document=fixed)


def test_a_claim_is_located_with_its_entities_and_keeps_the_fields_not_read():
    claims, refusals = read(
        line(subject_type="Party", object_type="Party", region="p1", start=999, end=1000)
    )
    assert refusals == []
    (claim,) = claims
    assert claim.claim["document_id"] == "contract" and claim.claim["origin"] == f"{FILE}:1"
    assert claim.claim["modality"] == "assertion" and claim.claim["polarity"] == "affirmed"
    assert claim.claim["subject_entity_id"] == entity_id("Party", "Acme Ltd")
    assert claim.claim["extra"] == {"region": "p1", "start": 999, "end": 1000}  # never trusted
    (ev,) = claim.evidence
    assert (ev["start"], ev["end"], ev["tier"]) == (5, 38, "exact")
    assert ev["text"] == DOC[5:38] and ev["quote"] == "Acme Ltd hereby acquires Beta Inc"
    assert claim.claim["vocabulary"] == "v.yaml".removesuffix(".yaml")


def test_the_stored_text_is_the_source_and_the_quote_is_as_given():
    claims, _ = read(line(relation="OWNS", quote="beta inc OWNS gamma\nholdings"))
    ev = claims[0].evidence[0]
    assert ev["tier"] == "whitespace" and ev["text"] == "Beta Inc owns Gamma Holdings"
    assert ev["quote"] == "beta inc OWNS gamma\nholdings"


@pytest.mark.parametrize(
    ("record", "code", "field", "said"),
    [
        (line(quote="Acme purchased Beta"), QUOTE_NOT_FOUND, "quote", "quote not found"),
        (line(quote="   "), INVALID, "quote", "empty"),
        (line(quote=None), INVALID, "quote", "required"),
        (line(relation="BOUGHT"), VOCABULARY, "relation", "unknown relation 'BOUGHT'"),
        (line(subject_type="Instrument"), VOCABULARY, "subject_type", "takes subject of type"),
        (line(object_type="Martian"), VOCABULARY, "object_type", "unknown entity type"),
        (line(modality="probably"), INVALID, "modality", "'probably' is not one of"),
        (line(polarity="maybe"), INVALID, "polarity", "not one of affirmed, denied"),
        (line(claim_id=None), INVALID, "claim_id", "required"),
        (line(asserter=""), INVALID, "asserter", "non-empty"),
        (line(hedge_markers="reportedly"), INVALID, "hedge_markers", "a list of strings"),
        (line(confidence="high"), INVALID, "confidence", "a number"),
        (line(verified="false"), INVALID, "verified", "true, false or null"),
        (line(source_id="other"), INVALID, "source_id", "this file holds 'contract'"),
        # The ids a run's ledger unit derives from its receipts: never an import's.
        (line(claim_id="fact:" + "0" * 32), OWNED, "claim_id", "'fact:000"),
        (line(claim_id="quote:x"), OWNED, "claim_id", "'quote:x' is the pipeline's"),
        (line(n=2**60), INVALID, "n", "beyond 2^53"),
        (b"not json", INVALID, None, "invalid JSON"),
        (b"[1, 2]", INVALID, None, "a claim is a JSON object"),
        (b"\xff\xfe", INVALID, None, "not UTF-8"),
    ],
)
def test_a_bad_line_is_refused_naming_file_line_and_field_and_the_rest_go_on(
    record, code, field, said
):
    good = line(claim_id="good")
    claims, refusals = read(good, record, good | {"claim_id": "after"})
    assert [c.claim["id"] for c in claims] == ["good", "after"]
    (refusal,) = refusals
    assert (refusal.file, refusal.line, refusal.field, refusal.code) == (FILE, 2, field, code)
    assert said in refusal.message
    where = f"{FILE}:2:{field}: " if field else f"{FILE}:2: "
    assert str(refusal).startswith(where)


def test_every_problem_of_a_line_is_said_and_the_first_names_the_field():
    _, (refusal,) = read(line(modality="x", polarity="y"))
    assert refusal.field == "modality" and "'y' is not one of" in refusal.message


def test_without_its_document_every_claim_is_refused_and_without_a_vocabulary_any_relation_goes():
    _, refusals = read(line(), line(claim_id="c2"), text=None)
    assert [(r.line, r.code, r.field) for r in refusals] == [
        (1, NO_DOCUMENT, "source_id"),
        (2, NO_DOCUMENT, "source_id"),
    ]
    claims, refusals = read(line(relation="ANYTHING"), vocab=None)
    assert refusals == [] and claims[0].claim["vocabulary"] is None


def test_a_file_verified_against_one_text_takes_its_document_from_the_line():
    claims, refusals = read(line(source_id="agreement"), line(claim_id="c2"), fixed=False)
    assert refusals == []
    assert [c.claim["document_id"] for c in claims] == ["agreement", "contract"]


def test_blank_lines_are_skipped_and_line_numbers_stay_the_files():
    claims, refusals = read(b"", line(), b"   ", line(claim_id="c2", quote="nowhere"))
    assert len(claims) == 1 and refusals[0].line == 4
