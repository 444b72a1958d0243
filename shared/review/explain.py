"""What each admission code means, in words for the person answering a review task.

The guarded policy's codes keep their one meaning (``shared/admit/guard_codes.py``, the words
``groundswell policy explain guarded`` prints); groundgate's codes (SPEC §3) are described
here, in this project's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundswell.shared.admit.guard_codes import GUARD_CODES

ADMISSION_CODES: dict[str, str] = {
    # Flags: the value goes to a person.
    "NON_VERBATIM_EVIDENCE": "the quotation of the evidence is not exactly the text found at "
    "its offsets",
    "QUALIFIED_VALUE": "a qualifier such as 'about', 'over' or 'up to' stands at the value, "
    "and the field does not allow one",
    "SCALE_WORD": "a scale word ('thousand', 'million', …) follows the number, but the value "
    "is the number as written",
    "PART_MISSING": "the value has a sign, scale or unit that none of the cited items shows",
    "SIGN_CITATION_INVALID": "the item cited for the sign does not make the number negative",
    "SCALE_CITATION_INVALID": "the item cited for the scale does not scale this number",
    "UNIT_CITATION_INVALID": "the item cited for the unit does not give the field's unit at "
    "the number",
    "FIELD_CITATION_INVALID": "the item cited for the field does not name the field near the value",
    "KEY_NOT_AT_VALUE": "the key the document mentions at the value is another one, or there "
    "is none",
    "KEY_CITATION_INVALID": "the item cited for the key does not mention the candidate's key",
    "EVIDENCE_QUOTED": "the only support is a quotation from outside the document, which the "
    "policy sends to review",
    "EVIDENCE_STATED": "the only support is what the extractor states it knows, which the "
    "policy sends to review",
    "LOW_CONFIDENCE": "the extractor's confidence is under the policy's minimum",
    "CONFLICTING_CANDIDATES": "another candidate gives this field and key a different value",
    "RELATION_FAILED": "a relation the schema declares (a total and its parts, …) does not "
    "hold with this value",
    "MODEL_DOUBT": "a recorded judgment of the policy's model judge doubts the value",
    # Information: the decision stands; this says how it was reached.
    "EVIDENCE_REANCHORED": "the cited offsets did not hold the value; its only other "
    "occurrence in the document did, and the evidence was moved there",
    "VALUE_DERIVED": "the value is the cited number after a sign or scale the evidence gives",
    "KEY_CITED": "the key was found through the item the candidate cites for it",
    "ADMITTED_BY_POLICY": "the policy admits values with this support without review",
    "MODEL_CLEARED": "a recorded judgment of the policy's model judge cleared a doubt",
    # Rejections: the value was refused.
    "CANDIDATE_INVALID": "the candidate is not well formed",
    "FIELD_UNKNOWN": "the schema has no such field",
    "NULL_STRING_LITERAL": "the value is a word for nothing ('null', 'N/A', …) rather than a value",
    "TYPE_INVALID": "the value cannot be read as the field's type",
    "RANGE_INVALID": "the value lies outside the range the schema allows",
    "UNIT_INVALID": "the unit is not one of the field's units",
    "KEY_INVALID": "the key is missing, or not one of the field's keys",
    "NO_EVIDENCE": "nothing supports the value: no span in the document, no outside source",
    "SPAN_INVALID": "the evidence offsets are outside the text or cut a character in two",
    "QUOTE_NOT_FOUND": "the quoted text occurs nowhere in the document",
    "VALUE_NOT_IN_EVIDENCE": "the cited text does not hold the value",
    "UNIT_NOT_IN_EVIDENCE": "the cited text holds the number, but not in the field's unit",
    "SOURCE_REJECTED": "only outside evidence supports the value, and the policy refuses it",
    # Coverage.
    "REQUIRED_FIELD_MISSING": "the schema requires the field and no candidate gave a value "
    "that passed: what is the value, or is it not in the document?",
}


# Every code a decision or a coverage finding can carry: the specification's and the guards'.
KNOWN_CODES: tuple[str, ...] = tuple(sorted({*ADMISSION_CODES, *GUARD_CODES}))


def explain_code(code: str) -> str:
    """The meaning of an admission code (the guarded policy's or groundgate's), in words."""
    return GUARD_CODES.get(code) or ADMISSION_CODES.get(code) or "no description of this code"


COMPARATOR_WORDS = {
    "eq": "the value exactly as stated",
    "gt": "a value the document says is exceeded ('over', 'more than')",
    "ge": "a value the document gives as a floor ('at least', 'or more')",
    "lt": "a value the document says is not reached ('under', 'less than')",
    "le": "a value the document gives as a ceiling ('up to', 'at most')",
    "approx": "an approximate value ('about', 'approximately')",
    "range": "a range ('6% to 7%', 'between 18 and 65')",
}


def field_meaning(fields: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """What the schema says of a field, for the person answering its task: its description,
    type, unit, bounds, the kind of value it takes, and its keys. ``fields`` is the parsed
    schema's fields as its digest holds them (template packs merged in); None for a field
    the schema lacks."""
    spec = fields.get(name)
    if not isinstance(spec, Mapping):
        return None
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and high is not None:
        bounds = f"from {low} to {high}"
    elif low is not None:
        bounds = f"at least {low}"
    elif high is not None:
        bounds = f"at most {high}"
    else:
        bounds = None
    comparator = spec.get("comparator") or "eq"
    return {
        "name": name,
        "description": spec.get("description"),
        "type": spec.get("type") or "number",
        "unit": spec.get("unit"),
        "bounds": bounds,
        "comparator": comparator,
        "takes": COMPARATOR_WORDS.get(comparator, comparator),
        "required": bool(spec.get("required")),
        "multiple": bool(spec.get("multiple")),
        "keys": list(spec.get("keys") or []) or None,
        "aliases": list(spec.get("aliases") or []) or None,
    }
