"""Where a span of a read PDF lies: its pages, and the boxes of its words on each page.

A groundgate_layout 0.1 object (``shared/read/pdf.py``) gives each page as
``{"page", "width", "height", "start", "end"}`` and each word as
``[start, end, page, x0, top, x1, bottom]``, in text order. Offsets are UTF-8 byte offsets
into the text read; boxes are PDF points from the top-left corner of the visible page.

A span here is ``[start, end)`` in those byte offsets (admission evidence is given so; a
verification certificate's character offsets go through :func:`utf8_offsets` first). Each
lookup is a bisection on the layout's offsets, then a walk over the span's own words.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import Any


def utf8_offsets(text: str, chars: Iterable[Any]) -> dict[int, int]:
    """The UTF-8 byte offset of each character offset into ``text``, in one pass over the
    text (not one per offset). An offset out of range is left out."""
    wanted = sorted({c for c in chars if isinstance(c, int) and 0 <= c <= len(text)})
    if text.isascii():
        return {c: c for c in wanted}
    out: dict[int, int] = {}
    at_char = at_byte = 0
    for c in wanted:
        at_byte += len(text[at_char:c].encode("utf-8", "surrogatepass"))
        at_char = c
        out[c] = at_byte
    return out


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _pages(layout: Any) -> list[dict[str, Any]]:
    pages = layout.get("pages") if isinstance(layout, dict) else None
    return [p for p in pages or [] if isinstance(p, dict)]


def recognised(layout: Any, pages: list[int]) -> list[dict[str, Any]]:
    """Of ``pages``, those the reading recognised by OCR, each with its engine and mean word
    confidence (the layout's page entry ``ocr``): a receipt says its span was read from a
    scan, and how sure the engine was there."""
    wanted = set(pages)
    return [
        {
            "page": p["page"],
            "engine": p["ocr"].get("engine"),
            "confidence": p["ocr"].get("confidence"),
        }
        for p in _pages(layout)
        if p.get("page") in wanted and isinstance(p.get("ocr"), dict)
    ]


def span_pages(layout: Any, start: Any, end: Any) -> list[int]:
    """The pages the span ``[start, end)`` (UTF-8 bytes) lies on, in order; an empty span
    has the page holding its offset. Empty when there is no layout or the span is on none
    (between two pages, or out of range)."""
    if not isinstance(start, int) or not isinstance(end, int) or end < start:
        return []
    pages = _pages(layout)
    last = max(end, start + 1)
    # The first page whose last offset is at or after the span's start (a page's range holds
    # at least one offset: an empty page holds its start).
    i = bisect_left(pages, start, key=lambda p: max(p["end"], p["start"] + 1) - 1)
    out = []
    for page in pages[i:]:
        if page["start"] >= last:
            break
        out.append(page["page"])
    return out


def span_regions(layout: Any, start: Any, end: Any) -> list[dict[str, Any]]:
    """The region of the span ``[start, end)`` (UTF-8 bytes) on each of its pages: the union
    of the boxes of the words it overlaps, ``{"page", "x0", "top", "x1", "bottom", "width",
    "height"}`` in PDF points (page size as the layout gives it). Empty without a layout or
    when the span holds no word."""
    if not isinstance(start, int) or not isinstance(end, int) or end <= start:
        return []
    words = layout.get("words") if isinstance(layout, dict) else None
    if not words:
        return []
    sizes = {p["page"]: (p.get("width"), p.get("height")) for p in _pages(layout)}
    # The first word that ends after the span starts; words are in text order.
    i = bisect_right(words, start, key=lambda w: w[1])
    stop = bisect_left(words, end, lo=i, key=lambda w: w[0])
    boxes: dict[int, list[float]] = {}
    for w_start, w_end, page, x0, top, x1, bottom in words[i:stop]:
        if w_end <= start or w_start >= end or not _numbers(x0, top, x1, bottom):
            continue
        box = boxes.get(page)
        if box is None:
            boxes[page] = [x0, top, x1, bottom]
        else:
            box[0], box[1] = min(box[0], x0), min(box[1], top)
            box[2], box[3] = max(box[2], x1), max(box[3], bottom)
    return [
        {
            "page": page,
            "x0": box[0],
            "top": box[1],
            "x1": box[2],
            "bottom": box[3],
            "width": sizes.get(page, (None, None))[0],
            "height": sizes.get(page, (None, None))[1],
        }
        for page, box in boxes.items()
    ]
