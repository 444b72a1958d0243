"""Lexical boundaries: a quotation may not start or end inside a word, a hyphenated term, a
signed figure, a decimal, a grouped number or a time.

Edges are judged on the *boundary view*: the tier-0 projection (markers separated) with HTML
entities decoded, so ``&minus;5`` reads as a signed figure, while every other character stays
as written. Invisible format characters (soft hyphen, zero-width space, BOM) are skipped when
looking for the characters on either side of an edge. The document's ends are always
boundaries. The rules are heuristics for space-separated scripts.
"""

from __future__ import annotations

import unicodedata

from groundswell.shared.text.offsets import IdentityMap
from groundswell.shared.text.projections import Projection
from groundswell.shared.text.unicode import is_unsegmented

JOINERS = frozenset("-\u2010\u2011\u2012/_")
SIGNS = frozenset("+-\u2212\u2013\u2014\u2012\uff0d\ufe63")
SEPARATORS = frozenset(".,:\u066b\u066c")
GROUPING_SPACES = frozenset(" \u00a0\u202f\u2009\u2007")


def _is_cf(ch: str) -> bool:
    return unicodedata.category(ch) == "Cf"


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M"


def _digit(ch: str) -> bool:
    return ch.isdigit()


class Boundaries:
    """Checks the edges of original-text spans against the rules of the module docstring."""

    def __init__(self, view: Projection) -> None:
        self.text = view.text
        self.map = view.map
        # Without entities or markers the view is the original text itself.
        self.identity = isinstance(view.map, IdentityMap)

    def span_ok(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` of the original text has a lexical boundary at both edges."""
        return self.edge_ok(start) and self.edge_ok(end)

    def edge_ok(self, offset: int) -> bool:
        if self.identity:
            return not inside_unit(self.text, offset)
        omap = self.map
        j = omap.first_at_or_after(offset)
        if j > 0 and omap.end(j - 1) > offset:
            return False  # strictly inside a decoded entity
        return not inside_unit(self.text, j)


def _left(text: str, i: int) -> int:
    """Index of the nearest visible character at or before ``i`` (-1 if none)."""
    while i >= 0 and _is_cf(text[i]):
        i -= 1
    return i


def _right(text: str, i: int) -> int:
    """Index of the nearest visible character at or after ``i`` (``len`` if none)."""
    n = len(text)
    while i < n and _is_cf(text[i]):
        i += 1
    return i


_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ASCII_PLAIN = frozenset(" \t\n\r!\"#$%&'()*;<=>?@[\\]^`{|}~")


def inside_unit(text: str, j: int) -> bool:
    """Whether an edge before character ``j`` of ``text`` falls inside a lexical unit."""
    n = len(text)
    if 0 < j < n:
        # Fast paths for the common ASCII cases, equal to the full rules below.
        lc = text[j - 1]
        rc = text[j]
        if lc in _ASCII_PLAIN and rc in _ASCII_PLAIN:
            return False
        if lc in _ASCII_ALNUM and rc in _ASCII_ALNUM:
            if lc.isdigit() or rc.isdigit():
                return True
            if lc.islower() and rc.isupper():
                return False
            if lc.isupper() and rc.isupper():
                after = _right(text, j + 1)
                return not (after < n and text[after].islower())
            return True
    li = _left(text, j - 1)
    ri = _right(text, j)
    if li < 0 or ri >= n:
        return False
    lc = text[li]
    rc = text[ri]
    l_alnum = lc.isalnum()
    r_alnum = rc.isalnum()
    if l_alnum and r_alnum:
        if _digit(lc) or _digit(rc):
            return True
        if is_unsegmented(lc) or is_unsegmented(rc):
            return False
        if lc.islower() and rc.isupper():
            return False  # camel-case join: "ServicesAny"
        if lc.isupper() and rc.isupper():
            after = _right(text, ri + 1)
            if after < n and text[after].islower():
                return False  # capitals join: "UGCStands"
        return True
    if (l_alnum and _is_mark(rc)) or (r_alnum and _is_mark(lc)):
        return True
    if l_alnum and rc in JOINERS:
        after = _right(text, ri + 1)
        if after < n and text[after].isalnum():
            return True
    if r_alnum and lc in JOINERS:
        before = _left(text, li - 1)
        if before >= 0 and text[before].isalnum():
            return True
    if _digit(rc) and lc in SIGNS:
        before = _left(text, li - 1)
        if before < 0 or not (text[before].isalnum() or text[before] in "._"):
            return True
    if _digit(lc) and rc in SEPARATORS:
        after = _right(text, ri + 1)
        if after < n and _digit(text[after]):
            return True
    if _digit(rc) and lc in SEPARATORS:
        before = _left(text, li - 1)
        if before >= 0 and _digit(text[before]):
            return True
    if _digit(lc) and rc in GROUPING_SPACES:
        return _grouping_space(text, ri)
    if _digit(rc) and lc in GROUPING_SPACES:
        return _grouping_space(text, li)
    return False


def _grouping_space(text: str, i: int) -> bool:
    """Whether the space at ``i`` groups thousands: 1-3 digits before it, exactly 3 after
    (invisible format characters in between are skipped)."""
    left = 0
    k = _left(text, i - 1)
    while k >= 0 and _digit(text[k]):
        left += 1
        k = _left(text, k - 1)
    right = 0
    m = _right(text, i + 1)
    n = len(text)
    while m < n and _digit(text[m]):
        right += 1
        m = _right(text, m + 1)
    return 1 <= left <= 3 and right == 3
