"""The codes the ``guarded`` admission policy adds to groundgate's (a leaf module, kept here
beside the engine that ranks every code and sends flags to review; ``guarded/`` builds on the
engine and raises them, and admit/ imports nothing of it).

Flags send a value to review, like groundgate's flags; relief codes are information: each
names a groundgate flag that a guard settled from the document and took off (the decision
keeps every other code). Rejections end a decision like groundgate's rejecting steps.
"""

from __future__ import annotations

# code -> what it means (printed by ``groundswell policy explain guarded``)
GUARD_FLAGS: dict[str, str] = {
    "VALUE_NOT_IN_COLUMN": "the value's table cell stands under another column (period) than "
    "the candidate's key or the field's column name",
    "VALUE_NOT_IN_ROW": "the value's table cell stands in a row whose label is not a name of "
    "the field, while another row of the table carries one",
    "VALUE_IS_HEADER": "the value is a year of the table's column header, not a cell",
    "SCALE_NOT_APPLIED": "the value is the number as written, but a scale statement in force "
    "at its table (such as 'in thousands') scales it",
    "SIGN_BRACKETED": "the value is positive, but the table writes the number in brackets "
    "(a negative amount by the convention of financial tables)",
    "UNIT_KIND_MISMATCH": "a percentage given for an amount, or an amount (or a number its "
    "row does not mark %, beside one it does) for a percentage, or the day of a date for a "
    "quantity",
    "CELL_AMBIGUOUS": "the evidence quotes a whole row or sentence holding other numbers of "
    "the same kind, and nothing in the candidate names which one is the value",
    "VALUE_NOT_AT_FIELD": "the quoted sentence names the field at another of its numbers, "
    "not at the value",
    "OTHER_PROPOSAL_AT_FIELD": "another proposal for the single-valued field stands where the "
    "document names the field (its row and key's column, or its sentence); this value does not",
}
GUARD_INFO: dict[str, str] = {
    "SCALE_IN_FORCE": "relief of PART_MISSING (scale) or SCALE_CITATION_INVALID: the scale "
    "statement in force at the value's table gives exactly the value",
    "KEY_AT_COLUMN": "relief of KEY_NOT_AT_VALUE: the candidate's key is the column header "
    "over the value's cell",
    "SIGN_IN_BRACKETS": "relief of PART_MISSING (sign): the table writes the number in "
    "brackets, a negative amount",
    "CONFLICT_RESOLVED": "relief of CONFLICTING_CANDIDATES: every other proposal for the "
    "field and key was contradicted by a guard; this one was not",
}
GUARD_REJECTS: dict[str, str] = {}
GUARD_CODES: dict[str, str] = {**GUARD_FLAGS, **GUARD_INFO, **GUARD_REJECTS}
