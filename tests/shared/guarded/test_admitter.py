"""Each guard on a small table: what default (groundgate's admission) decides, and what
guarded adds, takes off, and writes into the receipt."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from groundswell.shared.admit import Admitter, admitter_for
from groundswell.shared.guarded import DEFAULT_GUARD, GUARD_REVISION, GuardSettings
from groundswell.shared.guarded.admitter import GuardedAdmitter
from groundswell.shared.policies import resolve_policy

DOC = (
    "Revenue by region\n"
    "\t2019\t2018\n"
    "UK\t1,245\t1,190\n"
    "Ireland\t(310)\t520\n"
    "Margin\t12.5%\t11.0%\n"
    "\n"
    "Amounts above are in thousands.\n"
)
SCHEMA = {
    "fields": {
        "uk_2019": {"type": "number", "aliases": ["UK", "2019"]},
        "uk": {"type": "number", "aliases": ["UK"], "keys": ["2019", "2018"]},
        "ireland_2019": {"type": "number", "aliases": ["Ireland", "2019"]},
        "uk_only": {"type": "number", "aliases": ["UK"]},
    }
}
GUARDED = resolve_policy("guarded")


def at(quote: str, nth: int = 0) -> dict[str, Any]:
    """An evidence item with the UTF-8 offsets of ``quote`` in DOC."""
    i = -1
    for _ in range(nth + 1):
        i = DOC.index(quote, i + 1)
    start = len(DOC[:i].encode())
    return {"start": start, "end": start + len(quote.encode()), "text": quote}


def cand(value: str, quote: str, field: str = "uk_2019", cid: str = "a", **more: Any) -> dict:
    return {"id": cid, "field": field, "value": value, "evidence": [at(quote)], **more}


def decide(cands: list[dict], guard: GuardSettings | None = DEFAULT_GUARD) -> dict[str, dict]:
    admitter = Admitter(DOC, SCHEMA) if guard is None else GuardedAdmitter(DOC, SCHEMA, guard=guard)
    receipt = admitter.admit(cands)
    return {d["candidate_id"]: d for d in receipt["decisions"]}


def outcome(cands: list[dict], guard: GuardSettings | None = DEFAULT_GUARD) -> tuple[str, list]:
    (d,) = decide(cands, guard).values()
    return d["outcome"], d["codes"]


# What each guard points at: the value's number, or the scale statement in force.
WHERE = {
    "column": "1,190",
    "scale": "in thousands",
    "header": "2019",
    "row": "520",
    "sign": "310",
    "unit_kind": "12.5",
}


@pytest.mark.parametrize(
    ("name", "candidate", "default", "guarded"),
    [
        # the neighbouring column's cell for the field named "UK" and "2019"
        ("column", cand("1190000", "1,190"), "needs_verification", "VALUE_NOT_IN_COLUMN"),
        # the number as written, though the document states "in thousands"
        ("scale", cand("1245", "1,245"), "admitted", "SCALE_NOT_APPLIED"),
        # a year of the column header given as the value
        ("header", cand("2019", "2019", "uk", key="2019"), "admitted", "VALUE_IS_HEADER"),
        # another row's cell under the field's row name
        ("row", cand("520000", "520"), "needs_verification", "VALUE_NOT_IN_ROW"),
        # (310) given as positive
        ("sign", cand("310000", "310", "ireland_2019"), "needs_verification", "SIGN_BRACKETED"),
        # a percentage for a field whose names say nothing of percent
        ("unit_kind", cand("12.5", "12.5"), "admitted", "UNIT_KIND_MISMATCH"),
    ],
)
def test_each_guard_flags_what_the_table_contradicts(name, candidate, default, guarded):
    assert outcome([candidate], None)[0] == default
    got, codes = outcome([candidate])
    assert got == "needs_verification" and guarded in codes, codes
    # the finding names its guard, says why, and points at the document
    (d,) = decide([candidate]).values()
    found = [f for f in d["guard"] if f["code"] == guarded]
    assert found and found[0]["check"] == name and found[0]["detail"]
    # the offsets are the document's UTF-8 bytes of what the guard read
    start, end = found[0]["at"]["start"], found[0]["at"]["end"]
    read = DOC.encode()[start:end].decode()
    assert read == WHERE[name], (name, read)
    # with the guard off, its code never appears
    off = replace(DEFAULT_GUARD, **{name: "off"})
    assert guarded not in outcome([candidate], off)[1]


@pytest.mark.parametrize(
    ("candidate", "relief", "taken"),
    [
        (cand("1245000", "1,245"), "SCALE_IN_FORCE", "PART_MISSING"),
        (cand("-310000", "310", "ireland_2019"), "SIGN_IN_BRACKETS", "PART_MISSING"),
        (
            cand("1245000", "UK\t1,245\t1,190", "uk", key="2019"),
            "KEY_AT_COLUMN",
            "KEY_NOT_AT_VALUE",
        ),
    ],
)
def test_reliefs_admit_right_values_the_document_settles(candidate, relief, taken):
    before, codes = outcome([candidate], None)
    assert before == "needs_verification" and taken in codes
    after, codes = outcome([candidate])
    assert after == "admitted" and relief in codes and taken not in codes
    (d,) = decide([candidate]).values()
    assert any(f["code"] == relief and taken in f["detail"] for f in d["guard"])
    settings = {
        "SCALE_IN_FORCE": "relieve_scale",
        "SIGN_IN_BRACKETS": "relieve_sign",
        "KEY_AT_COLUMN": "relieve_key",
    }
    assert outcome([candidate], replace(DEFAULT_GUARD, **{settings[relief]: False}))[0] == before


def test_a_whole_row_without_a_column_name_is_ambiguous():
    got, codes = outcome([cand("1245000", "UK\t1,245\t1,190", "uk_only")])
    assert got == "needs_verification" and "CELL_AMBIGUOUS" in codes
    # the cell alone, or a column the field names, is not ambiguous
    assert "CELL_AMBIGUOUS" not in outcome([cand("1245000", "UK\t1,245\t1,190")])[1]


def test_competing_proposals_are_resolved_by_what_the_guards_found():
    right = cand("1245000", "1,245", cid="right")
    wrong = cand("1190000", "1,190", cid="wrong")
    plain = decide([right, wrong], None)
    assert {d["outcome"] for d in plain.values()} == {"needs_verification"}
    got = decide([wrong, right])
    assert got["right"]["outcome"] == "admitted"
    assert "CONFLICT_RESOLVED" in got["right"]["codes"]
    assert "CONFLICTING_CANDIDATES" not in got["right"]["codes"]
    assert got["wrong"]["outcome"] == "needs_verification"
    assert {"CONFLICTING_CANDIDATES", "VALUE_NOT_IN_COLUMN"} <= set(got["wrong"]["codes"])
    # two proposals nothing contradicts stay in review together (each cell quoted alone is
    # not ambiguous, and not contradicted either: groundgate's conflict stands)
    first = cand("1245000", "1,245", "uk_only", cid="first")
    second = cand("1190000", "1,190", "uk_only", cid="second")
    twice = decide([first, second])
    for d in twice.values():
        assert d["outcome"] == "needs_verification"
        assert "CONFLICTING_CANDIDATES" in d["codes"] and "CELL_AMBIGUOUS" not in d["codes"]
        assert "CONFLICT_RESOLVED" not in d["codes"]
    off = decide([wrong, right], replace(DEFAULT_GUARD, resolve_conflicts=False))
    assert off["right"]["outcome"] == "needs_verification"


def test_the_receipt_records_the_guard_and_re_derives():
    cands = [cand("1190000", "1,190"), cand("1245000", "1,245", cid="b")]
    admitter = admitter_for(GUARDED, DOC, SCHEMA)
    assert isinstance(admitter, GuardedAdmitter)
    receipt = admitter.admit(cands)
    guard = receipt["guard"]
    assert guard["policy"] == "guarded" and guard["revision"] == GUARD_REVISION
    assert guard["settings"] == DEFAULT_GUARD.as_dict()
    assert list(receipt).index("guard") == list(receipt).index("policy_sha256") + 1
    assert all("guard" in d for d in receipt["decisions"])
    # the same inputs give the same bytes
    assert admitter_for(GUARDED, DOC, SCHEMA).admit(cands) == receipt


def test_default_is_untouched():
    cands = [cand("1190000", "1,190"), cand("1245", "1,245", cid="b")]
    default = admitter_for(resolve_policy("default"), DOC, SCHEMA)
    assert type(default) is Admitter
    receipt = default.admit(cands)
    assert "guard" not in receipt and all("guard" not in d for d in receipt["decisions"])
    assert receipt == Admitter(DOC, SCHEMA).admit(cands)
    assert admitter_for(None, DOC, SCHEMA).admit(cands) == receipt


def test_settings_are_checked_by_name():
    with pytest.raises(ValueError, match=r"guard\.column"):
        GuardSettings.from_dict({"column": "reject-ish"})
    with pytest.raises(ValueError, match="unknown guard settings: colour"):
        GuardSettings.from_dict({"colour": "flag"})
    with pytest.raises(ValueError, match="caption_lines"):
        GuardSettings.from_dict({"caption_lines": True})
    assert GuardSettings.from_dict(DEFAULT_GUARD.as_dict()) == DEFAULT_GUARD
    assert GuardSettings.from_dict({"sign": "off"}).on("sign") is False
