"""Occurrences of a quote in a text (SPEC §4.6): whitespace runs match any whitespace run.

Quotes repeat across candidates ("$", "(in thousands", a row label), so the occurrences of
each quote are found once per text and kept; choosing one (the one that holds the value, the
last before it, the first after it) is then a bisect.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from groundswell.shared.admit.index import TextIndex

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
    anchored = _by_digit_run(index, parts)
    if anchored is not None:
        out = anchored
    elif len(parts) == 1:
        needle = parts[0]
        size = len(needle)
        i = text.find(needle)
        while i != -1:
            out.append((i, i + size))
            i = text.find(needle, i + 1)
    else:
        pattern = quote_pattern(parts)
        m = pattern.search(text)
        while m is not None:
            out.append((m.start(), m.end()))
            m = pattern.search(text, m.start() + 1)
    if len(cache) > _MAX_CACHED:
        cache.clear()
    cache[parts] = out
    return out


_RUN = re.compile(r"[0-9]+")
_KEY = 3  # digits of a run's start or end that the index keys on


def _run_index(index: TextIndex) -> dict[str, list[int]]:
    """Every maximal run of ASCII digits of the text, by its whole text ("X"), its first
    digits ("S", at the run's start) and its last digits ("E", at the run's end); each list
    ascending."""
    got = index.__dict__.get("_digit_runs")
    if got is None:
        # Runs by their text first (one dict step a run); then the first and last digits of
        # each distinct run (a few thousand, where the runs are tens of thousands), each list
        # sorted once at the end.
        matches = list(_RUN.finditer(index.text))
        whole: dict[str, list[int]] = {}
        add = whole.setdefault
        for r, a in zip(map(re.Match.group, matches), map(re.Match.start, matches), strict=True):
            add(r, []).append(a)
        got = {"X" + r: starts for r, starts in whole.items()}
        for r, starts in whole.items():
            n = len(r)
            ends = [a + n for a in starts]
            for k in range(1, min(_KEY, n) + 1):
                got.setdefault("S" + r[:k], []).extend(starts)
                got.setdefault("E" + r[-k:], []).extend(ends)
        for key, places in got.items():
            if key[0] != "X":
                places.sort()
        index.__dict__["_digit_runs"] = got
    return got


def _by_digit_run(index: TextIndex, parts: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """The occurrences of a quote found through a run of digits of its first part, or None.

    A run of the quote with a non-digit before it starts a run of the text at the same place
    (a non-digit after it: ends one), because the occurrence repeats those characters. So
    the runs of the text with that first (last, whole) text give every place where the quote
    can occur, and each is checked there: no scan of the whole text for a numeric quote.
    """
    first = parts[0]
    keys: list[tuple[str, int]] = []  # (index key, offset of the quote's start from it)
    whole = len(parts) == 1
    for m in _RUN.finditer(first):
        r = m.group()
        a, b = m.span()
        left = a > 0
        right = b < len(first) or not whole
        if left and right:
            keys.append(("X" + r, a))
        elif left:
            keys.append(("S" + r[:_KEY], a))
        elif right:
            keys.append(("E" + r[-_KEY:], b))
    if not keys:
        return None
    runs = _run_index(index)
    # The key with the fewest places is the cheapest to check.
    key, offset = min(keys, key=lambda k: len(runs.get(k[0], ())))
    positions = runs.get(key, [])
    if len(positions) > 20_000:
        return None
    pattern = quote_pattern(parts)
    text = index.text
    found: set[tuple[int, int]] = set()
    for p in positions:
        start = p - offset
        if start < 0:
            continue
        m = pattern.match(text, start)
        if m is not None:
            found.add((m.start(), m.end()))
    return sorted(found)


def within(found: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The occurrences wholly inside [lo, hi)."""
    if not found or (lo <= found[0][0] and found[-1][1] <= hi):
        return found
    k = bisect_left(found, (lo, -1))
    j = bisect_left(found, (hi, -1), k)
    return [o for o in found[k:j] if o[1] <= hi]


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
