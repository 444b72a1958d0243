"""Page images: a 10-Q's page rendered by PDFium, each word's box from the layout over the
word's ink in the image; images cached create-once by (source sha256, page, dpi); renders
bounded (a request that finds every slot taken is told to come back)."""

from __future__ import annotations

import re
import threading
import zlib
from pathlib import Path

import pytest

from groundswell.shared.read.pdf import read_pdf
from groundswell.shared.read.render import (
    RenderBusy,
    RenderError,
    RenderLimit,
    page_image,
    png_size,
    render_key,
    render_page,
)
from groundswell.shared.storage.local import LocalStore

DPI = 100


def pixels(png: bytes) -> tuple[int, int, bytes]:
    """(width, height, RGB rows) of a PNG this module wrote (8-bit RGB, filter 0 rows)."""
    width, height = png_size(png)
    data, at = b"", 8
    while at < len(png):
        size = int.from_bytes(png[at : at + 4], "big")
        if png[at + 4 : at + 8] == b"IDAT":
            data += png[at + 8 : at + 8 + size]
        at += 12 + size
    raw = zlib.decompress(data)
    row = 1 + 3 * width
    assert len(raw) == row * height and all(raw[y * row] == 0 for y in range(height))
    return width, height, b"".join(raw[y * row + 1 : (y + 1) * row] for y in range(height))


def ink_box(image: tuple[int, int, bytes], box: tuple[int, int, int, int]):
    """The bounding box of the dark pixels within ``box`` (pixels), None without any; a row
    dark from end to end is a table's rule, not a glyph, and is passed over."""
    width, _, rgb = image
    x0, y0, x1, y1 = box
    xs, ys = [], []
    for y in range(y0, y1):
        dark = [
            x
            for x in range(x0, x1)
            if sum(rgb[3 * (y * width + x) : 3 * (y * width + x) + 3]) < 384
        ]
        if dark and len(dark) < x1 - x0:
            xs += dark
            ys.append(y)
    return (min(xs), min(ys), max(xs) + 1, max(ys) + 1) if xs else None


@pytest.fixture(scope="module")
def tenq(shared_raw: Path):
    data = (shared_raw / "2023-Q1-AAPL.pdf").read_bytes()
    return data, read_pdf(data, pages="4")


def test_the_layouts_word_boxes_sit_over_the_words_ink(tenq):
    data, reading = tenq
    text = reading.text.encode()
    page = reading.layout["pages"][0]
    numbers = [w for w in reading.layout["words"] if re.fullmatch(rb"[\d,]{5,}", text[w[0] : w[1]])]
    assert len(numbers) >= 10
    image = pixels(render_page(data, 4, DPI))
    scale = DPI / 72
    assert (image[0], image[1]) == (round(page["width"] * scale), round(page["height"] * scale))
    for _, _, _, x0, top, x1, bottom in numbers[:10]:
        box = (int(x0 * scale), int(top * scale), int(x1 * scale) + 1, int(bottom * scale) + 1)
        pad = 3  # pixels looked at around the box (a table's rules may pass below it)
        across = ink_box(image, (box[0] - pad, box[1], box[2] + pad, box[3]))
        down = ink_box(image, (box[0], box[1] - pad, box[2], box[3] + pad))
        assert across is not None and down is not None, box  # drawn where the layout says
        # Its ink fills the box across, and stays inside it (give or take a pixel or two).
        assert abs(across[0] - box[0]) <= 2 and abs(across[2] - box[2]) <= 2, (across, box)
        assert down[1] >= box[1] - 2 and down[3] <= box[3] + 2, (down, box)
    # A blank margin has no ink.
    assert ink_box(image, (0, 0, 30, 30)) is None


def test_images_are_cached_create_once_by_sha_page_and_dpi(tenq, tmp_path):
    data, _ = tenq
    store = LocalStore(tmp_path)
    reads = []

    def source() -> bytes:
        reads.append(1)
        return data

    limit = RenderLimit(1, 5.0)
    first = page_image(store, "ab" * 32, 4, 72, source, limit)
    again = page_image(store, "ab" * 32, 4, 72, source, limit)
    assert first == again and len(reads) == 1  # the stored image, not a second render
    assert store.get(render_key("ab" * 32, 4, 72)) == first
    assert png_size(first) == (612, 792)
    page_image(store, "ab" * 32, 4, 36, source, limit)
    assert len(reads) == 2  # another resolution is another image
    with pytest.raises(RenderError, match="the document has"):
        render_page(data, 999, 72)
    with pytest.raises(RenderError, match="dpi"):
        render_page(data, 1, 2000)
    with pytest.raises(RenderError, match="PDFium cannot open"):
        render_page(b"not a pdf", 1, 72)


def test_renders_are_bounded():
    limit = RenderLimit(1, 0.05)
    holding, release = threading.Event(), threading.Event()

    def hold() -> bytes:
        holding.set()
        release.wait(30)
        return b""

    worker = threading.Thread(target=limit.run, args=(hold,))
    worker.start()
    try:
        assert holding.wait(30)
        with pytest.raises(RenderBusy):
            limit.run(lambda: b"")
    finally:
        release.set()
        worker.join()
    assert limit.run(lambda: b"done") == b"done"
