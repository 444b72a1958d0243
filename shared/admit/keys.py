"""Key mentions and the keys at a value (SPEC §4.5); alias mentions use the same matching.

A :class:`Mentions` finds every mention of one list of words in a text once (a C-speed regex
over the folded text), then answers "mentions in [s, e)" and "the nearest mention before"
with bisects.
"""

from __future__ import annotations

import itertools
import re
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from groundswell.shared.admit.index import TextIndex
from groundswell.shared.admit.text import fold

DASHES = "-\u2010\u2011\u2012\u2013"
_DASH_CLASS = "[" + re.escape(DASHES) + "]"
_WS_ONLY = re.compile(r"\s*")


def _word_pattern(word: str) -> str:
    """A key or alias as a pattern over folded text (§4.5): any whitespace run for a
    whitespace run, any dash for a dash, and a dash between letters may break a line."""
    folded = fold(word.strip())
    out = []
    i = 0
    n = len(folded)
    while i < n:
        ch = folded[i]
        if ch.isspace():
            j = i
            while j < n and folded[j].isspace():
                j += 1
            out.append(r"\s+")
            i = j
            continue
        if ch in DASHES:
            between_letters = (
                i > 0 and folded[i - 1].isalpha() and i + 1 < n and folded[i + 1].isalpha()
            )
            if between_letters:
                out.append("(?:" + _DASH_CLASS + r"(?:[ \r]*\n[ \r]*)?)")
            else:
                out.append(_DASH_CLASS)
            i += 1
            continue
        out.append(re.escape(ch))
        i += 1
    return "".join(out) + r"(?![^\W_])"


@dataclass(frozen=True, slots=True)
class Mention:
    start: int
    end: int
    word: str  # the key or alias as the schema writes it


class Mentions:
    """Every mention of ``words`` in one text, longest kept where one contains another."""

    def __init__(self, index: TextIndex, words: list[str]) -> None:
        self.index = index
        self.words = list(words)
        found: list[Mention] = []
        folded = index.folded
        for word in words:
            # The pattern starts with the word itself (a fast literal search); the letter or
            # digit before a mention is checked here.
            for m in re.finditer(_word_pattern(word), folded):
                at = m.start()
                if at > 0 and folded[at - 1].isalnum():
                    continue
                found.append(Mention(at, m.end(), word))
        found.sort(key=lambda m: (m.start, -m.end))
        kept: list[Mention] = []
        for m in found:
            # Drop a mention that lies inside a longer one.
            if any(k.start <= m.start and m.end <= k.end and k != m for k in kept[-8:]):
                continue
            kept.append(m)
        # A later, longer mention can contain an earlier kept one that starts at the same place.
        final = [
            m
            for i, m in enumerate(kept)
            if not any(
                o.start <= m.start and m.end <= o.end and (o.end - o.start) > (m.end - m.start)
                for o in kept[max(0, i - 8) : i + 8]
            )
        ]
        self.mentions = final
        self._starts = array("q", (m.start for m in final))
        self._ends_sorted = sorted(range(len(final)), key=lambda i: final[i].end)

    def within(self, s: int, e: int) -> list[Mention]:
        """Mentions wholly inside [s, e)."""
        i = bisect_left(self._starts, s)
        out = []
        while i < len(self.mentions) and self.mentions[i].start < e:
            m = self.mentions[i]
            if m.end <= e:
                out.append(m)
            i += 1
        return out

    def overlapping(self, s: int, e: int) -> list[Mention]:
        i = max(0, bisect_left(self._starts, s) - 8)
        out = []
        while i < len(self.mentions) and self.mentions[i].start < e:
            m = self.mentions[i]
            if m.end > s:
                out.append(m)
            i += 1
        return out

    @cached_property
    def _by_end(self) -> tuple[array, list[Mention]]:
        order = sorted(self.mentions, key=lambda m: (m.end, m.start))
        return array("q", (m.end for m in order)), order

    def nearest_before(self, pos: int) -> Mention | None:
        """The mention that ends nearest at or before ``pos``."""
        ends, order = self._by_end
        k = bisect_right(ends, pos)
        return order[k - 1] if k > 0 else None


class KeyReader:
    """The keys at a value (§4.5) and the column rule, for one keyed field in one text."""

    def __init__(self, admitter: Any, index: TextIndex, keys: list[str]) -> None:
        self.a = admitter
        self.index = index
        self.keys = keys
        self.mentions: Mentions = admitter.mentions(index, keys)

    # --- runs and headers -----------------------------------------------------------------

    @cached_property
    def runs(self) -> list[list[Mention]]:
        """Runs of mentions with only whitespace and no key break between neighbours."""
        text = self.index.text
        out: list[list[Mention]] = []
        for m in self.mentions.mentions:
            if out:
                last = out[-1][-1]
                gap = text[last.end : m.start]
                if m.start >= last.end and not gap.strip() and not _KEY_BREAK.search(gap):
                    out[-1].append(m)
                    continue
            out.append([m])
        return out

    @cached_property
    def _run_of(self) -> dict[int, int]:
        return {m.start: i for i, run in enumerate(self.runs) for m in run}

    def run_of(self, m: Mention) -> list[Mention]:
        return self.runs[self._run_of[m.start]]

    def _line_has_tab(self, n: int) -> bool:
        return bool(self.a.lines(self.index).has_tab[n])

    @cached_property
    def header_mentions(self) -> set[int]:
        """Starts of mentions that belong to a header: they never act as prose headings."""
        index = self.index
        text = index.text
        out: set[int] = set()
        for run in self.runs:
            distinct = {m.word for m in run}
            lines = {index.line_number(m.start) for m in run} | {
                index.line_number(m.end) for m in run
            }
            tabbed = any(self._line_has_tab(n) for n in lines)
            if len(distinct) >= 2:
                first_line0, _ = index.line_of(run[0].start)
                _, last_line1 = index.line_of(run[-1].end)
                only_keys = (
                    not text[first_line0 : run[0].start].strip()
                    and not text[run[-1].end : last_line1].strip()
                )
                if only_keys or tabbed:
                    out.update(m.start for m in run)
        # A tabbed line with two or more distinct keys.
        by_line: dict[int, list[Mention]] = {}
        for m in self.mentions.mentions:
            by_line.setdefault(index.line_number(m.start), []).append(m)
        for n, ms in by_line.items():
            if self._line_has_tab(n) and len({m.word for m in ms}) >= 2:
                out.update(m.start for m in ms)
        for block in self.mixed_blocks:
            out.update(m.start for m in block)
        return out

    @cached_property
    def mixed_blocks(self) -> list[list[Mention]]:
        """Mixed header blocks (§4.5): key-bearing lines, one of them tabbed, two keys."""
        index = self.index
        text = index.text
        lines_obj = self.a.lines(index)
        by_line: dict[int, list[Mention]] = {}
        for m in self.mentions.mentions:
            by_line.setdefault(index.line_number(m.start), []).append(m)
        blocks: list[list[Mention]] = []
        current: list[int] = []

        def close() -> None:
            if len(current) >= 2:
                ms = [m for n in current for m in by_line[n]]
                if len({m.word for m in ms}) >= 2 and any(lines_obj.has_tab[n] for n in current):
                    blocks.append(ms)

        for n in sorted(by_line):
            l0, l1 = index.line_span(n)
            ms = by_line[n]
            rest = _outside(text, l0, l1, ms)
            if lines_obj.has_tab[n]:
                ok = not _has_number_outside(index, l0, l1, ms)
            else:
                ok = not rest.strip()
            if not ok:
                close()
                current = []
                continue
            if current:
                gap_lines = range(current[-1] + 1, n)
                blanks = sum(1 for k in gap_lines if lines_obj.blank(k))
                if blanks != len(gap_lines) or blanks > 1:
                    close()
                    current = []
            current.append(n)
        close()
        return blocks

    # --- the keys at a value --------------------------------------------------------------

    def keys_at(self, start: int, end: int) -> set[str]:
        index = self.index
        s0, s1 = index.sentence_of(start)
        in_sentence = self.mentions.within(s0, s1)
        if self._table_sentence(s0, s1, in_sentence, start):
            l0, l1 = index.line_of(start)
            l0, l1 = max(l0, s0), min(l1, s1)
            return {m.word for m in in_sentence if m.start >= l0 and m.end <= l1}
        if in_sentence:
            return {m.word for m in in_sentence}
        m = self.mentions.nearest_before(start)
        if m is None:
            return set()
        if m.start in self.header_mentions:
            return set()
        if index.key_break_between(m.end, start):
            return set()
        if index.label_line_between(m.end, s0) and not self._title_reaches(m, start):
            return set()
        return {m.word}

    def _table_sentence(self, s0: int, s1: int, mentions: list[Mention], value_start: int) -> bool:
        if len({m.word for m in mentions}) >= 2 and self.index.line_breaks_in(s0, s1) >= 3:
            return True
        headers = self.header_mentions
        return any(m.start in headers and m.end <= value_start for m in mentions)

    def _title_reaches(self, m: Mention, value_start: int) -> bool:
        """#250: a title key reaches a table with one number column below it."""
        index = self.index
        text = index.text
        if "\f" in text[m.end : value_start]:
            return False
        v0, _ = index.line_of(value_start)
        if text.find("\t", v0, value_start) == -1:
            return False
        first = index.line_number(m.start) + 1
        last = index.line_number(value_start)
        for number in range(first, last + 1):
            l0, l1 = index.line_span(number)
            tab = text.find("\t", l0, l1)
            if tab != -1 and len(index.tokens_in(tab, l1)) > 1:
                return False
        return True

    # --- the column rule (§4.5) -----------------------------------------------------------

    def column_rule(self, ctx: Any, m: Any) -> bool:
        """A passing key item puts its key at a table value (KEY_CITED)."""
        cp = self.a.checked
        t = m.token
        if t is None or ctx.key is None:
            return False
        field_span = self._row_field_item(ctx, m)
        if field_span is None:
            return False
        key_span, _ = cp.locate(ctx, ctx.key, m)
        if key_span is None:
            return False
        key = ctx.cand.get("key")
        mine = [x for x in self.mentions.within(*key_span) if x.word == key]
        if not mine:
            return False
        mention = mine[0]
        run = self.run_of(mention)
        n = run.index(mention) + 1
        index = self.index
        text = index.text
        fs, fe = field_span
        header_end = run[-1].end
        # 1. The header ends before the field item; its first slot and its tabs are clean.
        if header_end > fs or not self._clean_header(run):
            return False
        if any(x in self.mixed_blocks_flat for x in run):
            return False
        # 2. No mention between the header and the field item; no key break up to the value.
        if any(x.start >= header_end and x.end <= fs for x in self.mentions.within(header_end, fs)):
            return False
        if index.key_break_between(header_end, t.start):
            return False
        # 3. No number token on the field item's line between it and the value without a tab.
        _, fl1 = index.line_of(fs)
        for tok in index.tokens_in(fe, min(fl1, t.start)):
            if "\t" not in text[fe : tok.start]:
                return False
        # 4. On one line, a tab between the field item and the value.
        same_line = index.line_number(fs) == index.line_number(t.start)
        if same_line and "\t" not in text[fe : t.start]:
            return False
        # 5, 6. The value's token is the n-th cell after the field item.
        cells = self.a.tables(index).cells_between(ctx, fe, t)
        if cells is None:
            return False
        ordinal = next((i + 1 for i, c in enumerate(cells) if c[0] == t.start), None)
        return ordinal == n

    @cached_property
    def mixed_blocks_flat(self) -> list[Mention]:
        return [m for block in self.mixed_blocks for m in block]

    def _row_field_item(self, ctx: Any, m: Any) -> tuple[int, int] | None:
        """The first passing field item, when it is at the value's row."""
        cp = self.a.checked
        text = self.index.text
        for item in ctx.fields:
            span, verbatim = cp.locate(ctx, item, m)
            if span is None or not verbatim or not cp.field_item_check(ctx, span, m):
                continue
            if _LETTER.search(text, span[1], m.start):
                return None
            return span
        return None

    def _clean_header(self, run: list[Mention]) -> bool:
        index = self.index
        text = index.text
        first = run[0]
        n = index.line_number(first.start)
        lines = {index.line_number(x.start) for x in run} | {index.line_number(x.end) for x in run}
        tabbed = any(self._line_has_tab(k) for k in lines)
        if tabbed:
            if len(lines) != 1:
                return False
            for a, b in itertools.pairwise(run):
                gap = text[a.end : b.start]
                if gap.count("\t") != 1 or gap.strip(" \r\t"):
                    return False
            l0, l1 = index.line_span(n)
            tab = text.find("\t", l0, l1)
            in_slot = self.mentions.within(l0, tab)
            if in_slot:
                # A first slot with a key: a data slot only when it holds just that key.
                if len(in_slot) != 1 or _outside(text, l0, tab, in_slot).strip():
                    return False
                return in_slot[0] == first and not text[l0 : first.start].strip(" \r")
            # Otherwise the first key is in the first data slot, with only spaces before it.
            head = text[tab + 1 : first.start]
            return not head.strip(" \r") and "\t" not in head
        return True


def _has_number_outside(index: TextIndex, l0: int, l1: int, mentions: list[Mention]) -> bool:
    for t in index.tokens_in(l0, l1):
        if not any(m.start <= t.start and t.end <= m.end for m in mentions):
            return True
    return False


_KEY_BREAK = re.compile(r"\n[ \t\r]*\n[ \t\r]*\n")
_LETTER = re.compile(r"[^\W\d_]")


def _outside(text: str, l0: int, l1: int, mentions: list) -> str:
    """The text of [l0, l1) outside the given mentions."""
    parts = []
    pos = l0
    for m in sorted(mentions, key=lambda m: m.start):
        parts.append(text[pos : m.start])
        pos = max(pos, m.end)
    parts.append(text[pos:l1])
    return "".join(parts)
