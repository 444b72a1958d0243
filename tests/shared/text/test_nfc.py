"""The NFC form of a document and the map of byte offsets onto it."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.text.nfc import to_nfc


def _b(text: str, chars: int) -> int:
    return len(text[:chars].encode())


def test_nfc_text_is_returned_as_is():
    doc = to_nfc("plain text, déjà vu")
    assert not doc.changed and doc.text == doc.original
    assert [doc.offset(o, end=False) for o in (0, 5, 22)] == [0, 5, 22]


def test_length_changes_shift_later_offsets():
    original = "A\u037e then $1,234 million"  # GREEK QUESTION MARK (2 bytes) -> ';' (1 byte)
    doc = to_nfc(original)
    assert doc.text == "A; then $1,234 million"
    start = original.encode().index(b"$1,234")
    assert doc.text.encode()[doc.offset(start, end=False) :].startswith(b"$1,234")
    # The changed character itself maps one for one.
    s, e = _b(original, 1), _b(original, 2)
    assert doc.text.encode()[doc.offset(s, end=False) : doc.offset(e, end=True)] == b";"


def test_same_length_rewrites_keep_offsets():
    original = "Sec.\u20012.\u2000Short title"  # EM QUAD -> EM SPACE, EN QUAD -> EN SPACE
    doc = to_nfc(original)
    assert doc.text == "Sec.\u20032.\u2002Short title"
    n = len(original.encode())
    assert [doc.offset(o, end=False) for o in range(n + 1) if o not in (5, 6, 10, 11)] == [
        o for o in range(n + 1) if o not in (5, 6, 10, 11)
    ]


def test_an_offset_inside_a_composed_character_widens_the_span():
    original = "caf" + "e\u0301" + " 12"
    doc = to_nfc(original)
    assert doc.text == "café 12"
    between = _b(original, 4)  # between the e and its accent: no such place in "é"
    assert doc.offset(between, end=False) == 3 and doc.offset(between, end=True) == 5
    # Either edge of the pair is exact.
    assert doc.offset(_b(original, 3), end=False) == 3
    assert doc.offset(_b(original, 5), end=True) == 5
    assert doc.text.encode()[doc.offset(_b(original, 6), end=False) :] == b"12"


def test_invalid_spans_stay_invalid():
    original = "x\u2001y e\u0301"
    doc = to_nfc(original)
    n, m = len(original.encode()), len(doc.text.encode())
    assert doc.offset(n + 3, end=True) > m  # beyond the end stays beyond
    assert doc.offset(-1, end=False) < 0
    assert doc.offset(2, end=False) < 0  # inside the 3 bytes of U+2001


def test_hangul_jamo_compose_with_the_syllable_before():
    original = "\u1100\u1161\u11a8 won"  # L V T -> one syllable
    doc = to_nfc(original)
    assert doc.text == "\uac01 won"
    assert doc.text.encode()[doc.offset(_b(original, 4), end=False) :] == b"won"


ALPHABET = "ab1 ;\u037e\u2000\u2001e\u0301\u0327\u0323A\u030a\u212b\u1100\u1161\u11a8\u0f73é\u00c5"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=12))
def test_every_span_maps_to_a_valid_span_that_covers_it(original):
    doc = to_nfc(original)
    assert doc.text == unicodedata.normalize("NFC", original)
    nfc = doc.text.encode()
    nfc_boundaries = {_b(doc.text, i) for i in range(len(doc.text) + 1)}

    def nfc_of(part: str) -> bytes:
        return unicodedata.normalize("NFC", part).encode()

    n = len(original)
    for i in range(n):
        for k in range(i + 1, n + 1):
            s2 = doc.offset(_b(original, i), end=False)
            e2 = doc.offset(_b(original, k), end=True)
            assert 0 <= s2 < e2 <= len(nfc)
            assert s2 in nfc_boundaries and e2 in nfc_boundaries
            # Never narrower: before the span lies the NFC of a prefix ending at or before
            # character i, after it the NFC of a suffix starting at or after character k.
            assert any(nfc[:s2] == nfc_of(original[:j]) for j in range(i + 1))
            assert any(nfc[e2:] == nfc_of(original[j:]) for j in range(k, n + 1))


@pytest.mark.parametrize("name", ["sec-abbv-10k-2025-02-14", "uslm-114hr2029enr-div-c"])
def test_real_documents_map_every_number(shared_corpus, name):
    original = (shared_corpus / "documents" / f"{name}.txt").read_text(encoding="utf-8")
    doc = to_nfc(original)
    assert doc.changed
    raw, nfc = original.encode(), doc.text.encode()
    for match in list(re.finditer(rb"\d[\d,.]*\d", raw))[::50]:
        s, e = doc.offset(match.start(), end=False), doc.offset(match.end(), end=True)
        assert nfc[s:e] == match.group()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=12))
def test_every_span_of_the_nfc_text_maps_back_to_a_span_of_the_original_that_covers_it(original):
    doc = to_nfc(original)
    nfc = doc.text
    boundaries = {_b(original, i) for i in range(len(original) + 1)}
    for i in range(len(nfc)):
        for k in range(i + 1, len(nfc) + 1):
            s = doc.original_offset(_b(nfc, i), end=False)
            e = doc.original_offset(_b(nfc, k), end=True)
            assert s in boundaries and e in boundaries and s < e
            # Never narrower: the original's span, made NFC, holds the NFC span.
            part = original.encode()[s:e].decode()
            assert nfc[i:k] in unicodedata.normalize("NFC", part)
    # And back where it came from, on the edges offset() keeps exact.
    for i in range(len(original) + 1):
        there = doc.offset(_b(original, i), end=False)
        if doc.original_offset(there, end=False) != _b(original, i):
            assert doc.offset(doc.original_offset(there, end=False), end=False) == there
    assert doc.original_offset(len(nfc.encode()) + 1, end=True) == -1


def test_an_nfc_offset_maps_back_into_the_original():
    original = "A\u037e then caf" + "e\u0301" + " $12"
    doc = to_nfc(original)
    at = doc.text.encode().index(b"$12")
    back = doc.original_offset(at, end=False)
    assert original.encode()[back:].decode() == "$12"
    e = doc.text.encode().index("é".encode())
    assert doc.original_offset(e, end=False) == original.encode().index(b"e\xcc\x81")
    assert doc.original_offset(e + 2, end=True) == original.encode().index(b" $12")
