"""Occurrences of a quote in a text (SPEC §4.6): whitespace runs match any whitespace run.

Quotes repeat across candidates ("$", "(in thousands", a row label), so the occurrences of
each quote are found once per text and kept; choosing one (the one that holds the value, the
last before it, the first after it) is then a bisect.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from shared.admit.index import TextIndex

_MAX_CACHED = 2048


def quote_pattern(parts: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\s+".join(re.escape(p) for p in parts))


def occurrences(index: TextIndex, quote: str) -> list[tuple[int, int]]:
    """Every occurrence of ``quote`` (trimmed) in the text, overlapping ones included."""
    parts = tuple(quote.split())
    if not parts:
        return []
    cache: dict[tuple[str, ...], list[tuple[int, int]]] = index.__dict__.setdefault(
        "_occurrences", {}
    )
    got = cache.get(parts)
    if got is not None:
        return got
    text = index.text
    out: list[tuple[int, int]] = []
    if len(parts) == 1:
        needle = parts[0]
        size = len(needle)
        i = text.find(needle)
        while i != -1:
            out.append((i, i + size))
            i = text.find(needle, i + 1)
    else:
        pattern = quote_pattern(parts)
        first = parts[0]
        i = text.find(first)
        while i != -1:
            m = pattern.match(text, i)
            if m is not None:
                out.append((m.start(), m.end()))
            i = text.find(first, i + 1)
    if len(cache) > _MAX_CACHED:
        cache.clear()
    cache[parts] = out
    return out


def within(found: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The occurrences wholly inside [lo, hi)."""
    k = bisect_left(found, (lo, -1))
    out = []
    while k < len(found) and found[k][0] < hi:
        if found[k][1] <= hi:
            out.append(found[k])
        k += 1
    return out


def holding(found: list[tuple[int, int]], s: int, e: int) -> tuple[int, int] | None:
    """The first occurrence that holds [s, e)."""
    k = bisect_right(found, (s, 1 << 62))
    best = None
    # Occurrences that start at or before s; the earliest that still reaches e wins.
    j = k - 1
    while j >= 0:
        o = found[j]
        if o[1] >= e:
            best = o
        if s - o[0] > 4096:
            break
        j -= 1
    return best


def last_before(found: list[tuple[int, int]], pos: int) -> list[tuple[int, int]]:
    """Occurrences that end at or before ``pos``, the last first (a short list is enough)."""
    k = bisect_right(found, (pos, 1 << 62))
    out = []
    j = k - 1
    while j >= 0 and len(out) < 64:
        if found[j][1] <= pos:
            out.append(found[j])
        j -= 1
    out.sort(key=lambda o: -o[0])
    return out


def first_after(found: list[tuple[int, int]], pos: int) -> tuple[int, int] | None:
    k = bisect_left(found, (pos, -1))
    return found[k] if k < len(found) else None
