"""Page images of a PDF, for a person to see where a cited number sits on its page.

A page is rendered by PDFium (``pypdfium2``, which ships it in its wheel) at a resolution in
dots per inch, and encoded as a PNG here (zlib; no imaging library). The image covers the
page's CropBox, rotated as the page is shown: the same area, in the same orientation, as
the layout's word boxes (``pdf.py``: points from the CropBox's top left), so a word's box
in points times ``dpi / 72`` is its box in pixels.

Images are cached in the output store, create-once, by the source file's sha256, the page
and the resolution: ``renders/pages/<sha[:2]>/<sha>/<page>-<dpi>.png``. Rendering is bounded:
at most ``page_render_concurrency`` renders run at once in one process, and a request that
waits longer than ``page_render_wait_seconds`` for a turn is told to come back
(``RenderBusy``), so no request starts unbounded work.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from groundswell.shared.storage import ObjectStore

RENDERS = "renders/pages/"
MIN_DPI, MAX_DPI = 36, 300
# A page larger than this many pixels at the asked resolution is refused (a poster-sized
# page at 300 dpi would be hundreds of megabytes of pixels).
MAX_PIXELS = 40_000_000


class RenderError(ValueError):
    """The page cannot be rendered: not a PDF PDFium opens, no such page, or too large."""


class RenderBusy(RuntimeError):
    """Every render slot stayed taken for the wait allowed: come back shortly."""


# The first bytes of the images a scan may be (PNG, JPEG, TIFF either way round).
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")


def render_key(source_sha256: str, page: int, dpi: int) -> str:
    return f"{RENDERS}{source_sha256[:2]}/{source_sha256}/{page}-{dpi}.png"


def png(width: int, height: int, channels: int, stride: int, pixels: bytes) -> bytes:
    """A PNG of 8-bit gray (1 channel) or RGB (3) rows, each ``stride`` bytes apart."""
    color = {1: 0, 3: 2}[channels]
    row = width * channels
    raw = b"".join(
        b"\x00" + pixels[y * stride : y * stride + row] for y in range(height)
    )  # filter type 0 (none) on each row: zlib does the work

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def png_size(data: bytes) -> tuple[int, int]:
    """The width and height of a PNG (from its header)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def page_count(pdf: bytes) -> int:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(pdf)
    except pdfium.PdfiumError as exc:
        raise RenderError(f"PDFium cannot open the file: {exc}") from None
    try:
        return len(document)
    finally:
        document.close()


def render_page(pdf: bytes, page: int, dpi: int) -> bytes:
    """Page ``page`` (1-based) of the PDF as a PNG at ``dpi`` dots per inch; of a scan's
    image (PNG, JPEG, TIFF: read by OCR), its frame ``page`` at ``dpi``."""
    import pypdfium2 as pdfium

    if not MIN_DPI <= dpi <= MAX_DPI:
        raise RenderError(f"dpi {dpi}: from {MIN_DPI} to {MAX_DPI}")
    if pdf.startswith(IMAGE_MAGIC):
        return _image_page(pdf, page, dpi)
    try:
        document = pdfium.PdfDocument(pdf)
    except pdfium.PdfiumError as exc:
        raise RenderError(f"PDFium cannot open the file: {exc}") from None
    try:
        if not 1 <= page <= len(document):
            raise RenderError(f"page {page}: the document has {len(document)} pages")
        sheet = document[page - 1]
        try:
            width, height = sheet.get_size()
            scale = dpi / 72
            if width * scale * height * scale > MAX_PIXELS:
                raise RenderError(
                    f"page {page}: {width:g} x {height:g} points is too large at {dpi} dpi"
                )
            bitmap = sheet.render(scale=scale, rev_byteorder=True)
            try:
                return png(
                    bitmap.width,
                    bitmap.height,
                    bitmap.n_channels,
                    bitmap.stride,
                    bytes(bitmap.buffer),
                )
            finally:
                bitmap.close()
        finally:
            sheet.close()
    finally:
        document.close()


def _image_page(data: bytes, page: int, dpi: int) -> bytes:
    """A frame of an image, scaled from its own resolution (as the OCR reader took it, so
    the layout's boxes in points fall on it) to ``dpi``, as a PNG."""
    import io

    from PIL import Image, UnidentifiedImageError

    from groundswell.shared.read.ocr import image_dpi
    from groundswell.shared.settings import get_settings

    bad = (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError)
    try:
        image = Image.open(io.BytesIO(data))
        frames = getattr(image, "n_frames", 1)
    except bad as exc:
        raise RenderError(f"not an image that can be shown ({exc})") from None
    if not 1 <= page <= frames:
        raise RenderError(f"page {page}: the image has {frames} pages")
    try:
        image.seek(page - 1)  # the frame's own size and resolution
    except bad as exc:
        raise RenderError(f"page {page} of the image cannot be shown ({exc})") from None
    scale = dpi / image_dpi(image.info.get("dpi"), get_settings().ocr_dpi)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    if size[0] * size[1] > MAX_PIXELS:
        raise RenderError(f"page {page}: too large at {dpi} dpi")
    out = io.BytesIO()
    try:
        image.convert("L").resize(size, Image.Resampling.LANCZOS).save(out, "PNG")
    except bad as exc:
        raise RenderError(f"page {page} of the image cannot be shown ({exc})") from None
    return out.getvalue()


@dataclass
class RenderLimit:
    """At most ``slots`` renders at once; a turn waited for at most ``wait`` seconds."""

    slots: int
    wait: float

    def __post_init__(self) -> None:
        self._turns = threading.BoundedSemaphore(self.slots)

    def run(self, work: Callable[[], bytes]) -> bytes:
        if not self._turns.acquire(timeout=self.wait):
            raise RenderBusy(f"{self.slots} pages are being rendered: try again in a moment")
        try:
            return work()
        finally:
            self._turns.release()


_LIMITS: dict[tuple[int, float], RenderLimit] = {}
_LIMITS_LOCK = threading.Lock()


def render_limit(slots: int, wait: float) -> RenderLimit:
    """The process's render limit for these settings (one semaphore per process)."""
    with _LIMITS_LOCK:
        found = _LIMITS.get((slots, wait))
        if found is None:
            found = _LIMITS[(slots, wait)] = RenderLimit(slots, wait)
        return found


def page_image(
    output: ObjectStore,
    source_sha256: str,
    page: int,
    dpi: int,
    source: Callable[[], bytes],
    limit: RenderLimit,
) -> bytes:
    """The page's PNG at ``dpi``: the stored one, else rendered (within ``limit``) from the
    bytes ``source()`` reads, and stored create-once (a concurrent render's equal image
    wins)."""
    key = render_key(source_sha256, page, dpi)
    try:
        return output.get(key)
    except KeyError:
        pass

    def render() -> bytes:
        try:  # rendered by another request while this one waited for its turn
            return output.get(key)
        except KeyError:
            pass
        return render_page(source(), page, dpi)

    image = limit.run(render)
    output.put(key, image, create_only=True)
    return image


MAX_PAGE_VIEWS = 4  # pages shown as images for one task or document (the rest by number)


def page_views(
    layout: dict[str, Any] | None,
    spans: Iterable[tuple[Any, Any, str, str, str]],
    url: str,
    most: int = MAX_PAGE_VIEWS,
) -> list[dict[str, Any]]:
    """The pages that spans ``(start, end, css, label, title)`` (UTF-8 bytes of the layout's
    text) fall on, each with the boxes to draw over its image: the union of each span's word
    boxes, in the page's points (y down from the top, as the layout gives them), padded by a
    point. ``url`` + ``N.png`` is page N's image; at most ``most`` pages, in page order."""
    from groundswell.shared.read.regions import span_regions

    if not layout:
        return []
    pages: dict[int, dict[str, Any]] = {}
    sizes = {p["page"]: p for p in layout.get("pages") or () if isinstance(p, dict)}
    for start, end, css, label, title in spans:
        for r in span_regions(layout, start, end):
            size = sizes.get(r["page"])
            if size is None or not size.get("width") or not size.get("height"):
                continue
            if r["page"] not in pages:
                if len(pages) == most:
                    continue
                pages[r["page"]] = {
                    "page": r["page"],
                    "url": f"{url}{r['page']}.png",
                    "width": size["width"],
                    "height": size["height"],
                    "boxes": [],
                }
            pages[r["page"]]["boxes"].append(
                {
                    "css": css,
                    "label": label,
                    "title": title,
                    "x": round(r["x0"] - 1, 2),
                    "y": round(r["top"] - 1, 2),
                    "w": round(r["x1"] - r["x0"] + 2, 2),
                    "h": round(r["bottom"] - r["top"] + 2, 2),
                }
            )
    return [pages[n] for n in sorted(pages)]
