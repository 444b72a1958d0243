"""Offsets between code points, UTF-8 bytes, UTF-16 code units and text elements: exact both
ways, and an offset inside a character or outside the text refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.formats.offsets import (
    CODEPOINT,
    TEXT_ELEMENT,
    UTF8,
    UTF16,
    OffsetError,
    TextOffsets,
    unit_of,
)

TEXT = "a😀é\u0301b🇫🇷c\r\nd"  # a non-BMP emoji, a decomposed e, a flag, CR LF


def test_each_unit_counts_as_its_producer_does():
    offsets = TextOffsets(TEXT)
    assert offsets.length(CODEPOINT) == len(TEXT) == 11
    assert offsets.length(UTF8) == len(TEXT.encode())
    assert offsets.length(UTF16) == len(TEXT.encode("utf-16-le")) // 2 == 14
    # a, 😀, é́, b, 🇫🇷, c, CRLF, d
    assert offsets.length(TEXT_ELEMENT) == 8
    # "b" in each unit
    b = TEXT.index("b")
    assert offsets.from_codepoints([b], UTF16) == {b: 5}  # past a surrogate pair
    assert offsets.from_codepoints([b], UTF8) == {b: 1 + 4 + 2 + 2}
    assert offsets.from_codepoints([b], TEXT_ELEMENT) == {b: 3}
    assert offsets.to_codepoints([5], UTF16) == {5: b}
    assert offsets.to_codepoints([3], TEXT_ELEMENT) == {3: b}


@pytest.mark.parametrize(
    ("unit", "value", "why"),
    [
        (UTF16, 2, "splits a character"),  # the low half of 😀
        (UTF8, 2, "splits a character"),  # inside 😀's four bytes
        (UTF8, 99, "outside the text"),
        (UTF16, -1, "outside the text"),
        (TEXT_ELEMENT, 9, "outside the text"),
    ],
)
def test_an_offset_inside_a_character_or_outside_the_text_is_refused(unit, value, why):
    with pytest.raises(OffsetError, match=why):
        TextOffsets(TEXT).to_codepoints([value], unit)


def test_a_code_point_inside_a_text_element_has_no_text_element_offset():
    with pytest.raises(OffsetError, match="splits a text element"):
        TextOffsets(TEXT).from_codepoints([TEXT.index("\u0301")], TEXT_ELEMENT)


def test_azure_index_types_name_units():
    assert unit_of("utf16CodeUnit") == UTF16
    assert unit_of("unicodeCodePoint") == CODEPOINT
    assert unit_of("textElements") == TEXT_ELEMENT
    with pytest.raises(ValueError, match="unknown offset unit"):
        unit_of("furlongs")


@settings(max_examples=300, deadline=None)  # a busy machine must not fail it
@given(st.text(max_size=40), st.data())
def test_every_unit_round_trips_at_every_code_point(text, data):
    offsets = TextOffsets(text)
    cps = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
    for unit, codec, width in ((UTF8, "utf-8", 1), (UTF16, "utf-16-le", 2)):
        there = offsets.from_codepoints(cps, unit)
        for cp, v in there.items():
            assert v == len(text[:cp].encode(codec, "surrogatepass")) // width
        assert offsets.to_codepoints(there.values(), unit) == {v: cp for cp, v in there.items()}
