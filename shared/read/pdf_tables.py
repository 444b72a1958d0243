"""How a page's text lines become output lines: prose as it is, tables as rows of cells.

pdfminer groups text into boxes, and it gives each column of a table its own box, so a table
read box by box comes out one column at a time. Here the rows are put back together: text lines
at one height, side by side, become one output line with a tab between cells. What counts as a
table, where its columns are and which cell is empty follow groundgate 0.11.0's reader exactly
(the tests compare the bytes); this module is our own implementation of that behaviour.

Coordinates are PDF points, origin at the top-left of the visible page. A ``Line`` is the words
of one pdfminer text line, left to right; a ``Cell`` is a list of words too.

Two kinds of table are found:

* **Number tables**: rows of two or more lines side by side, at least one of them a *figure*
  (only digits, currency signs, brackets, commas, dots, percent signs and dashes). Rows in
  between may be headings, label-column text or rows of figures. Columns come from the rows
  with the most figures; short rows are placed into them with empty cells; anything ambiguous
  is written on one line without tabs.
* **Ruled tables**: text inside a grid that the page draws (see ``pdf_grid``), one output line
  per row of cells, a cell's lines joined by a space.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import combinations, pairwise

from .pdf_grid import RuledTable


class Word:
    """One word of the page: its NFC text and its box (rounded to 0.01 pt)."""

    __slots__ = ("bottom", "text", "top", "x0", "x1")

    def __init__(self, text: str, x0: float, top: float, x1: float, bottom: float) -> None:
        self.text = text
        self.x0 = x0
        self.top = top
        self.x1 = x1
        self.bottom = bottom


Line = list[Word]
Cell = list[Word]
OutRow = list[Cell]  # one output line: its cells, written with a tab between them
Block = list[OutRow]  # output lines written with newlines; blocks are split by a blank line
Key = tuple[int, int]  # (box index, line index) of a text line on the page
Span = tuple[float, float, float, float]  # x0, top, x1, bottom

CELL_GAP = 0.65  # a gap of this many word heights inside a table row starts a new cell
SHORT_HEADING = 4  # words per part of a heading row between table rows
COLUMN_HEADING = 8  # words per part (after the first) of a column heading above a table
HEADER_BAND = 36.0  # points from the visible top where no table row starts (running heads)
MAX_MAJORITY_ROWS = 200  # rows compared pairwise when looking for a majority grid
LIST_LINES = 3  # two cells of this many lines, line for line, are lists side by side
SPACE_WIDTH = 0.25  # a space, as a fraction of the word height
BESIDE_SLACK = 0.5  # lines "side by side" may overlap this much
DASH_CHARS = frozenset("-\u2013\u2014\u2212")
# footnote marks and the signs set after a name: "(1)", "(1)(2)", "(a)", "®", "® (1)", "*"
_MARKS = re.compile(r"(?:[\u00ae\u2122*\u2020\u2021\u00a7]|\(\d{1,2}\)|\([a-z]\))+")
CURRENCY_SIGNS = frozenset("$\u20ac\u00a3\u00a5\u20b9")
FIGURE_CHARS = frozenset("0123456789,.%()") | CURRENCY_SIGNS | DASH_CHARS


def extent(words: Sequence[Word]) -> Span:
    x0 = top = float("inf")
    x1 = bottom = float("-inf")
    for w in words:
        if w.x0 < x0:
            x0 = w.x0
        if w.top < top:
            top = w.top
        if w.x1 > x1:
            x1 = w.x1
        if w.bottom > bottom:
            bottom = w.bottom
    return x0, top, x1, bottom


def on_one_line(a: Span, b: Span) -> bool:
    """Whether two spans overlap vertically by more than half the shorter one's height."""
    shared = min(a[3], b[3]) - max(a[1], b[1])
    return shared > 0.5 * min(a[3] - a[1], b[3] - b[1])


def is_figure(cell: Sequence[Word]) -> bool:
    """A cell of only figure characters with a digit or a dash in it, such as "$ (1,234)"."""
    chars = set("".join(w.text for w in cell))
    return chars <= FIGURE_CHARS and any(c.isdigit() or c in DASH_CHARS for c in chars)


def _only_figure_chars(cell: Sequence[Word]) -> bool:
    return set("".join(w.text for w in cell)) <= FIGURE_CHARS


def _only_signs(cell: Sequence[Word]) -> bool:
    return set("".join(w.text for w in cell)) <= CURRENCY_SIGNS


def split_cells(line: Line) -> list[Cell]:
    """A line cut at every gap of CELL_GAP word heights or more."""
    cells = [[line[0]]]
    for a, b in pairwise(line):
        if b.x0 - a.x1 >= CELL_GAP * (a.bottom - a.top):
            cells.append([])
        cells[-1].append(b)
    return cells


def _joined(cells: Iterable[Cell]) -> Cell:
    return [w for cell in cells for w in cell]


def _one_line(cells: Iterable[Cell]) -> OutRow:
    """All words of a row in one cell: the row is written without tabs."""
    return [_joined(cells)]


# -- columns of a number table -------------------------------------------------------------


def _aligned_columns(rows: list[list[Cell]]) -> list[tuple[float, float]]:
    """Column bands from rows of equal length: cell k of every row must share some horizontal
    stretch, and the bands (the union per column) must not overlap. Else no columns."""
    bands: list[tuple[float, float]] = []
    for column in zip(*rows, strict=True):
        spans = [extent(cell) for cell in column]
        lo = min(s[0] for s in spans)
        hi = max(s[2] for s in spans)
        if max(s[0] for s in spans) >= min(s[2] for s in spans):
            return []
        bands.append((lo, hi))
    for a, b in pairwise(bands):
        if a[1] > b[0]:
            return []
    return bands


def _majority_columns(rows: list[list[Cell]]) -> list[tuple[float, float]]:
    """Columns of the labelled rows; when they disagree, the columns of a strict majority of
    rows that each overlap one row cell for cell, if exactly one such grid exists."""
    bands = _aligned_columns(rows)
    if bands or not 3 <= len(rows) <= MAX_MAJORITY_ROWS:
        return bands
    spans = [[(s[0], s[2]) for s in map(extent, row)] for row in rows]
    found: set[tuple[tuple[float, float], ...]] = set()
    for pivot in spans:
        agreeing = [
            row
            for row, other in zip(rows, spans, strict=True)
            if all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(pivot, other, strict=True))
        ]
        if 2 * len(agreeing) > len(rows):
            grid = _aligned_columns(agreeing)
            if grid:
                found.add(tuple(grid))
    return list(found.pop()) if len(found) == 1 else []


def place(cells: list[Cell], columns: list[tuple[float, float]]) -> OutRow:
    """A row's cells put in the columns: [label, column 1, ..., column n], empty cells where a
    column is skipped. Text before the first column is the label; a figure goes to the one
    column it overlaps; other text must sit wholly inside one column; columns must increase.
    If anything does not fit, the row's words in one cell (no tabs)."""
    if not columns:
        return _one_line(cells)
    label: Cell = []
    slots: dict[int, Cell] = {}
    last = -1
    for cell in cells:
        x0, _, x1, _ = extent(cell)
        if is_figure(cell):
            hits = [k for k, (a, b) in enumerate(columns) if x0 < b and x1 > a]
        else:
            if not slots and x1 <= columns[0][0]:
                label.extend(cell)
                continue
            hits = [k for k, (a, b) in enumerate(columns) if a <= x0 and x1 <= b]
        if len(hits) != 1 or hits[0] <= last:
            return _one_line(cells)
        last = hits[0]
        slots[last] = cell
    return [label, *(slots.get(k, []) for k in range(len(columns)))]


def _paired_text_cells(rows: list[list[Cell]]) -> set[tuple[int, int]]:
    """(row, cell) positions of text cells, such as "n/a", that stand in a column: a text cell
    after the label of a labelled figure row whose horizontal extent chains, by overlaps, to a
    text cell of another such row."""
    items = []
    for r, row in enumerate(rows):
        if not row or is_figure(row[0]) or not any(map(is_figure, row)):
            continue
        for c in range(1, len(row)):
            if not is_figure(row[c]):
                x0, _, x1, _ = extent(row[c])
                items.append((x0, x1, r, c))
    items.sort(key=lambda item: item[0])
    found: set[tuple[int, int]] = set()
    cluster: list[tuple[int, int]] = []
    reach = 0.0

    def close() -> None:
        if len({r for r, _ in cluster}) > 1:
            found.update(cluster)

    for x0, x1, r, c in items:
        if cluster and x0 >= reach:
            close()
            cluster = []
        if not cluster:
            reach = x1
        cluster.append((r, c))
        reach = max(reach, x1)
    if cluster:
        close()
    return found


def _heading_bands(
    cells: list[Cell], columns: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Wider columns from a heading row with more cells than columns, when every column falls
    under exactly one heading cell and no heading cell covers two; else the columns as given."""
    if not columns or len(cells) <= len(columns):
        return columns
    spans = [extent(cell) for cell in cells]
    under = [[c for c in columns if c[0] < s[2] and s[0] < c[1]] for s in spans]
    if any(len(u) > 1 for u in under) or sum(len(u) for u in under) != len(columns):
        return columns
    wide = [
        (min([s[0], *(c[0] for c in u)]), max([s[2], *(c[1] for c in u)]))
        for s, u in zip(spans, under, strict=True)
    ]
    if all(a[1] <= b[0] for a, b in pairwise(wide)):
        return wide
    return columns


# -- the page ------------------------------------------------------------------------------


class _PageLines:
    """The page's text lines with their spans, in visual rows (lines at one height)."""

    def __init__(self, blocks: list[list[Line]], cells_as_read: bool = False) -> None:
        self.blocks = blocks
        self.cells_as_read = cells_as_read
        self.span: dict[Key, Span] = {}
        self.figure: dict[Key, bool] = {}
        for b, block in enumerate(blocks):
            for i, line in enumerate(block):
                self.span[b, i] = extent(line)
                self.figure[b, i] = is_figure(line)
        span = self.span
        rows: list[list[Key]] = []
        for key in sorted(span, key=lambda k: (span[k][1], span[k][0])):
            if rows and on_one_line(span[rows[-1][0]], span[key]):
                rows[-1].append(key)
            else:
                rows.append([key])
        for row in rows:
            row.sort(key=lambda k: span[k][0])
        self.rows = rows

    def line(self, key: Key) -> Line:
        return self.blocks[key[0]][key[1]]

    def beside(self, row: list[Key]) -> bool:
        """Two or more lines, left to right without overlapping (BESIDE_SLACK allowed)."""
        span = self.span
        return len(row) > 1 and all(
            span[a][2] <= span[b][0] + BESIDE_SLACK for a, b in pairwise(row)
        )

    def any_figure(self, row: list[Key]) -> bool:
        return any(self.figure[k] for k in row)

    def all_figures(self, row: list[Key]) -> bool:
        return all(self.figure[k] for k in row)

    def near_top(self, row: list[Key]) -> bool:
        return min(self.span[k][1] for k in row) < HEADER_BAND

    def table_row(self, row: list[Key]) -> bool:
        return not self.near_top(row) and self.beside(row) and self.any_figure(row)

    def short_heading(self, row: list[Key]) -> bool:
        return self.beside(row) and all(len(self.line(k)) <= SHORT_HEADING for k in row)

    def column_heading(self, row: list[Key]) -> bool:
        return self.beside(row) and all(len(self.line(k)) <= COLUMN_HEADING for k in row[1:])

    def first_figure_x(self, row: list[Key]) -> float:
        return min(self.span[k][0] for k in row if self.figure[k])

    def row_cells(self, row: list[Key]) -> list[Cell]:
        """The cells of a row: each line cut at wide gaps (``split_cells``). Read as a reader
        would (``cells_as_read``), a cell of currency signs joins the figure after it."""
        cells = [cell for k in row for cell in split_cells(self.line(k))]
        if not self.cells_as_read:
            return cells
        joined: list[Cell] = []
        for cell in cells:
            if joined and is_figure(cell) and _only_signs(joined[-1]):
                joined[-1] = joined[-1] + cell
            else:
                joined.append(cell)
        return joined

    def tables(self) -> list[tuple[int, list[int]]]:
        """Each number table as (its first row, its table rows), rows as indexes of ``rows``.

        Table rows chain into one table while every row between two of them is itself a table
        row, a short heading, all figures, or lies left of both rows' first figure (a heading
        in the label column). A chain of one row is no table. Then each table climbs to take
        its column headings, past lines in its label column, and stops at a line that crosses
        its first figure's left edge, at lines side by side that are no column heading, at
        the header band and at rows an earlier table took.
        """
        rows = self.rows
        chains: list[list[int]] = []
        for i, row in enumerate(rows):
            if not self.table_row(row):
                continue
            if chains:
                prev = chains[-1][-1]
                edge = min(self.first_figure_x(rows[prev]), self.first_figure_x(row)) + 0.5
                if all(self._joins(rows[r], edge) for r in range(prev + 1, i)):
                    chains[-1].append(i)
                    continue
            chains.append([i])
        taken: set[int] = set()
        plan: list[tuple[int, list[int]]] = []
        for chain in chains:
            if len(chain) < 2:
                continue
            top, last = chain[0], chain[-1]
            edge = self.first_figure_x(rows[top]) + 0.5
            r = top - 1
            while r >= 0 and r not in taken:
                row = rows[r]
                if self.near_top(row):
                    break
                if self.column_heading(row):
                    top = r
                else:
                    lead = self.span[row[0]]
                    if self.beside(row) or lead[0] < edge < lead[2]:
                        break
                r -= 1
            taken.update(range(top, last + 1))
            plan.append((top, chain))
        return plan

    def _joins(self, row: list[Key], edge: float) -> bool:
        return (
            self.table_row(row)
            or self.short_heading(row)
            or self.all_figures(row)
            or all(self.span[k][2] <= edge for k in row)
        )


def _is_mark(cell: Cell) -> bool:
    return _MARKS.fullmatch("".join(w.text for w in cell)) is not None


def _fold_marks(cells_of: dict[int, list[Cell]]) -> None:
    """Footnote marks join their labels (``cells_as_read``): a cell of only marks such as "(3)",
    "(1)(2)" or "® (1)", right after a row's text label, where no figure of the table stands
    (a figure below or above it would make "(3)" a small negative amount in a column)."""
    marks = [
        (r, extent(cells[1]))
        for r, cells in cells_of.items()
        if len(cells) > 1 and not is_figure(cells[0]) and _is_mark(cells[1])
    ]
    if not marks:
        return
    at = {r for r, _ in marks}
    figures = [
        extent(cell)
        for r, cells in cells_of.items()
        for c, cell in enumerate(cells)
        if is_figure(cell) and not (c == 1 and r in at)
    ]
    for r, (x0, _, x1, _) in marks:
        if not any(f[0] < x1 and x0 < f[2] for f in figures):
            cells = cells_of[r]
            cells_of[r] = [cells[0] + cells[1], *cells[2:]]


def _label_is_figure(cells: list[Cell], edge: float | None) -> bool:
    """A row that starts with a figure left of every labelled row's first figure (a year as a
    row label, say): that figure is the row's label."""
    return (
        edge is not None and len(cells) > 1 and is_figure(cells[0]) and extent(cells[0])[2] <= edge
    )


def _number_table(page: _PageLines, top: int, chain: list[int]) -> tuple[list[OutRow], list[int]]:
    """The output lines of one number table, and the page rows it spans."""
    rows = page.rows
    cells_of = {r: page.row_cells(rows[r]) for r in range(top, chain[-1] + 1)}
    if page.cells_as_read:
        _fold_marks(cells_of)
    grouped = [cells_of[r] for r in chain]
    edge = min(
        (
            extent(next(c for c in cells if is_figure(c)))[0]
            for cells in grouped
            if cells and not is_figure(cells[0]) and any(map(is_figure, cells))
        ),
        default=None,
    )
    texts = _paired_text_cells(grouped)
    numbered: list[list[Cell]] = []
    for r, cells in enumerate(grouped):
        skip = 1 if _label_is_figure(cells, edge) else 0
        numbered.append(
            [cells[c] for c in range(skip, len(cells)) if is_figure(cells[c]) or (r, c) in texts]
        )
    widest = max(map(len, numbered), default=0)
    labelled = [
        num
        for num, cells in zip(numbered, grouped, strict=True)
        if num and (not is_figure(cells[0]) or _label_is_figure(cells, edge))
    ]
    most = max(map(len, labelled), default=0)
    basis = [num for num in labelled if len(num) == most]
    if basis:
        columns = _majority_columns(basis)
        if columns:
            fitting = [num for num in numbered if len(num) == most and len(place(num, columns)) > 1]
            columns = _aligned_columns(fitting) or columns
    else:
        columns = _aligned_columns([num for num in numbered if len(num) == widest])
    # a heading row above the table may show a column that no row fills
    label_right = max((extent(c[0])[2] for c in grouped if c and not is_figure(c[0])), default=0)
    heading_row = -1
    for r in range(chain[0] - 1, top - 1, -1):
        cells = [c for c in cells_of[r] if extent(c)[2] > label_right]
        wide = _heading_bands(cells, columns)
        if wide != columns:
            heading_row, columns = r, wide
            break
    width = max(widest, len(columns))
    out: list[OutRow] = []
    for r in range(top, chain[-1] + 1):
        row = rows[r]
        line: OutRow = [page.line(k) for k in row]
        apart = False
        if (page.beside(row) and page.any_figure(row)) or page.all_figures(row):
            cells = cells_of[r]
            label_figure = _label_is_figure(cells, edge)
            if page.cells_as_read and not any(map(is_figure, cells)):
                line = _one_line(cells)  # only its footnote mark looked like a figure
            elif label_figure:
                slots = place(cells[1:], columns)
                line = [cells[0] + slots[0], *slots[1:]] if len(slots) > 1 else _one_line(cells)
            elif sum(map(is_figure, cells)) < width:
                line = place(cells, columns)
            elif all(map(is_figure, cells)):
                slots = place(cells, columns)
                apart = len(slots) == 1
                line = slots if apart else [[], *cells]
            else:
                # a full row with a label keeps its tabs when its figures fit the columns
                fits = len(place([c for c in cells if is_figure(c)], columns)) > 1
                first = next(i for i, c in enumerate(cells) if is_figure(c))
                if fits and all(map(is_figure, cells[first:])):
                    line = [_joined(cells[:first]), *cells[first:]]
                else:
                    line = _one_line(cells)
            # a row of bare figures and signs that fits nowhere is fenced off by blank lines
            if not label_figure and len(line) == 1 and all(map(_only_figure_chars, cells)):
                apart = True
        elif columns and page.beside(row):
            cells = cells_of[r]
            if r == heading_row:
                line = place(cells, columns)
            elif extent(cells[0])[2] <= columns[0][0]:
                slots = place(cells, columns)
                if r > chain[0] or len(slots) > 1:
                    line = slots
        if not labelled and len(line) > 1 and not line[0]:
            line = line[1:]  # no row has a label: no label slot
        if apart:
            out.extend([[], [], line, [], []])
        else:
            out.append(line)
    return out, list(range(top, chain[-1] + 1))


# -- ruled tables --------------------------------------------------------------------------


def _visual_lines(page: _PageLines, members: list[tuple[Key, int]]) -> list[Line]:
    """The words of one grid cell as visual lines, top to bottom, each left to right."""
    parts: dict[Key, Line] = {}
    for key, w in members:
        parts.setdefault(key, []).append(page.line(key)[w])
    ordered = sorted(parts.values(), key=lambda p: (extent(p)[1], extent(p)[0]))
    lines: list[Line] = []
    for part in ordered:
        if lines and on_one_line(extent(lines[-1]), extent(part)):
            lines[-1] = sorted([*lines[-1], *part], key=lambda w: w.x0)
        else:
            lines.append(part)
    return lines


def _side_by_side_lists(cells: list[list[Line]], walls: list[tuple[float, float]]) -> bool:
    """Whether two cells of a row are lists side by side (rows the page drew no rule between,
    such as names beside counts): both have LIST_LINES or more lines, as many as each other,
    line for line at one height, and neither cell wraps: every line could have taken the next
    line's first word within the cell's walls (less its left padding)."""

    def unwrapped(lines: list[Line], left: float, right: float) -> bool:
        limit = right - max(0.0, min(extent(line)[0] for line in lines) - left)
        for line, nxt in pairwise(lines):
            w = nxt[0]
            if extent(line)[2] + SPACE_WIDTH * (w.bottom - w.top) + (w.x1 - w.x0) > limit:
                return False
        return True

    tall = [
        (lines, left, right)
        for lines, (left, right) in zip(cells, walls, strict=True)
        if len(lines) >= LIST_LINES
    ]
    for (a, a0, a1), (b, b0, b1) in combinations(tall, 2):
        if (
            len(a) == len(b)
            and all(on_one_line(extent(x), extent(y)) for x, y in zip(a, b, strict=True))
            and unwrapped(a, a0, a1)
            and unwrapped(b, b0, b1)
        ):
            return True
    return False


def _ruled_table(
    page: _PageLines, grid: RuledTable, taken: set[Key]
) -> tuple[list[Key], list[OutRow]] | None:
    """The text lines inside a ruled table and its output lines, or None to leave the text as
    it is: when a line is only partly inside, already in a table, or a word is in no cell;
    when fewer than two rows have two filled cells; or when a row holds lists side by side."""
    bx0, btop, bx1, bbottom = grid.box
    keys: list[Key] = []
    members: dict[int, list[tuple[Key, int]]] = {}
    for b, block in enumerate(page.blocks):
        for i, line in enumerate(block):
            inside = [
                bx0 <= (w.x0 + w.x1) / 2 <= bx1 and btop <= (w.top + w.bottom) / 2 <= bbottom
                for w in line
            ]
            if not any(inside):
                continue
            if not all(inside) or (b, i) in taken:
                return None
            for k, w in enumerate(line):
                cell = grid.locate(w.x0, w.top, w.x1, w.bottom)
                if cell is None:
                    return None
                members.setdefault(cell, []).append(((b, i), k))
            keys.append((b, i))
    out: list[OutRow] = []
    filled_rows = 0
    for r in range(len(grid.row_band)):
        slots = grid.row_slots(r)
        contents = [
            _visual_lines(page, members.get(n, [])) if grid.cells[n].row == r else [] for n in slots
        ]
        if not any(contents):
            continue
        if len(slots) == 1:
            out.extend([line] for line in contents[0])
            continue
        walls = [(grid.cells[n].x0, grid.cells[n].x1) for n in slots]
        if _side_by_side_lists(contents, walls):
            return None
        filled_rows += sum(1 for c in contents if c) >= 2
        out.append([_joined(lines) for lines in contents])
    if filled_rows < 2:
        return None
    return keys, out


# -- assembly ------------------------------------------------------------------------------


def compose(
    blocks: list[list[Line]], grids: Sequence[RuledTable] = (), cells_as_read: bool = False
) -> list[Block]:
    """The page's output blocks, in pdfminer's box order: prose lines as they are, each table
    written as a block of its rows where its first line appears.

    ``cells_as_read`` (reader option ``pdf_tables=cells-1``, see ``pdf.TABLE_READINGS``): the
    cells of number tables as a reader sees them: a currency sign with its amount
    (``_PageLines.row_cells``), a footnote mark with its label (``_fold_marks``)."""
    page = _PageLines(blocks, cells_as_read)
    owner: dict[Key, int] = {}
    tables: list[list[OutRow]] = []
    for top, chain in page.tables():
        rows_out, spanned = _number_table(page, top, chain)
        n = len(tables)
        tables.append(rows_out)
        for r in spanned:
            for key in page.rows[r]:
                owner[key] = n
    for grid in grids:
        found = _ruled_table(page, grid, set(owner))
        if found is not None:
            n = len(tables)
            tables.append(found[1])
            for key in found[0]:
                owner[key] = n
    out: list[Block] = []
    written: set[int] = set()
    for b, block in enumerate(blocks):
        prose: Block = []
        for i, line in enumerate(block):
            n = owner.get((b, i))
            if n is None:
                prose.append([line])
                continue
            if prose:
                out.append(prose)
                prose = []
            if n not in written:
                written.add(n)
                out.append(tables[n])
        if prose:
            out.append(prose)
    return out
