"""A document's NFC form, with a map from the original's UTF-8 byte offsets to the NFC text's.

Admission (groundgate's SPEC) reads NFC text only, but real documents are not always NFC (U+2001
EM QUAD becomes U+2003, U+037E GREEK QUESTION MARK becomes ``;``, a letter and its combining
accent become one character). Extractors cite offsets into the document they were given, so the
offsets must move with the text.

NFC only ever rewrites *segments*: a maximal run of characters that NFC may change or merge
(composing marks, characters with a canonical decomposition, the second half of a composable
pair), together with the starter before it. Text between segments is copied through, so an
offset there only shifts by the length change of the segments before it. Inside a segment, an
offset is kept exactly where splitting the segment there normalizes the same way; otherwise it
widens to the segment's edge (a span start to its start, a span end to its end), so a span
never loses a character it covered. Only documents that are not NFC pay for any of this.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cache, cached_property

from groundswell.shared.text.unicode import _SCAN_LIMIT

# A segment longer than this (a run of thousands of combining marks) keeps only its edges as
# exact offsets: finding the inner ones costs a normalization per boundary.
_MAX_INNER = 32

# Hangul vowel and trailing jamo compose with the syllable before them.
_HANGUL_FOLLOWERS = [*range(0x1161, 0x1176), *range(0x11A8, 0x11C3)]


@cache
def _unstable() -> re.Pattern[str]:
    """A regex for runs of characters NFC may rewrite or join to their neighbour."""
    normalize, decomposition, combining = (
        unicodedata.normalize,
        unicodedata.decomposition,
        unicodedata.combining,
    )
    codes: set[int] = set(_HANGUL_FOLLOWERS)
    for code in range(_SCAN_LIMIT):
        if 0xD800 <= code < 0xE000:
            continue
        ch = chr(code)
        if combining(ch) or normalize("NFC", ch) != ch:
            codes.add(code)
        dec = decomposition(ch)
        if dec and not dec.startswith("<"):
            parts = dec.split()
            if len(parts) == 2 and normalize("NFC", ch) == ch:
                codes.add(int(parts[1], 16))  # may compose with the character before it
    ranges: list[str] = []
    ordered = sorted(codes)
    start = prev = ordered[0]
    for code in [*ordered[1:], -1]:
        if code == prev + 1:
            prev = code
            continue
        ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
        start = prev = code
    return re.compile("[" + "".join(ranges) + "]+")


@dataclass
class _Segment:
    orig_start: int  # byte offsets in the original
    orig_end: int
    nfc_start: int  # byte offsets in the NFC text
    nfc_end: int
    part: str  # the segment's original characters
    inner: dict[int, int] = field(default_factory=dict)  # exact inner offsets: orig -> nfc


@dataclass
class NfcText:
    """``text`` is the NFC form of ``original``; ``changed`` says whether they differ."""

    original: str
    text: str
    _segments: list[_Segment]
    _starts: list[int]
    _orig_len: int
    _nfc_len: int

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def offset(self, value: int, *, end: bool) -> int:
        """Where the original's byte offset ``value`` lies in the NFC text.

        A span that was invalid in the original (out of range, inside a character) stays
        invalid, so admission reports it as it would have."""
        if value < 0:
            return value
        if value > self._orig_len:
            return self._nfc_len + (value - self._orig_len)
        k = bisect_right(self._starts, value) - 1
        if k < 0:
            return value
        seg = self._segments[k]
        if value >= seg.orig_end:
            return value + (seg.nfc_end - seg.orig_end)
        if value == seg.orig_start:
            return seg.nfc_start
        if value in seg.inner:
            return seg.inner[value]
        if not _on_boundary(seg, value):
            return -1  # inside a character of the original: keep the span invalid
        return seg.nfc_end if end else seg.nfc_start

    def original_offset(self, value: int, *, end: bool) -> int:
        """Where the NFC text's byte offset ``value`` lies in the original: the inverse of
        ``offset`` (what admission cites in the NFC text, back in the document as given).
        Inside a segment NFC rewrote, an offset with no exact counterpart widens to the
        segment's edge (a start to its start, an end to its end); one outside the NFC text
        is -1."""
        if not 0 <= value <= self._nfc_len:
            return -1
        k = bisect_right(self._nfc_starts, value) - 1
        if k < 0:
            return value
        seg = self._segments[k]
        if value >= seg.nfc_end:
            return value - (seg.nfc_end - seg.orig_end)
        if value == seg.nfc_start:
            return seg.orig_start
        exact = [o for o, n in seg.inner.items() if n == value]
        if exact:
            return max(exact) if end else min(exact)
        return seg.orig_end if end else seg.orig_start

    @cached_property
    def _nfc_starts(self) -> list[int]:
        return [seg.nfc_start for seg in self._segments]


def _on_boundary(seg: _Segment, value: int) -> bool:
    # Only reached inside a segment, which is short: walk its characters.
    pos = seg.orig_start
    for ch in seg.part:
        if pos == value:
            return True
        pos += _utf8_len(ch)
    return pos == value


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def to_nfc(original: str) -> NfcText:
    """The NFC form of ``original`` and its offset map (no map when it is already NFC)."""
    orig_len = _utf8_len(original)
    if unicodedata.is_normalized("NFC", original):
        return NfcText(original, original, [], [], orig_len, orig_len)
    normalize = unicodedata.normalize
    pieces: list[str] = []
    segments: list[_Segment] = []
    chars = 0  # characters of the original consumed
    orig_b = nfc_b = 0  # byte offsets reached in each form
    spans: list[list[int]] = []
    for match in _unstable().finditer(original):
        start = max(match.start() - 1, 0)  # the starter the run may compose with
        if spans and start <= spans[-1][1]:
            spans[-1][1] = match.end()
        else:
            spans.append([start, match.end()])
    for start, end in spans:
        between = original[chars:start]
        pieces.append(between)
        step = _utf8_len(between)
        orig_b, nfc_b = orig_b + step, nfc_b + step
        part = original[start:end]
        out = normalize("NFC", part)
        pieces.append(out)
        seg = _Segment(orig_b, orig_b + _utf8_len(part), nfc_b, nfc_b + _utf8_len(out), part)
        if 1 < len(part) <= _MAX_INNER:
            for i in range(1, len(part)):
                head = normalize("NFC", part[:i])
                if head + normalize("NFC", part[i:]) == out:
                    seg.inner[orig_b + _utf8_len(part[:i])] = nfc_b + _utf8_len(head)
        segments.append(seg)
        orig_b, nfc_b, chars = seg.orig_end, seg.nfc_end, end
    pieces.append(original[chars:])
    text = "".join(pieces)
    if text != normalize("NFC", original):  # the segmentation rests on NFC's stability rules
        raise ValueError("NFC did not split into independent segments")
    return NfcText(
        original,
        text,
        segments,
        [s.orig_start for s in segments],
        orig_len,
        _utf8_len(text),
    )
