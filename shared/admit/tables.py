"""Tables kept as text: headings over tab rows (§4.1, §4.3), label cells and unit places
(§4.6), cells and the column rule (§4.5).

Everything here is read line by line around one value; the per-text line structure (which
lines hold a tab, where each table block starts, which lines hold a heading) is built once.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from groundswell.shared.admit.index import TextIndex, Token
from groundswell.shared.admit.text import fold

if TYPE_CHECKING:
    from groundswell.shared.admit.engine import Admitter
    from groundswell.shared.admit.items import Ctx, Match

_WORDISH = r"[^\W_]"
_DASHES = ("-", "\u2013", "\u2014")
_IN_WORD = re.compile(r"in[^\S\n]+")
_SENTENCE_MARK = re.compile(r"[.;]\s|\u2022|\n[ \t\r]*\n")


@dataclass(frozen=True, slots=True)
class Heading:
    line: int
    start: int
    end: int
    kind: str  # "scale" (in thousands), "header" (currency scale), "statement"
    power: int | None = None
    form: str | None = None  # a header's form: its sign with the letters before it
    code: str | None = None  # a statement's currency


class Lines:
    """Which lines of a text hold a tab, are blank, and where each block of tab lines starts."""

    def __init__(self, index: TextIndex) -> None:
        self.index = index
        text = index.text
        count = index.line_count
        has_tab = bytearray(count)
        if "\t" in text:
            for n, line in enumerate(text.split("\n")):
                if "\t" in line:
                    has_tab[n] = 1
        self.has_tab = has_tab
        block = array("q", [0]) * count
        for n in range(count):
            block[n] = block[n - 1] if n > 0 and has_tab[n] and has_tab[n - 1] else n
        self.block_start = block

    def blank(self, n: int) -> bool:
        s, e = self.index.line_span(n)
        return not self.index.text[s:e].strip(" \t\r")

    def empty(self, n: int) -> bool:
        """Only whitespace of any kind (no-break spaces too): a heading reaches past it."""
        s, e = self.index.line_span(n)
        return not self.index.text[s:e].strip()


class Headings:
    """Heading scales and heading units of one text, and what reaches a token (§4.1, §4.3)."""

    def __init__(self, admitter: Admitter, index: TextIndex) -> None:
        self.a = admitter
        self.index = index
        self.lines = admitter.lines(index)

    @cached_property
    def by_line(self) -> dict[int, list[Heading]]:
        idx = self.index
        text = idx.text
        folded = idx.folded
        vocab = self.a.vocab
        out: dict[int, list[Heading]] = {}

        def add(h: Heading) -> None:
            out.setdefault(h.line, []).append(h)

        words = sorted({fold(w) for w in vocab.scale_words}, key=len, reverse=True)
        powers = {fold(w): p for w, p in vocab.scale_words.items()}
        tail = r"(?!" + _WORDISH + ")"
        scale_alts = "|".join(re.escape(w) for w in words)
        scale_re = re.compile("(" + scale_alts + ")s?" + tail) if words else None
        # One alternation of every currency name and code; a group per currency.
        groups: list[str] = []
        codes: list[str] = []
        for code, (names, _) in vocab.heading_units.items():
            alts = [r"[^\S\n]+".join(re.escape(w) for w in fold(n).split()) for n in names]
            alts.append(re.escape(fold(code)))
            groups.append("(" + "|".join(sorted(alts, key=len, reverse=True)) + ")")
            codes.append(code)
        of_part = "(?:(?:" + scale_alts + r")s?[^\S\n]+of[^\S\n]+)?" if words else ""
        statement_re = (
            re.compile(of_part + "(?:" + "|".join(groups) + ")" + tail) if groups else None
        )
        has_tab = self.lines.has_tab
        # Headings start with "in": find each "in" once (a literal search), then read on.
        for m in _IN_WORD.finditer(folded):
            at = m.start()
            if at > 0 and folded[at - 1].isalnum():
                continue
            n = idx.line_number(at)
            if has_tab[n]:
                continue
            if scale_re is not None:
                sm = scale_re.match(folded, m.end())
                if sm is not None and idx.line_number(sm.end()) == n:
                    add(Heading(n, at, sm.end(), "scale", powers[sm.group(1)]))
            if statement_re is None:
                continue
            st = statement_re.match(folded, m.end())
            if st is None or idx.line_number(st.end()) != n:
                continue
            k = next(i for i, g in enumerate(st.groups()) if g is not None)
            code = codes[k]
            matched = text[st.start(k + 1) : st.end(k + 1)]
            if fold(matched) == fold(code) and matched != code:
                continue  # a code matches in capitals only
            add(Heading(n, at, st.end(), "statement", code=code))
        for s, e, power in self.a.currency_scales.all_in(text):
            j = s
            while j > 0 and text[j - 1].isalpha():
                j -= 1
            add(Heading(idx.line_number(s), s, e, "header", power, form=text[j : s + 1]))
        for hs in out.values():
            hs.sort(key=lambda h: h.start)
        return out

    def reaching(self, t: Token) -> list[Heading]:
        """The headings that reach the token's line (§4.1)."""
        n = self.index.line_number(t.start)
        if not self.lines.has_tab[n] or not self.by_line:
            return []
        return self._reaching_line(n)

    @cached_property
    def _memo(self) -> dict[int, list[Heading]]:
        return {}

    def _reaching_line(self, n: int) -> list[Heading]:
        """Headings reaching tab line ``n``: those before its block (past blank lines) and
        those on earlier lines of the block. Kept per line, so a long table costs once."""
        memo = self._memo
        got = memo.get(n)
        if got is not None:
            return got
        lines = self.lines
        b = lines.block_start[n]
        k = n
        while k > b and (k - 1) not in memo:
            k -= 1
        if k == b:
            above = b - 1
            while above >= 0 and lines.empty(above) and not lines.has_tab[above]:
                above -= 1
            current = (
                list(self.by_line.get(above, [])) if above >= 0 and not lines.has_tab[above] else []
            )
            memo[b] = current
        else:
            current = memo[k - 1]
        for line in range(k + 1 if k == b else k, n + 1):
            extra = self.by_line.get(line - 1)
            current = current + extra if extra else current
            memo[line] = current
        return memo[n]

    def scale_reaches(self, t: Token) -> bool:
        return any(h.kind in ("scale", "header") for h in self.reaching(t))

    def units_reaching(self, t: Token) -> list[Heading]:
        return [h for h in self.reaching(t) if h.kind in ("header", "statement")]

    def allows(self, h: Heading) -> set[str]:
        table = self.a.table.units
        if h.kind == "statement":
            assert h.code is not None
            return {h.code}
        form = h.form or ""
        out = {code for code, (prefixes, _) in table.items() if form in prefixes}
        if len(form) == 1:
            out |= {c for c, (_, sign) in self.a.vocab.heading_units.items() if sign == form}
        return out

    def known(self, h: Heading) -> bool:
        return h.kind == "statement" or bool(self.allows(h))

    def is_currency_unit(self, unit: str) -> bool:
        if unit in self.a.vocab.heading_units:
            return True
        signs = set(self.a.vocab.currency_signs)
        prefixes = self.a.table.units.get(unit, ([], []))[0]
        return any(p and p[-1] in signs for p in prefixes)

    def conflict(self, t: Token, unit: str) -> bool:
        """A heading conflict at the token (§4.3, #365)."""
        if not self.by_line or not self.is_currency_unit(unit):
            return False
        return any(self.known(h) and unit not in self.allows(h) for h in self.units_reaching(t))

    def heading_currency(self, t: Token, unit: str) -> bool:
        """The token's heading currency is ``unit`` (§4.3)."""
        heads = [h for h in self.units_reaching(t) if self.known(h)]
        if not heads or any(unit not in self.allows(h) for h in heads):
            return False
        prefixes = self.a.table.units.get(unit, ([], []))[0]
        return any(h.kind == "statement" or h.form in prefixes for h in heads)

    def item_holds_heading_unit(self, s: int, e: int, t: Token) -> bool:
        return any(s <= h.start and h.end <= e for h in self.units_reaching(t))

    def report(self, t: Token) -> tuple[list[dict[str, Any]], list[str], list[str]]:
        """§5 evidence_units: headers, statements and currency for a token."""
        table = self.a.table.units
        limit = max((len(p) for prefixes, _ in table.values() for p in prefixes), default=0) + 8
        headers: dict[str, dict[str, Any]] = {}
        statements: set[str] = set()
        for h in self.units_reaching(t):
            if h.kind == "statement":
                assert h.code is not None
                statements.add(h.code)
                continue
            form = h.form or ""
            cut = len(form) > limit
            shown = form[-limit:] if cut else form
            entry = headers.setdefault(shown, {"form": shown, "allows": []})
            entry["allows"] = sorted(set(entry["allows"]) | self.allows(h))
            if cut:
                entry["cut"] = True
        codes = set(table) | set(self.a.vocab.heading_units)
        currency = sorted(c for c in codes if self.heading_currency(t, c))
        return (
            [headers[k] for k in sorted(headers)],
            sorted(statements),
            currency,
        )


class Tables:
    """Label cells, unit places and the column rule in one text."""

    def __init__(self, admitter: Admitter, index: TextIndex) -> None:
        self.a = admitter
        self.index = index
        self.lines = admitter.lines(index)
        self._unit_table: dict[int, int] = {}  # the first line of each value line's table

    # --- label cells (§4.6, #316) -----------------------------------------------------------

    def _slots(self, n: int) -> tuple[int, int, int] | None:
        """(line start, first tab, end of the answer slot) of a line that holds a tab."""
        if not self.lines.has_tab[n]:
            return None
        s, e = self.index.line_span(n)
        text = self.index.text
        tab = text.find("\t", s, e)
        nxt = text.find("\t", tab + 1, e)
        return s, tab, (nxt if nxt != -1 else e)

    def label_cell(self, ctx: Ctx, span: tuple[int, int], m: Match) -> bool:
        idx = self.index
        if m.token is None:
            return False
        n = idx.line_number(span[0])
        slots = self._slots(n)
        if slots is None:
            return False
        l0, tab, ans_end = slots
        s, e = span
        t = m.token
        if not (l0 <= s and e <= tab and tab < t.start and t.end <= ans_end):
            return False
        if idx.line_number(t.start) != n:
            return False
        if idx.has_token_between(e, t.start):
            return False
        text = idx.text
        before = text[tab + 1 : t.start]
        words = before.split()
        if words and not before[-1:].isspace():
            words = words[:-1]  # the run that holds the token does not count
        if len(words) > 4:
            return False
        if _SENTENCE_MARK.search(text, tab + 1, t.start):
            return False
        all_aliases = self.a.all_aliases(idx)
        return not (all_aliases is not None and all_aliases.within(tab + 1, t.start))

    def after_label_slot(self, span: tuple[int, int], vstart: int) -> bool:
        """The item lies in a label slot and the value is after the end of that slot."""
        idx = self.index
        n = idx.line_number(span[0])
        slots = self._slots(n)
        if slots is None:
            return False
        l0, tab, _ = slots
        return l0 <= span[0] and span[1] <= tab and vstart > tab

    # --- cells (§4.5 rule 5) ------------------------------------------------------------------

    def prefixes(self, ctx: Ctx) -> list[str]:
        unit = ctx.spec.unit
        return sorted(self.a.table.units.get(unit or "", ([], []))[0], key=len, reverse=True)

    def line_cells(self, ctx: Ctx, n: int) -> list[tuple[int, int, str]] | None:
        """The cells of a tab line after its first tab, or None when the line is ambiguous
        (rule 6): each slot holds exactly one cell, or only a unit prefix that is no cell."""
        idx = self.index
        text = idx.text
        s, e = idx.line_span(n)
        tab = text.find("\t", s, e)
        if tab == -1:
            return None
        prefixes = self.prefixes(ctx)
        slots = []
        pos = tab + 1
        while True:
            nxt = text.find("\t", pos, e)
            end = nxt if nxt != -1 else e
            slots.append((pos, end))
            if nxt == -1:
                break
            pos = nxt + 1
        cells: list[tuple[int, int, str]] = []
        for i, (a, b) in enumerate(slots):
            body = text[a:b]
            stripped = body.strip(" \r")
            if not stripped:
                cells.append((a, b, "empty"))
                continue
            # A token that crosses a tab makes the line ambiguous.
            for tok in idx.tokens_in(a, e):
                if tok.start < b < tok.end:
                    return None
            found = self.cells_in(ctx, a, b)
            if len(found) == 1:
                if found[0][2] == "unit" and i + 1 < len(slots):
                    after = text[slots[i + 1][0] : slots[i + 1][1]].strip(" \r")
                    if not after or after in _DASHES:
                        continue  # '$\t\t$\t200': the next slot holds this column's cell
                cells.append(found[0])
                continue
            if not found and stripped in prefixes:
                continue
            return None
        return cells

    def cells_in(self, ctx: Ctx, s: int, e: int) -> list[tuple[int, int, str]]:
        """Cells in [s, e) of one line: number tokens, lone dashes and empty unit cells; a
        token and an empty cell that start at one place are one cell (§4.5 rule 5)."""
        idx = self.index
        text = idx.text
        by_start: dict[int, tuple[int, int, str]] = {}
        for tok in idx.tokens_in(s, e):
            by_start[tok.start] = (tok.start, tok.end, "number")
        for i in range(s, e):
            if text[i] in _DASHES and _lone(text, i, i + 1) and i not in by_start:
                by_start[i] = (i, i + 1, "dash")
        unit_cells: dict[int, int] = {}
        for p in self.prefixes(ctx):
            i = text.find(p, s, e)
            while i != -1:
                j = i + len(p)
                if _lone(text, i, j) and not self._before_number(j):
                    unit_cells[i] = max(unit_cells.get(i, j), j)
                i = text.find(p, i + 1, e)
        for i, j in unit_cells.items():
            got = by_start.get(i)
            if got is None:
                by_start[i] = (i, j, "unit")
            elif got[1] < j:
                by_start[i] = (i, j, got[2])
        return [by_start[k] for k in sorted(by_start)]

    def cells_between(self, ctx: Ctx, a: int, t: Token) -> list[tuple[int, int, str]] | None:
        """The cells from ``a`` (the end of a field item) through the value's token (§4.5
        rule 5), or None when a tabbed line crossed is ambiguous (rule 6)."""
        idx = self.index
        text = idx.text
        first = idx.line_number(a)
        last = idx.line_number(t.start)
        out: list[tuple[int, int, str]] = []
        for n in range(first, last + 1):
            l0, l1 = idx.line_span(n)
            seg0 = max(a, l0)
            seg1 = t.end if n == last else l1
            if self.lines.has_tab[n]:
                cells = self.line_cells(ctx, n)
                if cells is None:
                    return None
                tab = text.find("\t", l0, l1)
                for c in cells:
                    if c[0] >= seg0 and c[0] < seg1 and (seg0 <= tab or c[0] > seg0):
                        out.append(c)
            else:
                out += self.cells_in(ctx, seg0, seg1)
        return out

    def _before_number(self, j: int) -> bool:
        """The next character after the whitespace at ``j`` starts a number token or (."""
        text = self.index.text
        n = len(text)
        while j < n and text[j].isspace():
            j += 1
        if j >= n:
            return False
        if text[j] == "(":
            return True
        return self.index.token_starting_at(j) is not None

    # --- unit places (§4.6, #164) ---------------------------------------------------------

    def unit_place(self, ctx: Ctx, t: Token, form: tuple[int, int, str]) -> bool:
        idx = self.index
        fs, fe, kind = form
        vline = idx.line_number(t.start)
        fline = idx.line_number(fs)
        if fline == vline and idx.line_number(fe) == vline:
            return True
        if kind == "prefix":
            br = self.a.checked.brackets(ctx, t)
            if br is not None and fe <= br[0] and not idx.text[fe : br[0]].strip():
                return True
        if fline >= vline:
            return False
        lines = self.lines
        if not lines.has_tab[vline]:
            return False
        l0, l1 = idx.line_span(fline)
        if not lines.has_tab[fline]:
            # Caption: no tab and no number token on the form's line.
            if idx.tokens_in(l0, l1):
                return False
            k = fline + 1
            while k < vline and lines.blank(k):
                k += 1
            while k < vline:
                if lines.blank(k):
                    return False
                kl0, kl1 = idx.line_span(k)
                if not lines.has_tab[k] and idx.tokens_in(kl0, kl1):
                    return False
                k += 1
            return True
        # Column: both lines hold a tab, neither is ambiguous, each line between is not blank
        # and holds a tab or no number token.
        for k in range(fline + 1, vline):
            if lines.blank(k):
                return False
            kl0, kl1 = idx.line_span(k)
            if not lines.has_tab[k] and idx.tokens_in(kl0, kl1):
                return False
        vcells = self.line_cells(ctx, vline)
        fcells = self.line_cells(ctx, fline)
        if vcells is None or fcells is None:
            return False
        col = next((i for i, c in enumerate(vcells) if c[0] == t.start), None)
        if col is None or col >= len(fcells):
            return False
        cs, ce, ckind = fcells[col]
        if ckind == "empty":
            return False
        text = idx.text
        if kind == "prefix":
            return fe <= cs and not text[fe:cs].strip()
        return fs >= ce and not text[ce:fs].strip()

    def any_unit_form_at_place(self, ctx: Ctx, t: Token) -> bool:
        """A form of the field's unit at a unit place of the token, before it (§3.1, #249).

        The form is read as a unit item there would be: held as a whole in the text from the
        first line of the value's table up to the token's start. A form after the value, also
        on its line (a ``$`` in a later cell of the row), is no unit place of it, as
        groundgate 0.11.0 reads it.
        """
        idx = self.index
        s, _ = idx.line_span(self._unit_table_first(idx.line_number(t.start)))
        forms = self.a.checked.unit_forms_in(ctx, s, t.start)
        return any(self.unit_place(ctx, t, f) for f in forms)

    def _unit_table_first(self, vline: int) -> int:
        """The first line of the value line's table: the run of table lines directly above it,
        then blank lines and a caption; a value line without a tab has only itself."""
        first = self._unit_table.get(vline)
        if first is not None:
            return first
        lines = self.lines
        first = vline
        if lines.has_tab[vline]:
            while first > 0 and self._table_line(first - 1):
                first -= 1
            k = first
            while k > 0 and lines.blank(k - 1):
                k -= 1
            if k > 0 and self._caption_line(k - 1):
                first = k - 1
        self._unit_table[vline] = first
        return first

    def _table_line(self, n: int) -> bool:
        """Not blank, and a tab or no number token (§4.6, unit places)."""
        if self.lines.blank(n):
            return False
        if self.lines.has_tab[n]:
            return True
        return not self.index.tokens_in(*self.index.line_span(n))

    def _caption_line(self, n: int) -> bool:
        """Not blank, no tab and no number token (§4.6, unit places)."""
        return (
            not self.lines.blank(n)
            and not self.lines.has_tab[n]
            and not self.index.tokens_in(*self.index.line_span(n))
        )


def _lone(text: str, s: int, e: int) -> bool:
    """Whitespace or a line end on both sides of [s, e)."""
    return (s == 0 or text[s - 1].isspace()) and (e >= len(text) or text[e].isspace())


def _only_prefixes_and_brackets(rest: str, prefixes: list[str]) -> bool:
    for p in prefixes:
        rest = rest.replace(p, "")
    return not rest.replace("(", "").replace(")", "").strip()
