"""A text read once: byte offsets, number tokens, sentences and lines (SPEC §2.2, §4.1, §4.2).

Every rule of §4 asks local questions ("the token at this span", "the sentence of this
position", "the line of this token"). The index answers each with a bisect over arrays built
in one pass over the text, so nothing per candidate costs time in the size of the document.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from groundswell.shared.admit.packs import Vocabulary, suffix_cases
from groundswell.shared.admit.text import (
    decimal_places,
    digits_value,
    fold,
    is_number_char,
    mul,
    pow10,
)

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# A number token (§4.1): not after a letter, number, "." or ","; a sign only when no letter
# or number stands before it. One trailing "," is dropped after the match.
_TOKEN_SCAN = re.compile(r"(?<![^\W_])(?<![.,])(?:[-\u2212](?=[0-9]))?[0-9][0-9,]*(?:\.[0-9]+)?")
# A sentence ends at "." or ";" and the one whitespace character after it, at "•", or at a
# blank line (§4.2); the sentence is the text between two such marks, marks excluded.
_SENTENCE_END = re.compile(r"[.;]\s|\u2022|\n[ \t\r]*\n")
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")
_KEY_BREAK_AT = re.compile(r"(?=(\n[ \t\r]*\n[ \t\r]*\n))")
_SENTENCE_STOP = re.compile(r"[.;]\s")


@dataclass(slots=True)
class Token:
    """A number token (§4.1). Offsets are code point indices into the text."""

    start: int  # at the sign, when the token has one
    dstart: int  # at the first digit
    end: int
    text: str
    value: Decimal | None
    places: int
    scaled: Decimal | None = None
    scale_power: int | None = None
    scale_end: int | None = None  # end of the scale word or suffix that follows


def _wordish(ch: str) -> bool:
    return ch.isalnum()


class ByteMap:
    """Code point index <-> UTF-8 byte offset, kept sparse: only non-ASCII characters are stored."""

    def __init__(self, text: str) -> None:
        self.n_chars = len(text)
        chars = array("q")  # code point index of each non-ASCII character
        extra_before = array("q")  # extra UTF-8 bytes of the non-ASCII characters before it
        lengths = array("b")  # its UTF-8 length
        extra = 0
        numbers: set[int] = set()
        for m in _NON_ASCII.finditer(text):
            i = m.start()
            for ch in m.group():
                size = len(ch.encode("utf-8", "surrogatepass"))
                chars.append(i)
                extra_before.append(extra)
                lengths.append(size)
                extra += size - 1
                if is_number_char(ch):
                    numbers.add(i)
                i += 1
        self.other_number_chars = numbers
        self._chars = chars
        self._extra_before = extra_before
        self._lengths = lengths
        self._bytes = array("q", (c + e for c, e in zip(chars, extra_before, strict=True)))
        self.n_bytes = self.n_chars + extra

    def to_byte(self, i: int) -> int:
        k = bisect_left(self._chars, i)
        if k < len(self._chars):
            return i + self._extra_before[k]
        return i + (self.n_bytes - self.n_chars)

    def to_char(self, b: int) -> int | None:
        """The code point index at byte ``b``, or None when ``b`` is inside a character."""
        if b < 0 or b > self.n_bytes:
            return None
        k = bisect_right(self._bytes, b) - 1
        if k < 0:
            return b
        at = self._bytes[k]
        if b == at:
            return self._chars[k]
        size = self._lengths[k]
        if b < at + size:
            return None
        return b - (self._extra_before[k] + size - 1)


class TextIndex:
    """One text (the document, a reference, or an external item's text), read once."""

    def __init__(self, text: str, vocab: Vocabulary) -> None:
        self.text = text
        self.n = len(text)
        self.vocab = vocab
        self.bytes = ByteMap(text)

    # --- letters ---------------------------------------------------------------------------

    @cached_property
    def folded(self) -> str:
        return fold(self.text)

    # --- tokens ----------------------------------------------------------------------------

    @cached_property
    def _token_arrays(self) -> tuple[array, array, array]:
        """(start, digit start, end) of every number token, in text order (§4.1).

        The scan is one regex pass; a token's value and scale are read when it is first
        asked for (``token``), so a large text costs little until candidates look at it.
        """
        text = self.text
        n = self.n
        signs = set(self.vocab.currency_signs)
        currency_forms = sorted(self.vocab.currency_scales, key=len, reverse=True)
        other_digits = self._other_number_chars
        starts, dstarts, ends = array("q"), array("q"), array("q")
        for m in _TOKEN_SCAN.finditer(text):
            start, end = m.span()
            if text[end - 1] == ",":
                end -= 1
            dstart = start + 1 if text[start] in "-\u2212" else start
            if other_digits and (
                end in other_digits or (end < n and text[end] in ".," and end + 1 in other_digits)
            ):
                continue
            if (
                end - dstart == 3
                and text.startswith("000", dstart)
                and self._is_currency_scale_zeros(dstart, end, signs, currency_forms)
            ):
                continue
            starts.append(start)
            dstarts.append(dstart)
            ends.append(end)
        return starts, dstarts, ends

    @property
    def _other_number_chars(self) -> set[int]:
        """Positions of number characters other than 0-9: they block a token (§4.1)."""
        return self.bytes.other_number_chars

    @cached_property
    def _token_cache(self) -> dict[int, Token]:
        return {}

    @property
    def token_count(self) -> int:
        return len(self._token_arrays[0])

    def token(self, i: int) -> Token:
        """The i-th number token, with its value and scaled value."""
        got = self._token_cache.get(i)
        if got is not None:
            return got
        starts, dstarts, ends = self._token_arrays
        start, dstart, end = starts[i], dstarts[i], ends[i]
        body = self.text[start:end]
        digits = self.text[dstart:end]
        value = digits_value(digits)
        if value is not None and start != dstart:
            value = -value
        t = Token(start, dstart, end, body, value, decimal_places(digits))
        if value is not None:
            self._read_scale(t)
        self._token_cache[i] = t
        return t

    @property
    def tokens(self) -> list[Token]:
        """Every token (for tools and tests; the checks read tokens by position)."""
        return [self.token(i) for i in range(self.token_count)]

    def _is_currency_scale_zeros(
        self, dstart: int, end: int, signs: set[str], forms: list[str]
    ) -> bool:
        """The ``000`` of a currency scale is no token (§4.1)."""
        text = self.text
        for form in forms:
            if not form.endswith("000"):
                continue
            lead = form[:-3]
            at = dstart - len(lead)
            if at < 1 or text[at:dstart] != lead or text[at - 1] not in signs:
                continue
            if end < self.n:
                nxt = text[end]
                if nxt.isalnum():
                    continue
                if not lead and nxt in ",." and end + 1 < self.n and text[end + 1].isdigit():
                    continue
            return True
        return False

    @cached_property
    def _scale_reader(self) -> tuple[re.Pattern[str], dict[str, int], list[str], dict[str, int]]:
        words = self.vocab.scale_words
        suffixes: dict[str, int] = {}
        for w, p in self.vocab.scale_suffixes.items():
            for case in suffix_cases(w):
                suffixes.setdefault(case, p)
        return (
            _scale_word_re(tuple(words)),
            {fold(w): p for w, p in words.items()},
            sorted(suffixes, key=len, reverse=True),
            suffixes,
        )

    def _read_scale(self, t: Token) -> None:
        """A scaled value: a scale word after at most 2 whitespace, or a currency scale suffix."""
        assert t.value is not None
        word_re, folded_words, suffix_list, suffixes = self._scale_reader
        text = self.text
        # Fold only the few characters a scale word can take.
        near = fold(text[t.end : t.end + 16])
        m = word_re.match(near)
        if m is not None:
            power = folded_words[m.group(1)]
            t.scale_power = power
            t.scale_end = t.end + m.end()
            t.scaled = mul(t.value, pow10(power))
            return
        if t.start == t.dstart and t.start > 0 and text[t.start - 1] in self.vocab.currency_signs:
            n = self.n
            for suffix in suffix_list:
                e = t.end + len(suffix)
                if text.startswith(suffix, t.end) and (e >= n or not text[e].isalnum()):
                    power = suffixes[suffix]
                    t.scale_power = power
                    t.scale_end = e
                    t.scaled = mul(t.value, pow10(power))
                    return

    def tokens_in(self, s: int, e: int) -> list[Token]:
        """Tokens read inside [s, e): one that continues past ``e`` is ignored (§4.1)."""
        _, dstarts, ends = self._token_arrays
        i = bisect_left(dstarts, s)
        out: list[Token] = []
        count = len(dstarts)
        while i < count and dstarts[i] < e:
            if ends[i] <= e:
                t = self.token(i)
                if t.start < s:
                    # The sign lies before the span: the span reads the token without it.
                    t = _unsigned(t)
                out.append(t)
            i += 1
        return out

    def token_index(self, t: Token) -> int:
        return bisect_left(self._token_arrays[1], t.dstart)

    def prev_token(self, t: Token) -> Token | None:
        i = self.token_index(t)
        return self.token(i - 1) if i > 0 else None

    def next_token(self, t: Token) -> Token | None:
        i = self.token_index(t) + 1
        return self.token(i) if i < self.token_count else None

    def token_starting_at(self, pos: int) -> Token | None:
        starts, dstarts, _ = self._token_arrays
        i = bisect_left(dstarts, pos)
        for j in (i - 1, i):
            if 0 <= j < len(starts) and starts[j] == pos:
                return self.token(j)
        return None

    def has_token_between(self, s: int, e: int) -> bool:
        """A number token lies wholly or partly within [s, e)."""
        _, dstarts, ends = self._token_arrays
        i = bisect_left(dstarts, s)
        if i < len(dstarts) and dstarts[i] < e:
            return True
        return i > 0 and ends[i - 1] > s

    # --- sentences (§4.2) -------------------------------------------------------------------

    @cached_property
    def _sentence_marks(self) -> tuple[array, array, bytearray]:
        """Every sentence end (start, end of its mark) and whether it is a dot that may join."""
        starts, ends = array("q"), array("q")
        dots = bytearray()
        text = self.text
        for m in _SENTENCE_END.finditer(text):
            starts.append(m.start())
            ends.append(m.end())
            dots.append(1 if text[m.start()] == "." else 0)
        return starts, ends, dots

    @property
    def sentence_marks(self) -> tuple[array, array]:
        """The strict view: every mark ends a sentence (keys and units read this)."""
        starts, ends, _ = self._sentence_marks
        return starts, ends

    @cached_property
    def _joins(self) -> dict[int, bool]:
        return {}

    def _joined(self, k: int) -> bool:
        """Mark ``k`` is a dot after a listed abbreviation that does not end a sentence in the
        qualifier view (§4.2); decided when first asked."""
        starts, _, dots = self._sentence_marks
        if not dots[k]:
            return False
        got = self._joins.get(k)
        if got is None:
            abbreviations = self._abbreviations
            got = bool(abbreviations[0]) and self._abbreviation_join(starts[k], *abbreviations)
            self._joins[k] = got
        return got

    @cached_property
    def _abbreviations(self) -> tuple[set[str], set[str], set[str], int]:
        abbreviations = set(self.vocab.abbreviations)
        return (
            abbreviations,
            set(self.vocab.join_always),
            set(self.vocab.join_before_code),
            max((len(a) for a in abbreviations), default=0),
        )

    def _abbreviation_join(
        self, dot: int, abbr: set[str], always: set[str], before_code: set[str], longest: int
    ) -> bool:
        text = self.text
        found = None
        for length in range(longest, 1, -1):
            s = dot + 1 - length
            if s < 0:
                continue
            cand = fold(text[s : dot + 1])
            if cand in abbr and (s == 0 or not _wordish(text[s - 1])):
                found = cand
                break
        if found is None:
            return False
        j = dot + 1
        n = self.n
        while j < n and text[j].isspace():
            j += 1
        gap = text[dot + 1 : j]
        if _BLANK_LINE.search(gap):
            return False
        if j >= n:
            return False
        nxt = text[j]
        if nxt.islower() or nxt.isdigit() or nxt in "$€£₹":
            return True
        if found in always:
            return True
        if found in before_code:
            k = j
            while k < n and not text[k].isspace():
                k += 1
            word = text[j:k]
            if any(c.isdigit() for c in word):
                return True
            if len(word) >= 2 and "A" <= word[0] <= "Z" and "A" <= word[1] <= "Z":
                return True
        return False

    def sentence_of(self, pos: int, *, qualifiers: bool = False) -> tuple[int, int]:
        """The sentence [start, end) that holds ``pos`` (a mark belongs to the sentence before).
        In the qualifier view a joined abbreviation dot does not end it."""
        starts, ends, _ = self._sentence_marks
        k = bisect_right(ends, pos)
        j = k - 1
        if qualifiers:
            while j >= 0 and self._joined(j):
                j -= 1
            while k < len(starts) and self._joined(k):
                k += 1
        start = ends[j] if j >= 0 else 0
        end = starts[k] if k < len(starts) else self.n
        return start, end

    # --- lines ------------------------------------------------------------------------------

    @cached_property
    def line_breaks(self) -> array:
        text = self.text
        out = array("q")
        i = text.find("\n")
        while i != -1:
            out.append(i)
            i = text.find("\n", i + 1)
        return out

    def line_of(self, pos: int) -> tuple[int, int]:
        """The line [start, end) that holds ``pos`` (end at its line break, not after it)."""
        breaks = self.line_breaks
        k = bisect_left(breaks, pos)
        start = breaks[k - 1] + 1 if k > 0 else 0
        end = breaks[k] if k < len(breaks) else self.n
        return start, end

    def line_breaks_in(self, s: int, e: int) -> int:
        """How many line breaks lie in [s, e)."""
        breaks = self.line_breaks
        return bisect_left(breaks, e) - bisect_left(breaks, s)

    def line_number(self, pos: int) -> int:
        return bisect_left(self.line_breaks, pos)

    def line_span(self, number: int) -> tuple[int, int]:
        breaks = self.line_breaks
        start = breaks[number - 1] + 1 if number > 0 else 0
        end = breaks[number] if number < len(breaks) else self.n
        return start, end

    @property
    def line_count(self) -> int:
        return len(self.line_breaks) + 1

    # --- blank lines, key breaks and label lines (§4.2, §4.5) ------------------------------------

    @cached_property
    def _key_breaks(self) -> tuple[array, array]:
        starts, ends = array("q"), array("q")
        for m in _KEY_BREAK_AT.finditer(self.text):
            starts.append(m.start())
            ends.append(m.start() + len(m.group(1)))
        return starts, ends

    def key_break_between(self, a: int, b: int) -> bool:
        """Two adjacent blank lines lie wholly within [a, b)."""
        starts, ends = self._key_breaks
        k = bisect_left(starts, a)
        return k < len(starts) and ends[k] <= b

    @cached_property
    def _label_lines(self) -> tuple[array, array]:
        text = self.text
        lines = text.split("\n")
        blank = [not line.strip(" \t\r") for line in lines]
        starts, ends = array("q"), array("q")
        pos = 0
        for i, line in enumerate(lines):
            end = pos + len(line)
            if (
                line.strip(" \t\r")
                and (i == 0 or blank[i - 1])
                and i + 1 < len(lines)
                and blank[i + 1]
                and len(line.split()) <= 12
                and not _SENTENCE_STOP.search(line + "\n")
            ):
                starts.append(pos)
                ends.append(end)
            pos = end + 1
        return starts, ends

    def label_line_between(self, a: int, b: int) -> bool:
        """A label line lies wholly within [a, b)."""
        starts, ends = self._label_lines
        k = bisect_left(starts, a)
        return k < len(starts) and ends[k] <= b

    # --- offsets ----------------------------------------------------------------------------

    def char_span(self, start: object, end: object) -> tuple[int, int] | None:
        """A valid byte span (§2.2) as code point indices, else None."""
        if not isinstance(start, int) or not isinstance(end, int):
            return None
        if isinstance(start, bool) or isinstance(end, bool):
            return None
        if not 0 <= start < end <= self.bytes.n_bytes:
            return None
        s = self.bytes.to_char(start)
        e = self.bytes.to_char(end)
        if s is None or e is None:
            return None
        return s, e

    def byte_span(self, s: int, e: int) -> dict[str, int]:
        return {"start": self.bytes.to_byte(s), "end": self.bytes.to_byte(e)}


def _unsigned(t: Token) -> Token:
    value = None if t.value is None else abs(t.value)
    out = Token(t.dstart, t.dstart, t.end, t.text.lstrip("-\u2212"), value, t.places)
    if t.scaled is not None and t.scale_power is not None and value is not None:
        out.scaled = mul(value, pow10(t.scale_power))
        out.scale_power = t.scale_power
        out.scale_end = t.scale_end
    return out


_SCALE_RE_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def _scale_word_re(words: tuple[str, ...]) -> re.Pattern[str]:
    pattern = _SCALE_RE_CACHE.get(words)
    if pattern is None:
        alts = "|".join(re.escape(fold(w)) for w in sorted(words, key=len, reverse=True))
        pattern = re.compile(r"[^\S]{0,2}(" + alts + r")(?![^\W_])" if alts else r"(?!x)x")
        _SCALE_RE_CACHE[words] = pattern
    return pattern
