"""Units (§4.3) and qualifiers (§4.2) read at a number token, with per-text caches.

A :class:`TextRules` is bound to one text index, one unit table and one unit window; each
answer is computed once per token and kept, so a token cited by many candidates costs once.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from groundswell.shared.admit.index import TextIndex, Token
from groundswell.shared.admit.packs import Vocabulary
from groundswell.shared.admit.text import fold

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_WORD = r"[^\W\d_](?:[^\W\d_]|[-'’](?=[^\W\d_]))*"
_WORD_RE = re.compile(_WORD)


def _letters_and_marks(word: str) -> bool:
    """A word of §4.2's between rule: letters and combining marks, starting with a letter."""
    return unicodedata.category(word[0])[0] == "L" and all(
        unicodedata.category(c)[0] in "LM" for c in word
    )


QUALIFIER_WINDOW = 40


def _edge_pattern(phrase: str) -> str:
    """A word or phrase matched whole: no letter or number against an edge that is one."""
    body = r"\s+".join(re.escape(part) for part in phrase.split())
    if not body:
        body = re.escape(phrase)
    head = r"(?<![^\W_])" if phrase[:1].isalnum() else ""
    tail = r"(?![^\W_])" if phrase[-1:].isalnum() else ""
    return head + body + tail


def alternation(words: list[str] | tuple[str, ...]) -> str:
    """Whole-word alternation over folded words, longest first."""
    folded = sorted({fold(w) for w in words}, key=len, reverse=True)
    return "|".join(_edge_pattern(w) for w in folded)


@dataclass(slots=True)
class Suffix:
    start: int
    end: int
    form: str
    codes: tuple[str, ...]
    per: bool
    in_sentence: bool


@dataclass(slots=True)
class UnitsAt:
    prefix_codes: frozenset[str]
    suffix: Suffix | None  # the first suffix within the window, if any

    @property
    def form_next(self) -> bool:
        """A unit form (or a per-unit) is next to the token (§3.1 step 11)."""
        return bool(self.prefix_codes) or (self.suffix is not None and self.suffix.in_sentence)

    def has(self, code: str) -> bool:
        if code in self.prefix_codes:
            return True
        s = self.suffix
        return s is not None and s.in_sentence and not s.per and code in s.codes


class UnitTable:
    """The unit table of one schema: forms by code, and the suffix pattern over all of them."""

    def __init__(self, units: dict[str, tuple[list[str], list[str]]], vocab: Vocabulary) -> None:
        self.units = units
        self.prefixes: list[tuple[str, str]] = sorted(
            ((p, code) for code, (prefixes, _) in units.items() for p in prefixes),
            key=lambda pc: -len(pc[0]),
        )
        by_suffix: dict[str, list[str]] = {}
        for code, (_, suffixes) in units.items():
            for s in suffixes:
                by_suffix.setdefault(s, []).append(code)
        self.suffix_codes = {s: tuple(codes) for s, codes in by_suffix.items()}
        forms = sorted(by_suffix, key=len, reverse=True)
        self.max_suffix = max((len(s) for s in forms), default=0)
        if forms:
            parts = []
            for s in forms:
                head = "(?<![A-Za-z0-9])" if s[0] in _ASCII_ALNUM else ""
                tail = "(?![A-Za-z0-9])" if s[-1] in _ASCII_ALNUM else ""
                parts.append(head + re.escape(s) + tail)
            self.suffix_re: re.Pattern[str] | None = re.compile("|".join(parts))
        else:
            self.suffix_re = None
        per_words = sorted({fold(w) for w in vocab.per_units}, key=len, reverse=True)
        per_alt = "|".join(r"\s+".join(re.escape(x) for x in w.split()) for w in per_words)
        self.per_re = re.compile(
            r"\s*(?:/|per(?![^\W_]))\s*(?:\d+(?:[.,]\d+)*\s*)?(?:" + per_alt + r")(?![^\W\d_])"
        )

    def vacuous(self, code: str) -> bool:
        """A unit with no forms is at every token (§4.3)."""
        forms = self.units.get(code)
        return forms is None or (not forms[0] and not forms[1])


class TextRules:
    """§4.2 and §4.3 at the tokens of one text."""

    def __init__(self, index: TextIndex, table: UnitTable, window: int) -> None:
        self.index = index
        self.table = table
        self.window = window
        self.vocab = index.vocab
        self._units: dict[int, UnitsAt] = {}
        self._qualifiers: dict[int, frozenset[str]] = {}
        v = self.vocab
        self._before = [(c, p) for c, ps in v.before.items() for p in ps]
        self._after = [(c, p) for c, ps in v.after.items() for p in ps]
        self._before_re = _overlapping(self._before)
        self._after_re = _overlapping(self._after)
        self._negation_re = re.compile(r"(?:" + alternation(v.negations) + r")\s*\Z")
        connectors = [c for c in v.connectors]
        word_connectors = [c for c in connectors if c[:1].isalnum()]
        dash_connectors = [c for c in connectors if not c[:1].isalnum()]
        pair_and = [w for w in v.pair if w != _BETWEEN] or ["and"]
        self._gap_word_re = re.compile(
            r"\s*(?:[^\s\d]{1,12}\s+)?("
            + alternation(word_connectors + pair_and)
            + r")\s*\S{0,4}\Z"
        )
        self._gap_dash_re = re.compile(
            r"\s*(?:" + "|".join(re.escape(c) for c in dash_connectors) + r")\s*\S{0,4}\Z"
            if dash_connectors
            else r"(?!x)x"
        )
        # Read forward from a first end, the next number is any digit (§4.1: the range checks
        # read Unicode digits) after at most 4 characters that are not whitespace.
        self._ahead_word_re = re.compile(
            r"\s*(?:[^\s\d]{1,12}\s+)?("
            + alternation(word_connectors + pair_and)
            + r")\s*\S{0,4}?[-\u2212]?\d"
        )
        self._ahead_dash_re = re.compile(
            r"\s*(?:"
            + "|".join(re.escape(c) for c in dash_connectors)
            + r")\s*\S{0,4}?[-\u2212]?\d"
            if dash_connectors
            else r"(?!x)x"
        )
        self._and_words = {fold(w) for w in pair_and}
        self._between_re = re.compile(alternation([w for w in v.pair if w == _BETWEEN]))
        self._from_re = re.compile(r"(?<![^\W_])from\s*\S{0,4}\Z")
        self._change_words = {fold(w) for w in v.change_words}
        self._determiners = {fold(w) for w in v.determiners}
        self._stop_words = {fold(w) for w in v.stop_words}

    # --- units -----------------------------------------------------------------------------

    def units_at(self, t: Token) -> UnitsAt:
        # Keyed by the token's start: a span that leaves out a sign reads the same digits as
        # another token (§4.1), with other neighbours for units, qualifiers and ranges.
        got = self._units.get(t.start)
        if got is None:
            got = UnitsAt(self._prefix_codes(t), self._first_suffix(t))
            self._units[t.start] = got
        return got

    def _prefix_codes(self, t: Token) -> frozenset[str]:
        text = self.index.text
        j = t.start
        while j > 0 and text[j - 1].isspace():
            j -= 1
        codes = set()
        for prefix, code in self.table.prefixes:
            s = j - len(prefix)
            if s < 0 or not text.startswith(prefix, s):
                continue
            if prefix[0].isalnum() and s > 0 and text[s - 1].isalnum():
                continue
            codes.add(code)
        return frozenset(codes)

    def _first_suffix(self, t: Token) -> Suffix | None:
        pattern = self.table.suffix_re
        if pattern is None:
            return None
        text = self.index.text
        end = t.end
        limit = end + self.window + self.table.max_suffix + 1
        # The chunk starts at the token's end, so a suffix right after the number ("500mg")
        # has nothing before it for the boundary rule, as §4.3 wants.
        chunk = text[end:limit]
        best = pattern.search(chunk)
        if best is None or best.start() > self.window:
            return None
        s, e = end + best.start(), end + best.end()
        form = best.group()
        _, sent_end = self.index.sentence_of(t.dstart)
        in_sentence = e <= sent_end
        per = self.table.per_re.match(self.index.folded, e) is not None
        return Suffix(s, e, form, self.table.suffix_codes[form], per, in_sentence)

    def unit_at(self, t: Token, code: str | None) -> bool:
        if code is None or self.table.vacuous(code):
            return True
        return self.units_at(t).has(code)

    # --- qualifiers ------------------------------------------------------------------------

    def comparators(self, t: Token) -> frozenset[str]:
        got = self._qualifiers.get(t.start)
        if got is None:
            got = frozenset(self._read_qualifiers(t))
            self._qualifiers[t.start] = got
        return got

    def _read_qualifiers(self, t: Token) -> set[str]:
        index = self.index
        folded = index.folded
        sent_start, sent_end = index.sentence_of(t.start, qualifiers=True)
        prev = index.prev_token(t)
        nxt = index.next_token(t)
        w0 = max(sent_start, t.start - QUALIFIER_WINDOW, prev.end if prev else 0)
        w1 = min(sent_end, t.end + QUALIFIER_WINDOW, nxt.start if nxt else index.n)
        found: set[str] = set()
        for lo, hi, pattern, table in (
            (w0, t.start, self._before_re, self._before),
            (t.end, w1, self._after_re, self._after),
        ):
            if hi <= lo or pattern is None:
                continue
            matches = _find_all(pattern, folded, lo, hi)
            for s, _e, comparator in _longest(matches):
                if table is self._before and comparator in _INVERT:
                    neg_lo = max(sent_start, s - 30)
                    if self._negation_re.search(folded[neg_lo:s]) is not None:
                        comparator = _INVERT[comparator]
                found.add(comparator)
        if self._is_range_end(t, prev, nxt):
            found.add("range")
        return found

    # --- ranges ----------------------------------------------------------------------------

    def _pair(self, a: Token, b: Token) -> bool:
        """``b`` is the second end of a range whose first end is ``a`` (§4.2)."""
        if b.start - a.end > 40:
            return False
        if a.start < self.index.sentence_of(b.start, qualifiers=True)[0]:
            return False
        gap = self.index.folded[a.end : b.start]
        if self._gap_dash_re.match(gap):
            return True
        m = self._gap_word_re.match(gap)
        if m is None:
            return False
        if m.group(1) in self._and_words:
            return self._between_before(a, ahead=False)
        return True

    def _ahead(self, t: Token) -> bool:
        """``t`` is followed by a connector and another number (§4.2)."""
        folded = self.index.folded
        _, end = self.index.sentence_of(t.start, qualifiers=True)
        if self._ahead_dash_re.match(folded, t.end, end):
            return True
        m = self._ahead_word_re.match(folded, t.end, end)
        if m is None:
            return False
        if m.group(1) in self._and_words:
            return self._between_before(t, ahead=True)
        return True

    def _between_before(self, a: Token, *, ahead: bool) -> bool:
        """``between`` stands before ``a``, the first number of an ``and`` pair (§4.2): with at
        most six words between them, or with at most 4 characters that are not whitespace.
        Read forward from ``a`` those characters hold no number ("between 9:00 and 5" gives
        00 no range); read back from the second number they may ("123:00 and 5" is one)."""
        index = self.index
        folded = index.folded
        sent_start, _ = index.sentence_of(a.start)
        chunk = folded[sent_start : a.start]
        close = _CLOSE_AHEAD if ahead else _CLOSE_BACK
        for m in self._between_re.finditer(chunk):
            rest = chunk[m.end() :]
            if close.fullmatch(rest) and not (
                ahead and index.has_token_between(sent_start + m.end(), a.start)
            ):
                return True
            words = rest.split()
            if (
                len(words) <= 6
                and all(_letters_and_marks(w) for w in words)
                and (rest[:1].isspace() or not rest)
            ):
                return True
        return False

    def _change_before_from(self, a: Token) -> bool:
        """``a`` follows ``from``, and a change word stands before it in the same phrase."""
        index = self.index
        folded = index.folded
        sent_start, _ = index.sentence_of(a.start, qualifiers=True)
        lo = max(sent_start, a.start - 12)
        m = self._from_re.search(folded[lo : a.start])
        if m is None:
            return False
        from_at = lo + m.start()
        head = folded[max(sent_start, from_at - 200) : from_at]
        if not head or not head[-1].isspace():
            return False
        chunks = head.split()
        for k in range(0, 7):
            if k + 1 > len(chunks):
                break
            word = chunks[-(k + 1)]
            between = chunks[len(chunks) - k :] if k else []
            if not self._ends_with_change_word(word):
                continue
            if k and not self._determined(between):
                continue
            return True
        return False

    def _ends_with_change_word(self, chunk: str) -> bool:
        for cw in self._change_words:
            if chunk.endswith(cw) and (len(chunk) == len(cw) or not chunk[-len(cw) - 1].isalnum()):
                return True
        return False

    def _determined(self, words: list[str]) -> bool:
        if not all(_WORD_RE.fullmatch(w) for w in words):
            return False
        if words[0] in self._determiners:
            rest = words[1:]
        elif words[0] in ("in", "of", "to") and len(words) > 1 and words[1] in self._determiners:
            rest = words[2:]
        else:
            return False
        return not any(w in self._stop_words for w in rest)

    def _is_range_end(self, t: Token, prev: Token | None, nxt: Token | None) -> bool:
        if self._ahead(t):
            return True
        return prev is not None and self._pair(prev, t) and not self._change_before_from(prev)


_BETWEEN = "between"
_CLOSE_AHEAD = re.compile(r"\s*\S{0,4}")
_CLOSE_BACK = re.compile(r"\s*\S{0,4}\s*")
_INVERT = {"gt": "le", "le": "gt", "lt": "ge", "ge": "lt"}


def _overlapping(table: list[tuple[str, str]]) -> tuple[re.Pattern[str], list[str]] | None:
    """One pattern that finds, at each position, the longest phrase of the table starting
    there (a zero-width match with one group per phrase, longest first)."""
    if not table:
        return None
    order = sorted(range(len(table)), key=lambda i: -len(fold(table[i][1])))
    groups = "|".join(f"({_edge_pattern(fold(table[i][1]))})" for i in order)
    return re.compile("(?=(?:" + groups + "))"), [table[i][0] for i in order]


def _find_all(
    compiled: tuple[re.Pattern[str], list[str]], text: str, lo: int, hi: int
) -> list[tuple[int, int, str]]:
    """Every phrase match wholly inside [lo, hi): the longest at each start (a shorter one at
    the same start lies inside it, so the overlap rule drops it anyway)."""
    pattern, comparators = compiled
    out = []
    a = max(0, lo - 1)
    chunk = text[a : hi + 1]
    for m in pattern.finditer(chunk):
        k = m.lastindex
        if k is None:
            continue
        s, e = a + m.start(k), a + m.end(k)
        if s >= lo and e <= hi:
            out.append((s, e, comparators[k - 1]))
    return out


def _longest(matches: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Where two qualifiers overlap, only the longer applies (§4.2)."""
    kept: list[tuple[int, int, str]] = []
    for s, e, c in sorted(matches, key=lambda m: (-(m[1] - m[0]), m[0])):
        if all(e <= ks or s >= ke for ks, ke, _ in kept):
            kept.append((s, e, c))
    return kept
