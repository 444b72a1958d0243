"""A quote located in its document: exact, then case-insensitive, then whitespace-insensitive.

The order and the matching are xrad's (``locate`` in 0.4.0); nothing is fuzzy, because a near
miss is a paraphrase. One thing differs on purpose: xrad finds case-insensitive hits in the
lower-cased text and returns those offsets, which point at the wrong characters when lower
casing changes the text's length (``İ`` lower-cases to two characters). Here the lower-cased
text carries a map back to the original, so the offsets always delimit the matched source
text; a hit that begins or ends inside one source character's lower-case form is not a hit.

A document is prepared once (:class:`DocumentText`) and serves all of its quotes.
"""

from __future__ import annotations

import re
from array import array
from typing import NamedTuple

EXACT = "exact"
CASE = "case"
WHITESPACE = "whitespace"
TIERS = (EXACT, CASE, WHITESPACE)


class Located(NamedTuple):
    """Where a quote is: ``text[start:end]`` of the original document, and the pass that
    found it."""

    start: int
    end: int
    tier: str


class DocumentText:
    """One document's text, with its lower-cased form built on first need."""

    __slots__ = ("_lower", "_origin", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lower: str | None = None
        # lower-cased index -> original index; None when lower-casing keeps every length.
        self._origin: array | None = None

    def _lowered(self) -> str:
        if self._lower is None:
            low = self.text.lower()
            if len(low) != len(self.text):
                origin = array("l")
                for i, ch in enumerate(self.text):
                    origin.extend([i] * len(ch.lower()))
                self._origin = origin
            self._lower = low
        return self._lower

    def _to_original(self, start: int, end: int) -> tuple[int, int] | None:
        origin = self._origin
        if origin is None:
            return start, end
        n = len(origin)
        if start > 0 and origin[start] == origin[start - 1]:
            return None  # begins inside one character's lower-case form
        if end < n and origin[end] == origin[end - 1]:
            return None  # ends inside one
        return origin[start], (origin[end - 1] + 1)

    def locate(self, quote: str, hint: int = 0) -> Located | None:
        """The occurrence of ``quote`` nearest ``hint`` in the first pass that finds one."""
        quote = (quote or "").strip()
        text = self.text
        if not quote or not text:
            return None
        escaped = re.escape(quote)
        starts = [m.start() for m in re.finditer(escaped, text)]
        if starts:
            best = min(starts, key=lambda s: abs(s - hint))
            return Located(best, best + len(quote), EXACT)
        low = self._lowered()
        spans = []
        for m in re.finditer(re.escape(quote.lower()), low):
            span = self._to_original(m.start(), m.end())
            if span is not None:
                spans.append(span)
        if spans:
            start, end = min(spans, key=lambda s: abs(s[0] - hint))
            return Located(start, end, CASE)
        pattern = r"\s+".join(re.escape(w) for w in quote.split())
        hits = list(re.finditer(pattern, text, re.IGNORECASE))
        if hits:
            m = min(hits, key=lambda h: abs(h.start() - hint))
            return Located(m.start(), m.end(), WHITESPACE)
        return None


def locate(text: str, quote: str, hint: int = 0) -> Located | None:
    """Locate one quote in one text (prepare a :class:`DocumentText` for many)."""
    return DocumentText(text).locate(quote, hint)
