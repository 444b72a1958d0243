"""Widening a citation that stopped too early (issue 32 item 9; xrad's ``widened_quote``,
without its preference for a far sentence boundary over the near name).

A claim's quote should name whom the claim is about, and for a ``reported`` claim whom it
credits: "Beta Inc owns Gamma" cited for Reuters's report says nothing of Reuters. Given
the document, :func:`widen` finds the smallest span around the cited one, reaching at most
``budget`` characters beyond it on either side, that holds each missing name (found as a
quote is: any case, any spacing, whole words). It is a suggestion: offered in ``ledger
audit --emit --widen`` and in the answer of a recording, kept with the claim
(``extra.suggested_quote``), never applied to its evidence.
"""

from __future__ import annotations

import re
from typing import Any

from groundswell.shared.ledger.importer import REPORTED_MARK
from groundswell.shared.ledger.locate import DocumentText

BUDGET = 420  # characters beyond the cited span a widening may reach (xrad's)
SUGGESTION = "suggested_quote"  # the key of ``claims.extra`` a suggestion is kept under


def _occurrences(text: str, name: str, lo: int, hi: int) -> list[tuple[int, int]]:
    words = name.split()
    if not words:
        return []
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    return [m.span() for m in re.finditer(pattern, text[lo:hi], re.IGNORECASE)]


def widen(
    text: str, start: int, end: int, names: list[str], budget: int = BUDGET
) -> tuple[int, int] | None:
    """The smallest span holding ``text[start:end]`` and each of ``names`` (those inside
    already cost nothing), reaching at most ``budget`` characters beyond it; None when a name
    is not within reach."""
    lo, hi = max(0, start - budget), min(len(text), end + budget)
    new_start, new_end = start, end
    cited = DocumentText(text[start:end])
    for name in names:
        if not name.strip() or cited.locate(name) is not None:
            continue
        found = [(a + lo, b + lo) for a, b in _occurrences(text, name, lo, hi)]
        if not found:
            return None
        a, b = min(found, key=lambda s: max(0, start - s[0]) + max(0, s[1] - end))
        new_start, new_end = min(new_start, a), max(new_end, b)
    return new_start, new_end


def names_of(subject: str, modality: str, asserter: str) -> list[str]:
    """What a claim's quote should name: its subject, and a reported claim's asserter (the
    asserter up to ``" (rep."``, as the warning reads it)."""
    names = [subject]
    if modality == "reported":
        names.append(asserter.split(REPORTED_MARK, 1)[0].strip())
    return [n for n in names if n]


def suggestion(
    text: str, start: int, end: int, subject: str, modality: str, asserter: str
) -> dict[str, Any] | None:
    """A widened quote for a claim whose span does not name its subject or asserter: ``{start,
    end, text, names}`` (the names it adds); None when the span names them or they are out
    of reach."""
    names = names_of(subject, modality, asserter)
    cited = DocumentText(text[start:end])
    missing = [n for n in names if cited.locate(n) is None]
    if not missing:
        return None
    span = widen(text, start, end, missing)
    if span is None:
        return None
    a, b = span
    return {"start": a, "end": b, "text": text[a:b], "names": missing}
