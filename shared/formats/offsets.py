"""Offsets between the units producers count in: code points, UTF-8 bytes, UTF-16 code units
and text elements (user-perceived characters).

Python strings index code points, claims count code points and groundgate evidence counts UTF-8
bytes; LangExtract and Anthropic count code points, Azure Document Intelligence counts what its
``stringIndexType`` says (text elements by default in its REST API, code points or UTF-16 code
units when asked). A :class:`TextOffsets` is built once per text and converts all of a record's
offsets in one sweep over the text (sorted, each segment measured once), never one pass per
offset. An offset outside the text, or one that splits a character (a UTF-8 continuation byte,
the low half of a surrogate pair, the inside of a text element), is an :class:`OffsetError`,
which the formats report with the file, line and field of the offset.
"""

from __future__ import annotations

import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Iterable

CODEPOINT = "codepoint"
UTF8 = "utf8"
UTF16 = "utf16"
TEXT_ELEMENT = "text_element"
UNITS = (CODEPOINT, UTF8, UTF16, TEXT_ELEMENT)

# The names producers give the units (Azure's stringIndexType, and our own spellings).
UNIT_NAMES = {
    "codepoint": CODEPOINT,
    "code_point": CODEPOINT,
    "unicodecodepoint": CODEPOINT,
    "char": CODEPOINT,
    "chars": CODEPOINT,
    "utf8": UTF8,
    "utf-8": UTF8,
    "byte": UTF8,
    "bytes": UTF8,
    "utf16": UTF16,
    "utf-16": UTF16,
    "utf16codeunit": UTF16,
    "text_element": TEXT_ELEMENT,
    "textelements": TEXT_ELEMENT,
    "grapheme": TEXT_ELEMENT,
}


class OffsetError(ValueError):
    """An offset that is not a place in the text: outside it, or inside one character."""

    def __init__(self, value: int, unit: str, why: str) -> None:
        super().__init__(f"{unit} offset {value} {why}")
        self.value = value
        self.unit = unit


def unit_of(name: str) -> str:
    """The unit a producer's name for it means (``utf16CodeUnit`` is ``utf16``)."""
    unit = UNIT_NAMES.get(name.replace(" ", "").lower())
    if unit is None:
        raise ValueError(f"unknown offset unit {name!r} (one of {', '.join(UNITS)})")
    return unit


class TextOffsets:
    """One text's offsets in every unit; the encodings are made once, when first needed."""

    __slots__ = ("_elements", "_utf8", "_utf16", "ascii", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        # ASCII text has one byte and one code unit per code point: no conversion at all.
        self.ascii = text.isascii()
        self._utf8: bytes | None = None
        self._utf16: bytes | None = None
        self._elements: array | None = None

    def length(self, unit: str) -> int:
        if unit == CODEPOINT or (self.ascii and unit != TEXT_ELEMENT):
            return len(self.text)
        if unit == UTF8:
            return len(self.utf8)
        if unit == UTF16:
            return len(self.utf16) // 2
        return len(self.elements) - 1

    @property
    def utf8(self) -> bytes:
        if self._utf8 is None:
            self._utf8 = self.text.encode("utf-8", "surrogatepass")
        return self._utf8

    @property
    def utf16(self) -> bytes:
        if self._utf16 is None:
            self._utf16 = self.text.encode("utf-16-le", "surrogatepass")
        return self._utf16

    @property
    def elements(self) -> array:
        """The code point offset where each text element starts, then the text's length."""
        if self._elements is None:
            self._elements = text_element_starts(self.text)
        return self._elements

    # --- conversion ----------------------------------------------------------------------

    def to_codepoints(self, values: Iterable[int], unit: str) -> dict[int, int]:
        """Each offset in ``unit`` as a code point offset; raises OffsetError for the first
        one outside the text or inside a character."""
        wanted = sorted(set(values))
        limit = self.length(unit)
        for v in wanted:
            if not 0 <= v <= limit:
                raise OffsetError(v, unit, f"is outside the text (0..{limit})")
        if unit == CODEPOINT or (self.ascii and unit != TEXT_ELEMENT):
            return {v: v for v in wanted}
        if unit == TEXT_ELEMENT:
            return {v: self.elements[v] for v in wanted}
        data, width, codec = (
            (self.utf8, 1, "utf-8") if unit == UTF8 else (self.utf16, 2, "utf-16-le")
        )
        out: dict[int, int] = {}
        at_cp = at = 0
        for v in wanted:
            pos = v * width
            if pos < len(data) and _inside(data, pos, unit):
                raise OffsetError(v, unit, "splits a character")
            at_cp += len(data[at:pos].decode(codec, "surrogatepass"))
            at = pos
            out[v] = at_cp
        return out

    def from_codepoints(self, values: Iterable[int], unit: str) -> dict[int, int]:
        """Each code point offset as an offset in ``unit`` (OffsetError as above)."""
        wanted = sorted(set(values))
        for v in wanted:
            if not 0 <= v <= len(self.text):
                raise OffsetError(v, CODEPOINT, f"is outside the text (0..{len(self.text)})")
        if unit == CODEPOINT or (self.ascii and unit != TEXT_ELEMENT):
            return {v: v for v in wanted}
        if unit == TEXT_ELEMENT:
            starts = self.elements
            out = {}
            for v in wanted:
                i = bisect_left(starts, v)
                if starts[i] != v:
                    raise OffsetError(v, CODEPOINT, "splits a text element")
                out[v] = i
            return out
        codec = "utf-8" if unit == UTF8 else "utf-16-le"
        width = 1 if unit == UTF8 else 2
        out = {}
        at_cp = at = 0
        for v in wanted:
            at += len(self.text[at_cp:v].encode(codec, "surrogatepass")) // width
            at_cp = v
            out[v] = at
        return out

    def span(self, start: int, end: int, unit: str) -> tuple[int, int]:
        got = self.to_codepoints((start, end), unit)
        return got[start], got[end]


def _inside(data: bytes, pos: int, unit: str) -> bool:
    if unit == UTF8:
        return data[pos] & 0xC0 == 0x80  # a continuation byte
    unit16 = data[pos] | data[pos + 1] << 8
    return 0xDC00 <= unit16 <= 0xDFFF  # the low half of a surrogate pair


# --- text elements ---------------------------------------------------------------------------
# A text element is what a reader takes for one character: a base and the marks, joiners,
# variation selectors and emoji modifiers after it, a CR LF pair, a pair of regional indicators,
# a Hangul syllable written in jamo. This is the core of Unicode's extended grapheme clusters
# (UAX #29), enough for the documents producers count in text elements; the rarer rules
# (prepended concatenation marks, Indic conjuncts) are not applied.

_ZWJ = 0x200D


def _extends(cp: int, ch: str) -> bool:
    if cp == _ZWJ or 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:
        return True
    if 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F:  # skin tones, emoji tags
        return True
    return unicodedata.category(ch) in ("Mn", "Me", "Mc")


def _jamo(cp: int) -> str | None:
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return "L"
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return "V"
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return "T"
    if 0xAC00 <= cp <= 0xD7A3:
        return "LV" if (cp - 0xAC00) % 28 == 0 else "LVT"
    return None


_JAMO_NEXT = {"L": {"L", "V", "LV", "LVT"}, "V": {"V", "T"}, "LV": {"V", "T"}, "T": {"T"}}
_JAMO_NEXT["LVT"] = _JAMO_NEXT["T"]


def text_element_starts(text: str) -> array:
    starts = array("q")
    if text.isascii():
        # Only CR LF joins two ASCII characters.
        starts.extend(
            i for i in range(len(text)) if not (text[i] == "\n" and i and text[i - 1] == "\r")
        )
        starts.append(len(text))
        return starts
    prev_cp = -1
    prev_jamo: str | None = None
    regional_run = 0
    for i, ch in enumerate(text):
        cp = ord(ch)
        jamo = _jamo(cp)
        regional = 0x1F1E6 <= cp <= 0x1F1FF
        if i == 0:
            joined = False
        elif prev_cp == 0x0D and cp == 0x0A:
            joined = True
        elif prev_cp in (0x0A, 0x0D) or cp in (0x0A, 0x0D):
            joined = False
        elif prev_cp == _ZWJ and unicodedata.category(ch) == "So":
            joined = True  # an emoji ZWJ sequence
        elif (
            _extends(cp, ch)
            or (regional and regional_run % 2 == 1)
            or (prev_jamo is not None and jamo is not None and jamo in _JAMO_NEXT[prev_jamo])
        ):
            joined = True
        else:
            joined = False
        if not joined:
            starts.append(i)
        regional_run = regional_run + 1 if regional else 0
        prev_cp, prev_jamo = cp, jamo
    starts.append(len(text))
    return starts
