"""Locating a near-miss quotation in its source: token seeds, candidate regions, local alignment.

Same model and scores as gtrex 1.1.0's aligner (scorer revision 4), so a threshold means the
same thing in both: the document is tokenized once (numbers with their separators, letter and
digit runs, each punctuation mark alone); a number's key is its canonical value (``1,200`` is
``1200``) and a word's key is casefolded; every claim k-gram found in the document seeds a
diagonal; the best-supported diagonals, padded, are the regions where an affine-gap
Smith-Waterman alignment runs; the span it picks is tidied at the edges and scored by blending
token coverage with the normalized alignment score.

What is ours is the cost. The document's keys and spans sit in flat arrays and the k-gram
table holds ints; a claim of fewer than k tokens looks up its first hits instead of scanning
every token; and a region whose best conceivable score (every claim token it holds matched)
cannot beat the best alignment found so far is never aligned. Regions are aligned best-bound
first and ties go to the region earlier in the document, which is gtrex's order, so the pruned
search returns the same span and the same score, bit for bit. Within an alignment only the
cells that can still reach the best score are computed (see ``smith_waterman``), and a claim
with very many seed hits counts them per diagonal with big ints.
"""

from __future__ import annotations

import heapq
import math
import re
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, islice, repeat
from operator import add, eq, mul, sub
from typing import Any

# Defined apart so that a policy reads them without loading the aligner; named here too.
from groundswell.shared.repair.params import SCORER_ID as SCORER_ID
from groundswell.shared.repair.params import SCORER_REVISION as SCORER_REVISION
from groundswell.shared.repair.params import AlignmentError as AlignmentError
from groundswell.shared.repair.params import AlignmentParams
from groundswell.shared.repair.params import finite_number as finite_number
from groundswell.shared.text.offsets import OffsetMap
from groundswell.shared.verify.engine import TOKEN

_OPENERS = "([{"
_CLOSERS = ")]}"
_TRIM_LEADING = " \t\n\r.,;:!?" + _CLOSERS
_TRIM_TRAILING = " \t\n\r,;:" + _OPENERS
# A bound within this of the best score is aligned anyway (scores are sums of a few floats).
_SLACK = 1e-9
_TOKEN_SPLIT = re.compile(f"({TOKEN.pattern})", TOKEN.flags)
# A claim with more seed hits than this counts them by diagonal with big ints, for each gram it
# repeats at least _LANE_REPEATS times that has that many hits on its own.
_LANE_PAIRS = 65_536
_LANE_REPEATS = 4


@dataclass(frozen=True)
class Alignment:
    """The source span that best explains a claim, with its scores (full precision)."""

    score: float
    coverage: float
    alignment_score: float
    start: int
    end: int
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "coverage": self.coverage,
            "alignment_score": self.alignment_score,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }


def _decimal_point_starts(text: str, i: int) -> bool:
    """Whether the digits at ``i`` follow a '.' that begins the number (not 'No.5', '...5')."""
    if i == 0 or text[i - 1] != ".":
        return False
    return i == 1 or not (text[i - 2].isalnum() or text[i - 2] in "._")


def trim_span(text: str, start: int, end: int, reach: int = 48) -> tuple[int, int]:
    """Tidy a span's edges without changing what it says: spaces and dangling punctuation go,
    and an unbalanced bracket is extended to its partner within ``reach`` characters before
    it is dropped (dropping the ``(`` of ``($10.0 million)`` would make a loss a profit)."""
    while start < end and text[start] in _TRIM_LEADING:
        if (
            text[start] == "."
            and start + 1 < end
            and text[start + 1].isdecimal()
            and _decimal_point_starts(text, start + 1)
        ):
            break
        start += 1
    while end > start and text[end - 1] in _TRIM_TRAILING:
        end -= 1
    for _ in range(4):
        piece = text[start:end]
        opens = sum(piece.count(c) for c in _OPENERS)
        closes = sum(piece.count(c) for c in _CLOSERS)
        if opens == closes:
            break
        if opens > closes:
            limit = min(len(text), end + reach)
            found = [p for p in (text.find(c, end, limit) for c in _CLOSERS) if p >= 0]
            if found:
                end = min(found) + 1
                continue
            if text[start] in _OPENERS:
                start += 1
                continue
        else:
            opener = max(text.rfind(c, max(0, start - reach), start) for c in _OPENERS)
            if opener >= 0:
                start = opener
                continue
            if text[end - 1] in _CLOSERS:
                end -= 1
                continue
        break
    return start, end


class TokenKeys:
    """Comparison keys of tokens: a whole number is its canonical value, a word is casefolded
    (unless case-sensitive). Memoized, since a document repeats most of its tokens."""

    def __init__(self, case_sensitive: bool) -> None:
        self.case_sensitive = case_sensitive
        self._memo: dict[str, str] = {}

    def key(self, token: str) -> str:
        got = self._memo.get(token)
        if got is None:
            got = self._memo[token] = self._compute(token)
        return got

    def _compute(self, token: str) -> str:
        # Only an entire numeric token is a number: 'Q3' and '3' stay distinct.
        if token[0].isdecimal() or token[0] == ".":
            from groundswell.shared.repair.numbers import numeric_sequence

            values = numeric_sequence(token)
            if len(values) == 1 and all(c.isdecimal() or c in ".," for c in token):
                return "\x00number:" + values[0]
        return token if self.case_sensitive else token.casefold()

    def keys(self, text: str) -> list[str]:
        key = self.key
        return [key(t) for t in TOKEN.findall(text)]


def token_count(text: str) -> int:
    return len(TOKEN.findall(text))


class AlignIndex:
    """One document, tokenized once, serving the alignment of any number of claims.

    ``text`` is the projection the aligner reads (the ladder's first tier: the original with
    parser markers separated) and ``omap`` maps it back to ``source``.
    """

    def __init__(
        self, source: str, text: str, omap: OffsetMap, params: AlignmentParams | None = None
    ) -> None:
        self.source = source
        self.text = text
        self.omap = omap
        self.params = params or AlignmentParams()
        self._keys = TokenKeys(self.params.case_sensitive)
        # One regex pass, split around the tokens (kept): gaps and tokens in turn, from a gap
        # to a gap. Everything else maps in C over them, computing each distinct token's key
        # once.
        parts = _TOKEN_SPLIT.split(text)
        texts = parts[1::2]
        # A token's offsets are the running sum of the lengths before it: no match object per
        # token (the last gap is not needed).
        edges = array("q", accumulate(map(len, islice(parts, len(parts) - 1))))
        self.starts = edges[0::2]
        self.ends = edges[1::2]
        key = self._keys.key
        ids: dict[str, int] = {}
        code_of = {t: ids.setdefault(key(t), len(ids)) for t in dict.fromkeys(texts)}
        # Each distinct key gets a small int, which is what is aligned; a k-gram is one int in
        # base len(ids).
        self._ids = ids
        self._coded = list(map(code_of.__getitem__, texts))
        self._grams: _Lookup | None = None
        self._positions: _Lookup | None = None

    def __len__(self) -> int:
        return len(self._coded)

    # --- seeds ------------------------------------------------------------------------------

    def _gram_value(self, codes: Sequence[int]) -> int:
        base = len(self._ids)
        value = 0
        for code in codes:
            value = value * base + code
        return value

    def _gram_table(self) -> _Lookup:
        if self._grams is None:
            coded = self._coded
            base = len(self._ids)
            values: Any = coded
            for i in range(1, self.params.seed_ngram):
                values = map(add, map(mul, values, repeat(base)), coded[i:])
            self._grams = _Lookup(list(values))
        return self._grams

    def _position_table(self) -> _Lookup:
        if self._positions is None:
            self._positions = _Lookup(self._coded)
        return self._positions

    def _regions(self, codes: Sequence[int]) -> list[tuple[int, int]]:
        """Candidate regions in token positions, sorted and merged: the ``max_regions`` best
        supported diagonals (ties in order of first hit), padded on both sides."""
        params = self.params
        k = params.seed_ngram
        n = len(codes)
        if n < k:
            # Every source token holding any claim key is a hit on its own diagonal, so the
            # top diagonals are simply the first hits in the document.
            table = self._position_table()
            lists = [table.find(c) for c in {c for c in codes if c >= 0}]
            ranked = [(p, p) for p in islice(heapq.merge(*lists), params.max_regions)]
        else:
            table = self._gram_table()
            grams = [
                self._gram_value(codes[o : o + k]) if -1 not in codes[o : o + k] else -1
                for o in range(n - k + 1)
            ]
            positions_of = {g: table.find(g) for g in grams if g >= 0}
            found = [positions_of.get(g, ()) for g in grams]
            if sum(map(len, found)) > _LANE_PAIRS:
                chosen = self._top_diagonals(grams, found, positions_of)
            else:
                chosen = _counted_diagonals(found, params.max_regions)
            if not chosen:
                return []
            values = table.values
            m, size = len(grams), len(values)
            ranked = []
            for d in chosen:
                # The first and last claim offsets whose gram sits on this diagonal, compared
                # in C over the stretch of document the diagonal crosses.
                a, b = max(0, -d), min(m, size - d)
                on = list(compress(range(a, b), map(eq, values[d + a : d + b], grams[a:b])))
                ranked.append((d + on[0], d + on[-1]))
        pad = params.region_pad_tokens
        total = len(self._coded)
        regions = sorted(
            (max(0, first - pad), min(total, last + n + pad)) for first, last in ranked
        )
        merged: list[tuple[int, int]] = []
        for lo, hi in regions:
            if merged and lo <= merged[-1][1]:
                if hi > merged[-1][1]:
                    merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        return merged

    def _top_diagonals(
        self, grams: list[int], found: list[Sequence[int]], positions_of: dict[int, list[int]]
    ) -> list[int]:
        """The ``max_regions`` best supported diagonals, as the Counter of ``_regions`` ranks
        them (by hits, then by first hit: the lowest offset, then the lowest diagonal), for a
        claim with very many hits.

        Those come from a gram the claim repeats that the document holds many times (a rule
        of dashes in a table). Its hits are counted at once: a big int with one lane per
        diagonal holds a 1 at each of the gram's positions, and multiplying it by one 1 per
        offset of the gram, each shifted by that offset, adds up its hits on every diagonal.
        """
        limit = self.params.max_regions
        m = len(grams)
        offsets_of: dict[int, list[int]] = {}
        for offset, gram in enumerate(grams):
            if found[offset]:
                offsets_of.setdefault(gram, []).append(offset)
        width = 1 if m < 0x100 else 2  # bytes per lane, above any count
        size = len(self._coded)
        lanes = 0
        counts: Counter[int] = Counter()
        for gram, offsets in offsets_of.items():
            positions = positions_of[gram]
            if (
                len(offsets) >= _LANE_REPEATS
                and len(offsets) * len(positions) > _LANE_PAIRS
                and m < 0x10000  # counts that fit a lane
            ):
                mask = bytearray(size * width)
                deque(map(mask.__setitem__, map(mul, positions, repeat(width)), repeat(1)), 0)
                # Lane position - offset + m - 1: never negative.
                spread = sum(1 << (8 * width * (m - 1 - offset)) for offset in offsets)
                lanes += int.from_bytes(mask, "little") * spread
            else:
                for offset in offsets:
                    counts.update(map(sub, positions, repeat(offset)))
        if lanes:
            raw = lanes.to_bytes((size + m) * width, "little")
            cells: Sequence[int] = raw
            if width == 2:
                cells = array("H", raw)
                if sys.byteorder != "little":
                    cells.byteswap()
            hit = list(compress(range(len(cells)), cells))
            diagonals = map(sub, hit, repeat(m - 1))
            counts.update(dict(zip(diagonals, map(cells.__getitem__, hit), strict=True)))
        chosen, cut, need = _above_cut(counts, limit)
        if not need:
            return chosen
        tied = {d for d, c in counts.items() if c == cut}
        if need >= len(tied):
            return chosen + list(tied)
        # The tied diagonals first hit earliest: by offset, then by diagonal.
        seen: set[int] = set()
        for offset, positions in enumerate(found):
            for d in filter(tied.__contains__, map(sub, positions, repeat(offset))):
                if d not in seen:
                    seen.add(d)
                    chosen.append(d)
                    if len(seen) == need:
                        return chosen
        raise AssertionError("every tied diagonal has a first hit")

    # --- alignment --------------------------------------------------------------------------

    def best_span(self, claim: str) -> Alignment | None:
        """The source span that best explains ``claim`` (None when nothing seeds or aligns)."""
        claim_keys = self._keys.keys(claim)
        if not claim_keys or not self._coded:
            return None
        # Keys the document lacks can match nothing: -1 stands for all of them.
        ids = self._ids
        claim_codes = [ids.get(key, -1) for key in claim_keys]
        regions = self._regions(claim_codes)
        if not regions:
            return None
        params = self.params
        n = len(claim_keys)
        wanted = Counter(claim_codes)
        keys, counts = list(wanted), list(wanted.values())
        # The most a region could score is every claim token it holds matched.
        bounds = []
        for order, (lo, hi) in enumerate(regions):
            have = Counter(self._coded[lo:hi]).get
            held = sum(map(min, counts, map(have, keys, repeat(0))))
            bounds.append((-held, order))
        bounds.sort()
        best: Alignment | None = None
        best_order = -1
        ceiling = params.match_score * n
        weight = params.coverage_weight
        # With scores that are multiples of 1/64, every alignment score is summed exactly.
        exact = all(
            (v * 64).is_integer()
            for v in (params.match_score, params.mismatch_score, params.gap_open, params.gap_extend)
        )
        for negative_held, order in bounds:
            bound = -negative_held / n
            if best is not None:
                if bound + _SLACK < best.score:
                    break  # sorted by bound: no later region can win either
                if (
                    exact
                    and order > best_order
                    and bound <= best.coverage
                    and (bound <= best.alignment_score)
                ):
                    # Its coverage and alignment score are at most the best's, so its blended
                    # score (rounded the same way) is at most a tie, and a tie goes to the
                    # region earlier in the document.
                    continue
            lo, hi = regions[order]
            window = self._coded[lo:hi]
            if best is not None:
                # A tighter bound, in order: an alignment matches at most the longest common
                # subsequence of the claim and the window.
                bound = common_subsequence(claim_codes, window) / n
                if bound + _SLACK < best.score or (
                    exact
                    and order > best_order
                    and bound <= best.coverage
                    and bound <= best.alignment_score
                ):
                    continue
            found = smith_waterman(claim_codes, window, params)
            if found is None:
                continue
            raw, w_start, w_end, matched = found
            token_lo, token_hi = lo + w_start, lo + w_end
            if token_hi <= token_lo:
                continue
            a, b = trim_span(self.text, self.starts[token_lo], self.ends[token_hi - 1])
            if b <= a:
                continue
            start, end = self.omap.span(a, b)
            start, end = trim_span(self.source, start, end)
            if end <= start:
                continue
            coverage = matched / n
            alignment_score = max(0.0, min(1.0, raw / ceiling)) if ceiling else 0.0
            score = weight * coverage + (1.0 - weight) * alignment_score
            if best is None or score > best.score or (score == best.score and order < best_order):
                best = Alignment(
                    score, coverage, alignment_score, start, end, self.source[start:end]
                )
                best_order = order
        return best


def _counted_diagonals(found: list[Sequence[int]], limit: int) -> list[int]:
    """The ``limit`` diagonals (position - offset) with the most hits, given the positions of
    the gram at each offset; ties go to the diagonal hit first."""
    # Counted in C; a Counter keeps its keys in order of first hit.
    counts: Counter[int] = Counter()
    for offset, positions in enumerate(found):
        if positions:
            counts.update(map(sub, positions, repeat(offset)) if offset else positions)
    chosen, cut, need = _above_cut(counts, limit)
    if need:
        chosen += islice((d for d, c in counts.items() if c == cut), need)
    return chosen


def _above_cut(counts: dict[int, int], limit: int) -> tuple[list[int], int, int]:
    """For the ``limit`` keys with the most counts: those with more than the count of the last
    of them (the cut), the cut, and how many of the keys at the cut complete them."""
    if len(counts) <= limit:
        return list(counts), 0, 0
    # Few distinct counts: walk them down from the highest.
    spread = Counter(counts.values())
    taken = 0
    for cut in sorted(spread, reverse=True):
        if taken + spread[cut] >= limit:
            return [d for d, c in counts.items() if c > cut], cut, limit - taken
        taken += spread[cut]
    raise AssertionError("more keys than the limit")


class _Lookup:
    """Where each value occurs, ascending: the positions sorted by value (a stable sort keeps
    equal values in position order), found by bisection. Built in C, no dict of lists."""

    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.order = sorted(range(len(values)), key=values.__getitem__)
        self.sorted = list(map(values.__getitem__, self.order))

    def find(self, value: int) -> list[int]:
        values = self.sorted
        lo = bisect_left(values, value)
        # Most values a claim looks up occur once or not at all: no second bisection.
        if lo == len(values) or values[lo] != value:
            return []
        if lo + 1 == len(values) or values[lo + 1] != value:
            return self.order[lo : lo + 1]
        return self.order[lo : bisect_right(values, value, lo + 2)]


def common_subsequence(query: Sequence[Hashable], target: Sequence[Hashable]) -> int:
    """The length of the longest common subsequence, bit-parallel (Hyyro's recurrence): one
    big-int step per query token over a bit per target token."""
    masks: dict[Hashable, int] = {}
    for j, key in enumerate(target):
        masks[key] = masks.get(key, 0) | (1 << j)
    full = (1 << len(target)) - 1
    v = full
    for key in query:
        u = v & masks.get(key, 0)
        v = ((v + u) | (v - u)) & full
    return len(target) - v.bit_count()


def smith_waterman(
    query: Sequence[Hashable], target: Sequence[Hashable], params: AlignmentParams
) -> tuple[float, int, int, int] | None:
    """Affine-gap local alignment of two key sequences: ``(score, target_start, target_end,
    matched)`` of the best cell (the first in row-major order on ties), or None.

    Three states per cell (a match or mismatch, a gap in the target, a gap in the query), each
    carrying the start and the matched count of the path that reached it; only two rows are
    kept, and of those only the positive cells that can still reach the best score. Ties
    between states go to the diagonal, then the target gap, then the query gap; a gap is
    opened rather than extended on equal scores: the same choices as gtrex, which make the
    same start and count.
    """
    # A local alignment starts and peaks at a match, so the rows and columns before the first
    # matching token are all zero and those after the last one cannot hold the best cell.
    keys = set(query)
    columns = [j for j, t in enumerate(target) if t in keys]
    if not columns:
        return None
    keys = set(target)
    rows = [i for i, q in enumerate(query) if q in keys]
    shift = columns[0]
    query = query[rows[0] : rows[-1] + 1]
    target = target[shift : columns[-1] + 1]
    found = _smith_waterman(query, target, params)
    if found is None:
        return None
    best, best_start, best_end, best_hits = found
    return best, best_start + shift, best_end + shift, best_hits


def _ungapped(
    query: Sequence[Hashable],
    columns: dict[Hashable, list[int]],
    width: int,
    match: float,
    mismatch: float,
) -> float:
    """The best score of an alignment without gaps (a maximal run along one diagonal), read
    from the matching cells alone (columns below ``width``): a score the full alignment
    reaches at least."""
    n = len(query)
    # By diagonal (column - row + n): the row of its last match and the run's score there.
    last = [-1] * (n + width)
    run = [0.0] * (n + width)
    best = 0.0
    for i, q in enumerate(query):
        for j in columns.get(q, ()):
            diagonal = j - i + n
            score = match
            # On a fresh diagonal the run is 0, so what is carried is never positive.
            carried = run[diagonal] + (i - last[diagonal] - 1) * mismatch
            if carried > 0.0:
                score += carried
            last[diagonal] = i
            run[diagonal] = score
            if score > best:
                best = score
    return best


def _smith_waterman(
    query: Sequence[Hashable], target: Sequence[Hashable], params: AlignmentParams
) -> tuple[float, int, int, int] | None:
    n, m = len(query), len(target)
    if n == 0 or m == 0:
        return None
    match, mismatch = params.match_score, params.mismatch_score
    g_open, g_ext = params.gap_open, params.gap_extend
    neg = -math.inf
    columns: dict[Hashable, list[int]] = {}  # the (1-based) columns of each target key
    for j, t in enumerate(target, 1):
        got = columns.get(t)
        if got is None:
            columns[t] = [j]
        else:
            got.append(j)
    # The best cell scores at least the best gapless run. A cell cannot lead anywhere higher
    # than its score plus a match for every row (and column) left below (and right of) it
    # that holds a key of the other side, so a cell, or a gap state, below that floor is
    # dropped: no path through it reaches the best score, so the best cell and every choice
    # on its path are the same as with every cell kept. The slack keeps the comparison safe
    # from rounding (with the default scores, every sum is exact).
    floor = _ungapped(query, columns, m + 1, match, mismatch) - 1e-6
    matchable = set(query)
    # Matches still possible after each row, and after each (1-based) column.
    rows_after = list(accumulate(reversed([q in columns for q in query]), initial=0))[-2::-1]
    cols_after = list(accumulate(reversed([t in matchable for t in target]), initial=0))[::-1]
    # Only the cells that may be positive are computed: a match, or a cell right of, below or
    # below-right of a cell kept in the row above, or along a query gap still positive. Two
    # rows of state are reused; an entry not kept rests at zero (no gap: -inf).
    open_keep, ext_keep = -g_open, -g_ext
    width = m + 2
    padded = [None, *target]
    p_main, p_start, p_hits = [0.0] * width, [0] * width, [0] * width
    p_gt, p_gt_start, p_gt_hits = [neg] * width, [0] * width, [0] * width
    main, start, hits = [0.0] * width, [0] * width, [0] * width
    gt, gt_start, gt_hits = [neg] * width, [0] * width, [0] * width
    p_kept: list[int] = []  # the columns kept in the row above
    kept: list[int] = []  # the columns kept two rows above, to be put to rest
    best = 0.0
    best_start = best_end = best_hits = 0
    for i, q in enumerate(query):
        for j in kept:
            main[j] = 0.0
            gt[j] = neg
        kept = []
        rows_left = rows_after[i]
        at = columns.get(q, ())
        if match * (rows_left + 1) >= floor:
            wanted = set(at)
        else:
            # A match that starts a path here can no longer reach the floor.
            wanted = {j for j in at if p_main[j - 1] > 0.0}
        if p_kept:
            wanted.update(p_kept)
            wanted.update(map(add, p_kept, repeat(1)))
        if wanted:
            order = sorted(wanted)
            count = len(order)
            k = 0
            left_j = -1
            left_main = 0.0
            left_start = left_hits = 0
            gq, gq_start, gq_hits = neg, 0, 0
            while True:
                # The next cell: the next wanted column, or the one after a live query gap.
                ahead = order[k] if k < count else width
                if left_j + 1 < ahead and left_j >= 0 and (left_main > open_keep or gq > ext_keep):
                    j = left_j + 1
                elif k < count:
                    j = ahead
                    k += 1
                else:
                    break
                if j > m:
                    break
                if j != left_j + 1:  # the cell to the left is zero
                    left_main = 0.0
                    gq = neg
                left_j = j
                cols_left = cols_after[j]
                reach = match * (rows_left if rows_left < cols_left else cols_left)
                keep = False
                # Gap in the target (from the row above); ties open rather than extend.
                t_score = p_main[j] + g_open
                extended = p_gt[j] + g_ext
                if t_score > 0.0 or extended > 0.0:
                    if t_score >= extended:
                        t_start, t_hits = p_start[j], p_hits[j]
                    else:
                        t_score, t_start, t_hits = extended, p_gt_start[j], p_gt_hits[j]
                    if t_score + reach >= floor:
                        gt[j], gt_start[j], gt_hits[j] = t_score, t_start, t_hits
                        keep = True
                # Gap in the query (along this row).
                opened = left_main + g_open
                extended = gq + g_ext
                if opened >= extended:
                    gq, gq_start, gq_hits = opened, left_start, left_hits
                else:
                    gq = extended
                if gq + reach < floor:
                    gq = neg
                diag_prev = p_main[j - 1]
                if q == padded[j]:
                    diagonal = diag_prev + match
                    is_match = 1
                else:
                    diagonal = diag_prev + mismatch
                    is_match = 0
                score = diagonal
                if t_score > score:
                    score = t_score
                if gq > score:
                    score = gq
                if score <= 0.0 or score + reach < floor:
                    left_main, left_start, left_hits = 0.0, j, 0
                else:
                    # Ties go to the diagonal, then the target gap, then the query gap.
                    if score == diagonal:
                        if diag_prev > 0.0:
                            s, h = p_start[j - 1], p_hits[j - 1] + is_match
                        else:
                            s, h = j - 1, is_match
                    elif score == t_score:
                        s, h = t_start, t_hits
                    else:
                        s, h = gq_start, gq_hits
                    main[j], start[j], hits[j] = score, s, h
                    left_main, left_start, left_hits = score, s, h
                    keep = True
                    if score > best:
                        best, best_start, best_end, best_hits = score, s, j, h
                if keep:
                    kept.append(j)
        p_main, main = main, p_main
        p_start, start = start, p_start
        p_hits, hits = hits, p_hits
        p_gt, gt = gt, p_gt
        p_gt_start, gt_start = gt_start, p_gt_start
        p_gt_hits, gt_hits = gt_hits, p_gt_hits
        p_kept, kept = kept, p_kept
    if best <= 0.0:
        return None
    return best, best_start, best_end, best_hits
