"""A table reader for the guards: rows and cells of tab-separated lines, the column header
over a cell, the row labels of a table, and the scale statement in force at a cell.

Built once per text (the guarded admitter caches it with groundgate's per-text helpers) and
read around one value; plain string work, no regular expression per candidate.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property

YEAR = re.compile(r"(?<![\d.,])(?:19|20)\d\d(?![\d,]|\.\d)")
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?")
# The day of a date in a column header ("April 26, 2019", "Sept. 30, 2025", "31 December
# 2019"): not a value.
_DATE_DAY = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:,|\b)"
    # written day first, "31 December 2019" (guard revision 6)
    r"|\b\d{1,2}\s+(?=(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s)",
    re.IGNORECASE,
)
# A footnote mark in a column header: "Adjustments (1)", "August 31, 2018 (3)",
# "penetration(2)(3)" (guard revision 5: such a line is still the table's header).
_FOOTNOTE = re.compile(r"\(\s*\d{1,2}\s*\)|(?<=[A-Za-z])\d(?![\d,.])")
# Scale statements, with the power of ten each states: "in thousands", "(dollars in
# millions)", "millions of dollars", "$'000", "£m" (a sign and a scale letter on their own).
_WORD_POWER = {"thousand": 3, "million": 6, "billion": 9}
_LETTER_POWER = {"k": 3, "000": 3, "'000": 3, "’000": 3, "m": 6, "mn": 6, "bn": 9}
_STATEMENTS = re.compile(
    r"\bin\s+(?:[$€£]\s*|(?:u\.?s\.?\s+)?dollars\s+|usd\s+|euros?\s+|pounds\s+)?"
    r"(?P<w1>thousand|million|billion)s?\b"
    r"|\b(?P<w2>thousand|million|billion)s\s+of\s+(?:u\.?s\.?\s+)?(?:dollars|euros|pounds|usd)\b"
    r"|(?<![\w.,])[$€£]\s?(?P<l1>'000|’000|000|k|m|mn|bn)(?![\w'’])"
    r"|\((?P<l2>'000|’000|000)s?\)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Statement:
    start: int
    end: int
    power: int
    line: int


@dataclass(frozen=True, slots=True)
class InForce:
    """The scale in force at a cell: its power, the statement, and where it stands."""

    power: int
    start: int
    end: int
    where: str  # "column header", "table header", "row label", "caption", "document"


@dataclass(frozen=True, slots=True)
class Cell:
    line: int
    slot: int
    slots: int
    label: str | None  # the row's label (its first slot), when it has letters
    column_year: str | None  # the one year of the header slot over the cell
    header_line: int | None
    header_years: frozenset[str]  # every year of that header line
    block: tuple[int, int]  # first and last line of the table


def fold_label(text: str) -> str:
    return " ".join(text.replace("\u00a0", " ").split()).casefold().rstrip(":").strip()


class TableView:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = []
        pos = 0
        for line in text.split("\n"):
            self.starts.append(pos)
            pos += len(line) + 1
        self.n = len(self.starts)
        # per line, built when first read (a value's table is read by every candidate in it)
        self._slots: dict[int, list[tuple[int, int]]] = {}
        self._header: dict[int, bool] = {}
        self._labels: dict[tuple[int, int], list[tuple[int, str]]] = {}

    def span(self, n: int) -> tuple[int, int]:
        end = self.starts[n + 1] - 1 if n + 1 < self.n else len(self.text)
        return self.starts[n], end

    def line_text(self, n: int) -> str:
        s, e = self.span(n)
        return self.text[s:e]

    def line_of(self, pos: int) -> int:
        return bisect_right(self.starts, pos) - 1

    def tabbed(self, n: int) -> bool:
        return "\t" in self.line_text(n)

    def blank(self, n: int) -> bool:
        return not self.line_text(n).strip()

    def slots(self, n: int) -> list[tuple[int, int]]:
        got = self._slots.get(n)
        if got is None:
            s, _ = self.span(n)
            got = []
            for part in self.line_text(n).split("\t"):
                got.append((s, s + len(part)))
                s += len(part) + 1
            self._slots[n] = got
        return got

    def block(self, n: int) -> tuple[int, int]:
        """The run of tab lines holding line ``n``."""
        lo = hi = n
        while lo > 0 and self.tabbed(lo - 1):
            lo -= 1
        while hi + 1 < self.n and self.tabbed(hi + 1):
            hi += 1
        return lo, hi

    def label(self, n: int) -> str | None:
        s, e = self.slots(n)[0]
        text = self.text[s:e].strip()
        return text if any(ch.isalpha() for ch in text) else None

    def header_like(self, n: int) -> bool:
        """A line of column headers: no number on it but years (and a statement's 000, and
        the day of a date: "April 26, 2019" heads the 2019 column)."""
        got = self._header.get(n)
        if got is None:
            got = True
            for s, e in self.slots(n)[1:]:
                cell = _FOOTNOTE.sub(" ", _DATE_DAY.sub(" ", _STATEMENTS.sub(" ", self.text[s:e])))
                if any(not YEAR.fullmatch(m.group()) for m in _NUMBER.finditer(cell)):
                    got = False
                    break
            self._header[n] = got
        return got

    def years_in(self, s: int, e: int) -> list[str]:
        return YEAR.findall(self.text[s:e])

    def number_in_a_cell(self, number: str) -> bool:
        """A value cell of some table (a tab line that is not a header line) holds the
        number ``number`` as a whole token."""
        got = self.__dict__.setdefault("_cell_numbers", {})
        if number not in got:
            found = False
            for m in re.finditer(rf"(?<![\w.,]){re.escape(number)}(?![\w,]|\.\d)", self.text):
                n = self.line_of(m.start())
                if self.tabbed(n) and not self.header_like(n):
                    found = True
                    break
            got[number] = found
        return got[number]

    def unbracketed_cell(self, number: str, other_than: int) -> bool:
        """A value cell of some table (a tab line that is not a header line), other than the
        one at ``other_than``, holds ``number`` as a whole token, not in brackets."""
        for m in re.finditer(rf"(?<![\w.,]){re.escape(number)}(?![\w,]|\.\d)", self.text):
            if m.start() == other_than:
                continue
            n = self.line_of(m.start())
            if self.tabbed(n) and not self.header_like(n) and not self.bracketed(*m.span()):
                return True
        return False

    def cell(self, pos: int) -> Cell | None:
        """The table cell at ``pos``, or None outside a table (a line without a tab)."""
        n = self.line_of(pos)
        if not self.tabbed(n):
            return None
        slots = self.slots(n)
        slot = next((i for i, (s, e) in enumerate(slots) if s <= pos <= e), len(slots) - 1)
        block = self.block(n)
        header, year, years = None, None, frozenset()
        for h in range(n - 1, block[0] - 1, -1):
            hslots = self.slots(h)
            if len(hslots) != len(slots) or not self.header_like(h):
                continue
            found = [self.years_in(s, e) for s, e in hslots]
            if sum(len(f) for f in found[1:]) < 1:
                continue
            header = h
            all_years = [y for f in found[1:] for y in f]
            years = frozenset(all_years)
            mine = found[slot]
            # one year over one column only: a year spread over two columns names neither
            if len(mine) == 1 and all_years.count(mine[0]) == 1:
                year = mine[0]
            break
        return Cell(n, slot, len(slots), self.label(n), year, header, years, block)

    def row_labels(self, block: tuple[int, int]) -> list[tuple[int, str]]:
        out = self._labels.get(block)
        if out is None:
            out = []
            for n in range(block[0], block[1] + 1):
                label = self.label(n)
                if label is not None:
                    out.append((n, fold_label(label)))
            self._labels[block] = out
        return out

    # --- scale statements ------------------------------------------------------------------

    @cached_property
    def statements(self) -> list[Statement]:
        out = []
        for m in _STATEMENTS.finditer(self.text):
            word = m.group("w1") or m.group("w2")
            if word:
                power = _WORD_POWER[word.lower()]
            else:
                letter = (m.group("l1") or m.group("l2")).lower()
                power = _LETTER_POWER[letter]
            out.append(Statement(m.start(), m.end(), power, self.line_of(m.start())))
        return out

    def _in_column_header(self, st: Statement) -> bool:
        """The statement stands in a value column's slot of a tab line (``Shares (in
        thousands)`` over one column): it scales that column, not the document."""
        if not self.tabbed(st.line):
            return False
        return any(s <= st.start and st.end <= e for s, e in self.slots(st.line)[1:])

    @cached_property
    def document_statements(self) -> list[Statement]:
        """The statements whose scope can be the whole text: captions, prose, a row label
        slot; not a statement over one column of a table."""
        return [s for s in self.statements if not self._in_column_header(s)]

    @cached_property
    def document_power(self) -> int | None:
        """The one power every statement of the text states (None: none, or several).
        A statement over one column of a table scales that column only, so it does not make
        a document scale (nor does it stop one)."""
        powers = {s.power for s in self.document_statements}
        return powers.pop() if len(powers) == 1 else None

    @cached_property
    def _statements_by_line(self) -> dict[int, list[Statement]]:
        out: dict[int, list[Statement]] = {}
        for s in self.statements:
            out.setdefault(s.line, []).append(s)
        return out

    def _on_line(self, n: int, lo: int | None = None, hi: int | None = None) -> list[Statement]:
        # by line: a value's table is read for every candidate in it, and a long filing
        # states its scale many times
        return [
            s
            for s in self._statements_by_line.get(n, ())
            if (lo is None or s.start >= lo) and (hi is None or s.end <= hi)
        ]

    def scale_in_force(
        self, cell: Cell, caption_lines: int, document_scale: bool
    ) -> InForce | None:
        """The nearest statement that governs the cell: its column's header, a header line of
        its table above it, its own row label, a caption just above the table, else the one
        scale the whole text states."""
        slots = self.slots(cell.line)
        for h in range(cell.line - 1, cell.block[0] - 1, -1):
            if not self.header_like(h):
                continue
            hslots = self.slots(h)
            found = self._on_line(h)
            if len(hslots) == len(slots):
                s, e = hslots[cell.slot]
                mine = [st for st in found if s <= st.start and st.end <= e]
                if mine:
                    return InForce(mine[0].power, mine[0].start, mine[0].end, "column header")
                # a statement over another column scales that column; it reaches this one
                # only when this column's header names nothing of its own
                if any(ch.isalpha() for ch in self.text[s:e]):
                    found = [st for st in found if not self._in_slot_other_than(st, hslots, 0)]
            if found:
                return InForce(found[0].power, found[0].start, found[0].end, "table header")
        s, e = slots[0]
        found = self._on_line(cell.line, s, e)
        if found:
            return InForce(found[0].power, found[0].start, found[0].end, "row label")
        n, seen = cell.block[0] - 1, 0
        while n >= 0 and seen < caption_lines and not self.tabbed(n):
            if not self.blank(n):
                seen += 1
                found = self._on_line(n)
                if found:
                    last = found[-1]
                    return InForce(last.power, last.start, last.end, "caption")
            n -= 1
        if document_scale and self.document_power is not None:
            first = self.document_statements[0]
            return InForce(first.power, first.start, first.end, "document")
        return None

    @staticmethod
    def _in_slot_other_than(st: Statement, slots: list[tuple[int, int]], keep: int) -> bool:
        return any(s <= st.start and st.end <= e for i, (s, e) in enumerate(slots) if i != keep)

    def bracketed(self, start: int, end: int) -> bool:
        """The number at [start, end) is written in brackets: ``(2,088)``, ``$(2,088)``,
        ``( 2,088 )``, on one line."""
        text = self.text
        j = start
        while j > 0 and text[j - 1] in " $€£\u00a0":
            j -= 1
        if j == 0 or text[j - 1] != "(":
            return False
        k = end
        while k < len(text) and text[k] in " \u00a0":
            k += 1
        return k < len(text) and text[k] == ")"

    def percent_after(self, end: int) -> bool:
        after = self.text[end : end + 9]
        return after.startswith(("%", " %", "\u00a0%")) or after.lower().startswith(
            (" percent", "percent")
        )
