"""Ruled tables: the cells that a page's drawn rules enclose.

Input is the page's straight rules (thin lines and thin filled rectangles), in PDF points with
the origin at the top-left of the visible page. Output is one ``RuledTable`` per group of rules
that touch each other and form a regular grid: cells bounded by a rule above and below, between
two walls that run the full height of their band. Text plays no part here: a cell is found from
geometry alone.

Anything irregular (a slot with neither a rule above nor a cell above it, a cell left open at
the bottom) or too large (see the limits below) yields no table, and the text is then written as
prose: no rows at all is better than wrong rows. This is the behaviour of groundgate 0.11.0's
reader, which the differential tests hold us to.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import pairwise

# A rectangle no thicker than this (in points) and longer than it is thick is a rule.
THIN = 3.0
# Pieces of a rule this close end to end are one rule; a wall meets a corner within this.
REACH = 3.0
# Two rules this close across their length lie at one position.
ALIGN = 1.0
# A word may overhang its cell wall by this much (a glyph's side bearing).
OVERHANG = 1.0

MAX_PAGE_RULES = 4000  # more rules than this (a chart, a hatched fill): no ruled tables
MAX_RULE_PAIRS = 250_000  # horizontal x vertical rules compared for contact
MAX_LEVELS = 200  # distinct rule positions across one table, in either direction
MAX_TABLES = 50  # a page of many boxes (a form) gives none

Rule = tuple[float, float, float, float]  # x0, top, x1, bottom
Stroke = tuple[float, float, float]  # position across, then start and end along the rule


@dataclass(frozen=True)
class GridCell:
    x0: float
    top: float
    x1: float
    bottom: float
    row: int  # rows counted from the table's top, by distinct cell tops


@dataclass(frozen=True)
class RuledTable:
    box: tuple[float, float, float, float]
    cells: tuple[GridCell, ...]
    bands: tuple[tuple[float, float], ...]  # (top, bottom) between consecutive rule levels
    walls: tuple[tuple[float, ...], ...]  # per band, the x of each wall, left to right
    slot_cell: dict[tuple[int, int], int]  # (band, slot) -> index into cells
    row_band: tuple[int, ...]  # per row, the first band it occupies

    def row_slots(self, row: int) -> list[int]:
        """The cells across one row, left to right, a tall cell from above included."""
        band = self.row_band[row]
        return [self.slot_cell[band, s] for s in range(len(self.walls[band]) - 1)]

    def locate(self, x0: float, top: float, x1: float, bottom: float) -> int | None:
        """The cell that holds a word box, by its centre; None on a rule, across a wall or
        outside the table."""
        cy = (top + bottom) / 2
        band = bisect_right(self.bands, (cy, float("inf"))) - 1
        if band < 0 or band >= len(self.bands) or cy > self.bands[band][1]:
            return None
        xs = self.walls[band]
        slot = bisect_right(xs, (x0 + x1) / 2) - 1
        if slot < 0 or slot >= len(xs) - 1:
            return None
        if x0 < xs[slot] - OVERHANG or x1 > xs[slot + 1] + OVERHANG:
            return None
        return self.slot_cell.get((band, slot))


def ruled_tables(rules: list[Rule]) -> list[RuledTable]:
    """Every ruled table of a page with at least two rows of two or more cells."""
    if len(rules) > MAX_PAGE_RULES:
        return []
    across: list[Stroke] = []
    down: list[Stroke] = []
    for x0, top, x1, bottom in rules:
        w, h = x1 - x0, bottom - top
        if h <= THIN and w > h:
            across.append(((top + bottom) / 2, x0, x1))
        elif w <= THIN and h > w:
            down.append(((x0 + x1) / 2, top, bottom))
    across, down = _merge_strokes(across), _merge_strokes(down)
    if len(across) * len(down) > MAX_RULE_PAIRS:
        return []
    found = []
    for hs, vs in _connected(across, down):
        table = _build(hs, vs)
        if (
            table is not None
            and sum(len(table.row_slots(r)) > 1 for r in range(len(table.row_band))) > 1
        ):
            found.append(table)
    return [] if len(found) > MAX_TABLES else found


def _merge_strokes(strokes: list[Stroke]) -> list[Stroke]:
    """Join the pieces of one rule: strokes in a run of positions each within ALIGN of the one
    before share the first one's position; along it, pieces that overlap or nearly touch (REACH)
    become one stroke."""
    strokes = sorted(strokes)
    merged: list[Stroke] = []
    i = 0
    while i < len(strokes):
        j = i + 1
        while j < len(strokes) and strokes[j][0] - strokes[j - 1][0] <= ALIGN:
            j += 1
        at = strokes[i][0]
        pieces = sorted((a, b) for _, a, b in strokes[i:j])
        start, end = pieces[0]
        for a, b in pieces[1:]:
            if a > end + REACH:
                merged.append((at, start, end))
                start, end = a, b
            else:
                end = max(end, b)
        merged.append((at, start, end))
        i = j
    return merged


def _meets(h: Stroke, v: Stroke) -> bool:
    return h[1] - REACH <= v[0] <= h[2] + REACH and v[1] - REACH <= h[0] <= v[2] + REACH


def _connected(across: list[Stroke], down: list[Stroke]) -> list[tuple[list[Stroke], list[Stroke]]]:
    """Groups of strokes linked by contact, ordered by their first horizontal stroke; only the
    groups with two or more strokes in each direction."""
    n = len(across)
    owner = list(range(n + len(down)))

    def find(i: int) -> int:
        while owner[i] != i:
            owner[i] = owner[owner[i]]
            i = owner[i]
        return i

    for i, h in enumerate(across):
        for j, v in enumerate(down):
            if _meets(h, v):
                a, b = find(i), find(n + j)
                if a != b:
                    owner[a] = b
    groups: dict[int, tuple[list[Stroke], list[Stroke]]] = {}
    for i, h in enumerate(across):
        groups.setdefault(find(i), ([], []))[0].append(h)
    for j, v in enumerate(down):
        groups.setdefault(find(n + j), ([], []))[1].append(v)
    return [g for g in groups.values() if len(g[0]) >= 2 and len(g[1]) >= 2]


def _runs(values: list[float]) -> list[tuple[float, float]]:
    """Sorted values cut into runs where each is within REACH of the previous: (first, last)."""
    runs: list[tuple[float, float]] = []
    for v in sorted(values):
        if runs and v - runs[-1][1] <= REACH:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _coverage(pieces: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The stretches a level's rules cover, pieces within REACH joined."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(pieces):
        if out and a <= out[-1][1] + REACH:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _spans_across(cover: list[tuple[float, float]], x0: float, x1: float) -> bool:
    return any(a <= x0 + REACH and b >= x1 - REACH for a, b in cover)


def _implied_edges(down: list[Stroke]) -> list[Stroke]:
    """Horizontal edges where the walls themselves stop: if the walls that start (or end) at
    one height reach from the leftmost wall to the rightmost, the table has an edge there even
    without a drawn rule, as under a shaded header."""
    left = min(v[0] for v in down)
    right = max(v[0] for v in down)
    edges: list[Stroke] = []
    for ends in ([(top, x) for x, top, _ in down], [(bottom, x) for x, _, bottom in down]):
        for lo, hi in _runs([y for y, _ in ends]):
            xs = [x for y, x in ends if lo <= y <= hi]
            if min(xs) <= left + REACH and max(xs) >= right - REACH:
                edges.append(((lo + hi) / 2, min(xs), max(xs)))
    return edges


def _slot_above(above: list[tuple[float, float, int]], x0: float, x1: float) -> int:
    """The cell of the slot in the band above with the same two walls (within REACH), or -1."""
    k = bisect_left(above, (x0 - REACH,))
    while k < len(above) and above[k][0] <= x0 + REACH:
        if abs(above[k][1] - x1) <= REACH:
            return above[k][2]
        k += 1
    return -1


def _build(across: list[Stroke], down: list[Stroke]) -> RuledTable | None:
    """The grid of one group of strokes, or None if it is irregular.

    Horizontal strokes cluster into levels; between two levels lies a band, whose walls are the
    vertical strokes running its whole height. Each pair of neighbouring walls is a slot. A slot
    under a rule starts a new cell; any other slot extends the cell above it with the same walls
    (a cell spanning rows), and if there is none the grid is irregular. A cell that stops must
    be closed by a rule, and so must every cell of the last band.
    """
    across = across + _implied_edges(down)
    levels = _runs([y for y, _, _ in across])
    if len(levels) > MAX_LEVELS or len(_runs([x for x, _, _ in down])) > MAX_LEVELS:
        return None
    cover = [_coverage([(a, b) for y, a, b in across if lo <= y <= hi]) for lo, hi in levels]
    boxes: list[list[float]] = []
    slot_cell: dict[tuple[int, int], int] = {}
    walls: list[tuple[float, ...]] = []
    bands: list[tuple[float, float]] = []
    above: list[tuple[float, float, int]] = []
    for band, ((_, top), (bottom, _)) in enumerate(pairwise(levels)):
        bands.append((top, bottom))
        full = [x for x, a, b in down if a <= top + REACH and b >= bottom - REACH]
        xs = tuple((lo + hi) / 2 for lo, hi in _runs(full))
        walls.append(xs)
        here: list[tuple[float, float, int]] = []
        for slot, (x0, x1) in enumerate(pairwise(xs)):
            if _spans_across(cover[band], x0, x1):
                boxes.append([x0, top, x1, bottom])
                cell = len(boxes) - 1
            else:
                cell = _slot_above(above, x0, x1)
                if cell < 0:
                    return None
                boxes[cell][3] = bottom
            slot_cell[band, slot] = cell
            here.append((x0, x1, cell))
        continuing = {c for _, _, c in here}
        for x0, x1, c in above:
            if c not in continuing and not _spans_across(cover[band], x0, x1):
                return None
        above = here
    if not boxes:
        return None
    for x0, x1, _ in above:
        if not _spans_across(cover[-1], x0, x1):
            return None
    tops = sorted({b[1] for b in boxes})
    row_of = {t: i for i, t in enumerate(tops)}
    cells = tuple(GridCell(b[0], b[1], b[2], b[3], row_of[b[1]]) for b in boxes)
    box = (
        min(c.x0 for c in cells),
        min(c.top for c in cells),
        max(c.x1 for c in cells),
        max(c.bottom for c in cells),
    )
    first_band: dict[float, int] = {}
    for i, (t, _) in enumerate(bands):
        first_band.setdefault(t, i)
    return RuledTable(
        box, cells, tuple(bands), tuple(walls), slot_cell, tuple(first_band[t] for t in tops)
    )
