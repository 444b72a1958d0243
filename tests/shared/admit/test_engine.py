"""Admission rules named in the issue, the public interface, packs shipped as data, and
re-derivation of receipts."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from groundswell.shared.admit import (
    ENGINE_REVISION,
    SPEC_VERSION,
    Admitter,
    PacketError,
    admit,
    admit_packet,
)
from groundswell.shared.admit.packs import BASE_DIGEST, BUILT_IN, built_in_pack, pack_digest
from groundswell.shared.admit.rederive import check_receipt

USD = {"fields": {"amount": {"type": "number", "unit": "USD", "multiple": True}}}
PLAIN = {"fields": {"n": {"type": "number", "multiple": True}}}


def _one(document: str, schema: dict, candidate: dict, policy: dict | None = None) -> dict:
    return admit(document, schema, [candidate], policy)["decisions"][0]


def _at(document: str, quote: str, value, field: str = "n", **extra) -> dict:
    """A candidate citing the first occurrence of ``quote`` by UTF-8 byte offsets."""
    raw = document.encode("utf-8")
    start = raw.index(quote.encode("utf-8"))
    cand = {
        "id": "c",
        "field": field,
        "value": value,
        "evidence": {"start": start, "end": start + len(quote.encode()), "text": quote},
    }
    cand.update(extra)
    return cand


@pytest.mark.parametrize(
    ("document", "quote", "value"),
    [
        ("The cap is 1,500 mg.", "500", "500"),  # never 500 out of 1,500
        ("Altimeter 29.97 inches.", "29.", "29"),  # a span cut after "29." never reads 29
        ("The limit is $252,0000 this year.", "252,0000", "252000"),  # no value at all
        ("The limit is $252,0000 this year.", "252,0000", "2520000"),
    ],
)
def test_collision_safety(document, quote, value):
    d = _one(document, PLAIN, _at(document, quote, value), {"reanchor": False})
    assert d["codes"] == ["VALUE_NOT_IN_EVIDENCE"]


def test_indian_grouping_and_scale_words():
    doc = "Rent was 2,00,000 rupees; the fund is 4 lakh and $1.25 billion."
    assert _one(doc, PLAIN, _at(doc, "2,00,000", "200000"))["outcome"] == "admitted"
    assert _one(doc, PLAIN, _at(doc, "4 lakh", "400000"))["outcome"] == "admitted"
    assert _one(doc, PLAIN, _at(doc, "4 lakh", "4"))["codes"] == ["SCALE_WORD"]
    usd = _at(doc, "$1.25 billion", "1250000000", field="amount", unit="USD")
    assert _one(doc, USD, usd)["outcome"] == "admitted"


def test_qualifiers_comparators_and_negation():
    doc = "You may contribute up to $7,000. It must not be more than $9,000."
    d = _one(doc, USD, _at(doc, "$7,000", "7000", field="amount", unit="USD"))
    assert d["codes"] == ["QUALIFIED_VALUE"]
    le = {"fields": {"amount": {"type": "number", "unit": "USD", "comparator": "le"}}}
    assert _one(doc, le, _at(doc, "$9,000", "9000", field="amount", unit="USD"))["codes"] == []


def test_units_per_units_and_first_suffix():
    schema = {"fields": {"dose": {"type": "number", "unit": "mg", "multiple": True}}}
    doc = "Give 10 mg/kg (maximum 500 mg). Take 25 or 50 mg."
    assert _one(doc, schema, _at(doc, "10", "10", field="dose", unit="mg"))["codes"] == [
        "UNIT_NOT_IN_EVIDENCE"
    ]
    assert _one(doc, schema, _at(doc, "25", "25", field="dose", unit="mg"))["outcome"] == (
        "admitted"
    )


def test_a_span_without_the_sign_is_read_on_its_own():
    # "26\t-27": cited without its sign, 27 follows "26" and a dash (a range); cited with it,
    # -27 is no range end. The first reading must not leak into the second.
    doc = "Equity\t26\t-27\nCash flows"
    unsigned = _at(doc, "27", "27")
    signed = _at(doc, "-27", "-27")
    receipt = admit(doc, PLAIN, [unsigned, signed])
    by_value = {d["value"]: d["codes"] for d in receipt["decisions"]}
    assert by_value == {"27": ["QUALIFIED_VALUE"], "-27": []}


def test_a_malformed_candidate_is_a_decision_not_an_exception():
    receipt = admit("x 5", PLAIN, [{"field": 5}, "junk", {"field": "n", "value": 1.5}])
    assert [d["codes"] for d in receipt["decisions"]] == [["CANDIDATE_INVALID"]] * 3
    assert receipt["summary"] == {"admitted": 0, "needs_verification": 0, "rejected": 3}


@pytest.mark.parametrize(
    ("kwargs", "member"),
    [
        ({"document": "Cafe\u0301"}, "Normalization Form C"),
        ({"schema": {"fields": {"Bad-Name": {}}}}, "field name"),
        ({"policy": {"unit_window": -1}}, "unit_window"),
        ({"references": [{"id": " ", "text": "x"}]}, "references[0].id"),
    ],
)
def test_an_invalid_packet_is_refused_with_a_message_naming_the_member(kwargs, member):
    args = {"document": "x", "schema": PLAIN, "policy": None} | kwargs
    with pytest.raises(PacketError, match=member.replace("[", r"\[").replace("]", r"\]")):
        admit(
            args["document"],
            args["schema"],
            [],
            args["policy"],
            references=kwargs.get("references"),
        )
    assert issubclass(PacketError, ValueError)


def test_admitter_serves_many_calls_with_the_same_receipts():
    doc = "In 2024 revenue was $1,250 and costs were $900."
    cands = [_at(doc, "$1,250", "1250", field="amount", unit="USD")]
    admitter = Admitter(doc, USD, document_id="d1")
    first = admitter.admit(cands)
    assert admitter.admit(cands) == first == admit(doc, USD, cands, document_id="d1")
    assert first["groundgate"] == SPEC_VERSION == "0.11"
    assert ENGINE_REVISION


def test_admit_packet_reads_a_vector_shaped_packet():
    packet = {
        "document": "Fee: $40.",
        "schema": USD,
        "policy": None,
        "candidates": [
            {"field": "amount", "value": "40", "unit": "USD", "evidence": {"text": "$40"}}
        ],
        "expected": {"ignored": True},
    }
    assert admit_packet(packet)["decisions"][0]["outcome"] == "admitted"
    with pytest.raises(PacketError):
        admit_packet({"document": "x"})


def test_packs_ship_as_package_data_with_the_pinned_digests():
    base = resources.files("groundswell.shared.admit").joinpath("packs", "en", "1.1.0.json")
    data = json.loads(base.read_text(encoding="utf-8"))
    assert data["id"] == "en"
    assert built_in_pack("en").digest == BASE_DIGEST
    for pid, (_, kind, digest) in BUILT_IN.items():
        pack = built_in_pack(pid)
        assert pack.digest == digest == pack_digest(kind, pack.data)
    notice = resources.files("groundswell.shared.admit").joinpath("packs", "NOTICE.md").read_text()
    assert "Apache-2.0" in notice


def test_check_receipt_finds_each_kind_of_change():
    doc = "In 2024 revenue was $1,250 and costs were $900."
    cands = [
        _at(doc, "$1,250", "1250", field="amount", unit="USD"),
        _at(doc, "$900", "900", field="amount", unit="USD"),
    ]
    receipt = admit(doc, USD, cands)
    assert check_receipt(receipt, doc, USD, cands) == []
    assert "document differs" in check_receipt(receipt, doc.replace("900", "901"), USD, cands)
    other_schema = {"fields": {"amount": {"type": "number", "unit": "USD"}}}
    assert "schema_sha256 differs" in check_receipt(receipt, doc, other_schema, cands)
    assert "policy_sha256 differs" in check_receipt(receipt, doc, USD, cands, {"reanchor": False})
    changed = [dict(cands[0], value="1251"), cands[1]]
    assert any("decision" in p for p in check_receipt(receipt, doc, USD, changed))
    tampered = json.loads(json.dumps(receipt))
    tampered["decisions"][0]["outcome"] = "rejected"
    problems = check_receipt(tampered, doc, USD, cands)
    assert "receipt_sha256 does not match the receipt's own content" in problems
    assert any("differs in outcome" in p for p in problems)
    forged = dict(receipt, groundgate="0.10")
    assert "spec version" in check_receipt(forged, doc, USD, cands)[0]


EDGE = {
    "fields": {
        "pct": {"type": "number", "unit": "%", "multiple": True},
        "days": {"type": "integer", "unit": "days", "multiple": True},
        "chf": {"type": "number", "unit": "CHF", "multiple": True},
        "n": {"type": "number", "multiple": True},
    },
    "units": {"CHF": {"prefix": [], "suffix": []}},
}


@pytest.mark.parametrize(
    ("document", "field", "value", "role", "quote", "passed"),
    [
        # Issue 14: a form at the end of the item is whole, also inside a longer word...
        ("The percentage was 5%.", "pct", "5", "unit", "percent", True),
        ("Rent for 7 days.", "days", "7", "unit", "day", True),
        ("Revenue was 5 in Swiss francs.", "chf", "5", "unit", "Swiss franc", True),
        ("Revenue was 5 in CHFs.", "chf", "5", "unit", "CHF", True),
        (
            "In millions of Swiss francs: 5.",
            "chf",
            "5000000",
            "scale",
            "millions of Swiss franc",
            True,
        ),
        # ...but a letter before the item still breaks it.
        ("Holidays: 7 days.", "days", "7", "unit", "day", False),
        ("Revenue was 5 in xCHF.", "chf", "5", "unit", "CHF", False),
        ("Figures within thousands: 5.", "n", "5000", "scale", "in thousands", False),
        ("Figures (in thousandsx): 5.", "n", "5000", "scale", "in thousands", True),
        # A quote that overlaps the value's end is the first one after the value.
        ("Rates\t33.5%\t22.6%\n", "pct", "22.6", "unit", "6%", True),
    ],
)
def test_role_item_quotes_at_word_edges(document, field, value, role, quote, passed):
    # As groundgate 0.11.0 reads them (the differential test compares whole receipts).
    number = value if role == "unit" else document.split()[-1].strip(".")
    unit = EDGE["fields"][field].get("unit")
    cand = _at(document, number, value, field=field, **({"unit": unit} if unit else {}))
    cand["evidence"] = [cand["evidence"], {"role": role, "text": quote}]
    got = _one(document, EDGE, cand)
    part = next(p for p in got["parts"] if p["role"] == role)
    assert part["passed"] is passed, got
    assert (f"{role.upper()}_CITATION_INVALID" in got["codes"]) is not passed


@pytest.mark.parametrize(
    ("document", "unit", "missing"),
    [
        # A unit form after the value on its row is no unit place of it (#249).
        ("\tShares\tPrice\nGranted\t147,800\t$7.06\n", "USD", True),
        ("\tShares\tPrice\nGranted\t147,800\t€7.06\n", "EUR", True),
        ("Granted 147,800 shares at $7.06 each.", "USD", True),
        ("Granted\t147,800\tof which granted to officers 7.06%\n", "%", True),
        # A suffix within the unit window after it is next to it (§3.1).
        ("Granted\t147,800\t7.06%\n", "%", False),
        # A form before it at a unit place, or next to it, makes the unit present.
        ("(in USD)\n\n\tShares\nGranted\t147,800\n", "USD", False),
        ("Granted\t$\t147,800\n", "USD", False),
        ("Granted\t$ 147,800\t$7.06\n", "USD", False),
    ],
)
def test_a_unit_form_after_the_value_is_no_unit_place(document, unit, missing):
    # As groundgate 0.11.0 reads them (the differential test compares whole receipts).
    schema = {"fields": {"g": {"type": "number", "unit": unit, "aliases": ["Granted"]}}}
    cand = _at(document, "147,800", "147800", field="g", unit=unit)
    cand["evidence"] = [cand["evidence"], {"role": "field", "text": "Granted"}]
    got = _one(document, schema, cand)
    assert (got["missing"] == ["unit"]) is missing, got
    assert got["outcome"] == ("needs_verification" if missing else "admitted"), got
    assert ("PART_MISSING" in got["codes"]) is missing


def test_the_digit_run_index_is_every_run_by_whole_first_and_last_digits():
    """Built by distinct runs, it holds what one pass over every run gives, each list sorted."""
    import re

    from groundswell.shared.admit import occurrences
    from groundswell.shared.admit.index import TextIndex
    from groundswell.shared.admit.packet import parse_schema

    text = "In 2024 sales were $1,234 (2023: 1,200); 12 of 120 units, 2024 again, ¾ 7 07 2024."
    expected: dict[str, list[int]] = {}
    for m in re.finditer("[0-9]+", text):
        r, (a, b) = m.group(), m.span()
        expected.setdefault("X" + r, []).append(a)
        for k in range(1, min(3, len(r)) + 1):
            expected.setdefault("S" + r[:k], []).append(a)
            expected.setdefault("E" + r[-k:], []).append(b)
    got = occurrences._run_index(TextIndex(text, parse_schema({"fields": {}}).vocabulary))
    assert got == expected
    assert got["S2"] == sorted(got["S2"]) and len(got["S2"]) == 6
