"""The ``guarded`` policy's settings: which guards run, how each acts, what they read.

A guard either flags (review) or is off; a relief either runs or not. The settings and the
guard revision make the ``guard`` member of every receipt the policy writes, so a receipt
re-derives with ``check-receipt`` from its own inputs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# Bumped whenever a change to the guards can move a decision or a receipt byte (the admission
# fingerprint covers it, so a run recomputes guarded receipts made by an older revision).
# 2: only numbers of the value's own kind (year, day of a date, percentage, amount, plain
#    number) make a row or sentence ambiguous.
# 3: the guards contradict, they do not guess (issue 29): a cell quoted alone or bound by
#    offsets is never ambiguous (only a quoted row's or sentence's other numbers are); a year
#    is a header's only where the offsets point at the header, or no cell holds the number; a
#    scale statement over one column scales that column (not its neighbours, not the
#    document); the day of a date in a column header ("April 26, 2019") is not a value.
# 4: OTHER_PROPOSAL_AT_FIELD also reads a proposal groundgate refused before its value was
#    read: the cell its value item cites (offsets, or a one-cell quote found once).
# 5: a conflict is settled for the one proposal standing only when each other one is shown not
#    to be where the field is (its column, row, the header, its sentence's quantity, a number
#    of another kind), or misread the same cell: a bracketed cell given positive elsewhere in
#    the row may still be the field's; the day of a date ("as of September 29, 2019") is no
#    quantity of a named field or one with a unit (UNIT_KIND_MISMATCH), nor is a number
#    without a % for a percentage field whose row marks another cell %; a month is a whole
#    word before the day;
#    a column header keeps its footnote marks ("Adjustments (1)") and is still the header.
# 6: a date written day first, "31 December 2019", is a date: its day neither keeps a column
#    header from being one nor is a quantity ("day" kind).
# 7: SIGN_BRACKETED only where the bracketed cell is the candidate's: a value quoted without
#    offsets whose number another table writes unbracketed is not contradicted by the bracket
#    of the cell groundgate read (found on the fourth real hold-out, NASA's net cost).
GUARD_REVISION = "groundswell-guard/7"

CHECKS = ("column", "row", "header", "scale", "sign", "unit_kind", "ambiguous", "competing")
RELIEFS = ("relieve_scale", "relieve_key", "relieve_sign", "resolve_conflicts")
# Row and field names whose numbers a table's "in thousands" does not scale (whole words).
# Share counts are not among them: "(in thousands, except per share data)" scales them.
UNSCALED_WORDS = (
    "per share",
    "per unit",
    "per diluted",
    "per basic",
    "%",
    "percent",
    "ratio",
    "employees",
    "headcount",
    "days",
    "years",
    "months",
    "weeks",
    "hours",
    "basis points",
)


class GuardSettingsError(ValueError):
    """A guard setting of the wrong type or value; the message names the setting."""


@dataclass(frozen=True)
class GuardSettings:
    # contradiction checks: "flag" (review) or "off"
    column: str = "flag"
    row: str = "flag"
    header: str = "flag"
    scale: str = "flag"
    sign: str = "flag"
    unit_kind: str = "flag"
    ambiguous: str = "flag"
    competing: str = "flag"
    # reliefs of groundgate flags the document settles
    relieve_scale: bool = True
    relieve_key: bool = True
    relieve_sign: bool = True
    resolve_conflicts: bool = True
    # where a scale statement is in force: the table's own header lines always; the lines
    # just above the table (a caption) up to this many; and a document that states one
    # scale only (every statement the same power) when ``document_scale`` is on
    caption_lines: int = 3
    document_scale: bool = True
    unscaled_words: tuple[str, ...] = UNSCALED_WORDS

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["unscaled_words"] = list(self.unscaled_words)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> GuardSettings:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise GuardSettingsError("guard must be an object of guard settings")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise GuardSettingsError(
                f"unknown guard settings: {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name in CHECKS:
                if value not in ("flag", "off"):
                    raise GuardSettingsError(f"guard.{name} is 'flag' or 'off', not {value!r}")
            elif name in RELIEFS or name == "document_scale":
                if not isinstance(value, bool):
                    raise GuardSettingsError(f"guard.{name} is true or false, not {value!r}")
            elif name == "caption_lines":
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 20:
                    raise GuardSettingsError(
                        f"guard.caption_lines is an integer from 0 to 20, not {value!r}"
                    )
            elif name == "unscaled_words":
                if not isinstance(value, list) or not all(
                    isinstance(w, str) and w.strip() for w in value
                ):
                    raise GuardSettingsError("guard.unscaled_words is a list of non-blank strings")
                value = tuple(value)
            values[name] = value
        return cls(**values)

    def on(self, check: str) -> bool:
        return getattr(self, check) == "flag"


DEFAULT_GUARD = GuardSettings()
