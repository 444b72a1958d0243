"""OCR: a reader of scanned pages, beside ``pdf.py``, ``markup.py`` and ``text.py``.

OCR is a reader (DESIGN.md, "Where the next capabilities go"): it turns a page image, or a PDF
page without a text layer (``Reading.pages_without_text``), into the same text and layout a
PDF reading writes (NFC text; groundgate_layout with the page and box of every word), and is
content-addressed like the other readers: the engine and its settings are part of its
``reader_id``, so a stored reading is reused only when the same OCR made it. It builds on
``models.py`` (Reading, ReadError) and ``guard.py`` (time and size limits) as the other
readers do; ``__init__.py`` picks it by format or by a page that has no text.

The engine is Tesseract, run as a program (Debian's ``tesseract-ocr``; its TSV output gives
every word with its box in pixels and its confidence). A PDF page is rendered by PDFium
(``pypdfium2``) in gray at the setting ``ocr_dpi``; an image (PNG, JPEG, TIFF, one page per
frame) is read with Pillow at its own resolution. Word boxes are given in PDF points from
the page's top left (pixels × 72 / dpi), as the PDF reader gives them, so the review page
draws them over the page image the same way.

A recognised page records it in its layout entry (``"ocr"``: reader, engine and version,
languages, dpi, word count and mean word confidence). A page whose mean word confidence is
under the setting ``ocr_min_confidence`` fails the reading (:class:`OcrLowConfidence`, cause
``ocr_low_confidence``, naming the page): a claim is never verified against text the engine
itself doubts.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import subprocess
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from groundswell.shared.read.guard import check_deadline, remaining_seconds
from groundswell.shared.read.models import ReadError, Reading
from groundswell.shared.settings import Settings

OCR_READER = "ocr-1"  # the version of what this module writes: a change of output is a new one
ENGINE = "tesseract"
MODES = ("off", "missing", "always")  # setting ocr_mode: never, pages without text, every page
MAX_OCR_PIXELS = 60_000_000  # a page image above this is refused (a poster at 300 dpi)

BLOCK_SEP, LINE_SEP, WORD_SEP, PAGE_SEP = "\n\n", "\n", " ", "\n\f"  # as pdf.py writes them
LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
)


class OcrLowConfidence(ReadError):
    """A recognised page's mean word confidence is under the setting ``ocr_min_confidence``."""

    cause = "ocr_low_confidence"


class OcrUnavailable(ReadError):
    """The OCR engine is not installed (or does not run)."""


@dataclass
class OcrWord:
    text: str
    x0: float  # points from the page's left
    top: float  # points from the page's top
    x1: float
    bottom: float
    confidence: float  # 0-100, Tesseract's


@dataclass
class OcrPage:
    """One recognised page: its words as paragraphs of lines, in reading order."""

    page: int  # 1-based
    width: float  # points
    height: float
    dpi: float
    paragraphs: list[list[list[OcrWord]]] = field(default_factory=list)

    @property
    def words(self) -> list[OcrWord]:
        return [w for par in self.paragraphs for line in par for w in line]

    @property
    def confidence(self) -> float | None:
        """The mean word confidence (0-100), None when no word was recognised."""
        words = self.words
        return round(sum(w.confidence for w in words) / len(words), 2) if words else None


# How the pages of a document are recognised: given the page numbers and how to recognise one
# of them, the pages recognised, in the order given. Reading alone recognises each in turn
# (:func:`in_turn`); a run shares a long scan's pages out across workers with an order of its
# own (shared/runs/reading.py), which any order may do: a page's recognition is a function of
# the page and the settings.
PageOrder = Callable[[list[int], Callable[[int], "OcrPage"]], list["OcrPage"]]


def in_turn(pages: list[int], recognise: Callable[[int], OcrPage]) -> list[OcrPage]:
    return [recognise(n) for n in pages]


class _PageModel(BaseModel):
    """A recognised page as stored (``page_json``): words as ``[text, x0, top, x1, bottom,
    confidence]``. Numbers keep their JSON type (a PDF's dpi is the int setting), so a page
    loaded makes the reading byte for byte as the page recognised."""

    model_config = ConfigDict(extra="ignore")

    page: int = Field(ge=1)
    width: int | float
    height: int | float
    dpi: int | float
    paragraphs: list[list[list[tuple[str, float, float, float, float, float]]]]


def page_json(page: OcrPage) -> dict[str, Any]:
    """A recognised page as JSON (:func:`page_from_json` reads it back)."""
    return {
        "page": page.page,
        "width": page.width,
        "height": page.height,
        "dpi": page.dpi,
        "paragraphs": [
            [[[w.text, w.x0, w.top, w.x1, w.bottom, w.confidence] for w in line] for line in par]
            for par in page.paragraphs
        ],
    }


def page_from_json(body: Any) -> OcrPage | None:
    """The page :func:`page_json` wrote; None when ``body`` is not one (recognise it again)."""
    try:
        model = _PageModel.model_validate(body)
    except ValidationError:
        return None
    paragraphs = [[[OcrWord(*w) for w in line] for line in par] for par in model.paragraphs]
    return OcrPage(model.page, model.width, model.height, model.dpi, paragraphs)


# -- the engine -------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def engine_version(command: str) -> str | None:
    """Tesseract's version (``5.3.0``), None when ``command`` is not a runnable Tesseract."""
    if shutil.which(command) is None:
        return None
    try:
        done = subprocess.run(
            [command, "--version"], capture_output=True, timeout=30, check=False, text=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    words = (done.stdout or done.stderr).split()
    return words[1] if len(words) > 1 and words[0] == ENGINE else None


def ocr_id(settings: Settings) -> str:
    """What OCR would make a reading, as a reader option value (``ocr-1/tesseract-5.3.0/eng/
    300dpi/floor-50/missing``): every setting that changes its text or its verdict."""
    version = engine_version(settings.ocr_command) or "missing"
    return (
        f"{OCR_READER}/{ENGINE}-{version}/{settings.ocr_languages}/{settings.ocr_dpi}dpi"
        f"/floor-{settings.ocr_min_confidence:g}/{settings.ocr_mode}"
    )


def _engine(settings: Settings) -> str:
    version = engine_version(settings.ocr_command)
    if version is None:
        raise OcrUnavailable(
            f"the OCR engine {settings.ocr_command!r} is not installed "
            "(Debian: apt-get install tesseract-ocr tesseract-ocr-eng; setting ocr_command)"
        )
    return version


def recognise_pixels(
    pixels: bytes, width: int, height: int, dpi: float, page: int, settings: Settings
) -> OcrPage:
    """Recognise one 8-bit gray image (``width`` × ``height`` pixels, rows unpadded) into a
    page whose boxes are in points at ``dpi``."""
    _engine(settings)
    check_deadline()
    pgm = b"P5\n%d %d\n255\n" % (width, height) + pixels  # PNM: no encoding cost
    left = remaining_seconds()
    # One thread per page: a worker runs one process per core, and Tesseract's OpenMP threads
    # would only compete with them.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    command = [settings.ocr_command, "stdin", "stdout", "-l", settings.ocr_languages]
    command += ["--dpi", str(round(dpi)), "--psm", "3", "tsv"]
    try:
        done = subprocess.run(
            command, input=pgm, capture_output=True, timeout=left, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        check_deadline()
        raise ReadError(f"page {page}: OCR did not finish within the time left") from None
    except OSError as exc:
        raise OcrUnavailable(f"the OCR engine cannot be run: {exc}") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ReadError(f"page {page}: OCR failed ({detail[-1] if detail else done.returncode})")
    scale = 72 / dpi
    return OcrPage(
        page,
        round(width * scale, 2),
        round(height * scale, 2),
        dpi,
        _paragraphs(done.stdout.decode("utf-8", "replace"), scale),
    )


def _paragraphs(tsv: str, scale: float) -> list[list[list[OcrWord]]]:
    """Tesseract's TSV (level 5 rows are words) as paragraphs of lines of words."""
    paragraphs: dict[tuple[str, str], dict[str, list[OcrWord]]] = {}
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5":
            continue
        text = unicodedata.normalize("NFC", cells[11].translate(LIGATURES)).strip()
        if not text:
            continue
        try:
            left, top, w, h = (int(c) for c in cells[6:10])
            confidence = float(cells[10])
        except ValueError:
            continue
        key = (cells[2], cells[3])  # block, paragraph
        line = paragraphs.setdefault(key, {}).setdefault(cells[4], [])
        line.append(
            OcrWord(
                text,
                round(left * scale, 2),
                round(top * scale, 2),
                round((left + w) * scale, 2),
                round((top + h) * scale, 2),
                max(confidence, 0.0),
            )
        )
    return [list(lines.values()) for lines in paragraphs.values()]


# -- pages of a PDF, and images ---------------------------------------------------------


def ocr_pdf_pages(
    data: bytes, pages: Iterable[int], settings: Settings, order: PageOrder = in_turn
) -> list[OcrPage]:
    """Render each page (1-based) of the PDF at the setting ``ocr_dpi`` and recognise it, one
    page at a time (a page's bitmap is freed before the next is rendered), in ``order``."""
    import pypdfium2 as pdfium

    dpi = settings.ocr_dpi
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise ReadError(f"the PDF cannot be rendered for OCR ({exc})") from None

    def recognise(number: int) -> OcrPage:
        check_deadline()
        if not 1 <= number <= len(document):
            raise ReadError(f"page {number}: the PDF has {len(document)} pages")
        sheet = document[number - 1]
        try:
            width, height = sheet.get_size()
            scale = dpi / 72
            if width * scale * height * scale > MAX_OCR_PIXELS:
                raise ReadError(
                    f"page {number}: {width:g} x {height:g} points is too large to "
                    f"recognise at {dpi} dpi (setting ocr_dpi)"
                )
            bitmap = sheet.render(scale=scale, grayscale=True)
            try:
                pixels = _rows(bytes(bitmap.buffer), bitmap.width, bitmap.height, bitmap.stride)
                pw, ph = bitmap.width, bitmap.height
            finally:
                bitmap.close()
        finally:
            sheet.close()
        page = recognise_pixels(pixels, pw, ph, dpi, number, settings)
        # the page's size as the PDF reader gives it, not as rounded to whole pixels
        page.width, page.height = round(width, 2), round(height, 2)
        return page

    try:
        return order(list(pages), recognise)
    finally:
        document.close()


def _rows(buffer: bytes, width: int, height: int, stride: int) -> bytes:
    if stride == width:
        return buffer[: width * height]
    return b"".join(buffer[y * stride : y * stride + width] for y in range(height))


def ocr_image(
    data: bytes,
    settings: Settings,
    max_pages: int | None = None,
    order: PageOrder = in_turn,
    pages: list[int] | None = None,
) -> list[OcrPage]:
    """Recognise an image file (PNG, JPEG, TIFF; each frame of a TIFF is a page): its
    ``pages`` (all when None), one frame at a time, in ``order``."""
    from PIL import Image, UnidentifiedImageError

    _engine(settings)
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
        count = getattr(image, "n_frames", 1)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ReadError(f"not a readable image ({exc})") from None
    if max_pages is not None and count > max_pages:
        raise ReadError(
            f"the image has more than {max_pages} pages, the limit (setting read_max_pages)"
        )

    def recognise(number: int) -> OcrPage:
        check_deadline()
        if not 1 <= number <= count:
            raise ReadError(f"page {number}: the image has {count} pages")
        image.seek(number - 1)
        if image.width * image.height > MAX_OCR_PIXELS:
            raise ReadError(f"page {number}: {image.width} x {image.height} pixels is too large")
        dpi = image_dpi(image.info.get("dpi"), settings.ocr_dpi)
        gray = image.convert("L")
        return recognise_pixels(gray.tobytes(), gray.width, gray.height, dpi, number, settings)

    with image:
        return order(pages if pages is not None else list(range(1, count + 1)), recognise)


def image_dpi(found: Any, default: int) -> float:
    """The image's own resolution (its x resolution), else ``default``: many scanners write
    none, or a meaningless 1 or 72 for screen images."""
    try:
        dpi = float(found[0])
    except (TypeError, ValueError, IndexError):
        return float(default)
    if not 50 <= dpi <= 2400:
        return float(default)
    # PNG stores dots per metre: 300 dpi comes back as 299.9994
    return float(round(dpi)) if abs(dpi - round(dpi)) < 0.05 else dpi


# -- the reading ------------------------------------------------------------------------


def page_record(page: OcrPage, settings: Settings) -> dict[str, Any]:
    """What the layout's page entry records about its recognition."""
    return {
        "reader": OCR_READER,
        "engine": f"{ENGINE} {engine_version(settings.ocr_command)}",
        "languages": settings.ocr_languages,
        "dpi": round(page.dpi, 2),
        "words": len(page.words),
        "confidence": page.confidence,
    }


def check_confidence(pages: list[OcrPage], settings: Settings) -> None:
    """Raise :class:`OcrLowConfidence` naming every recognised page under the floor."""
    floor = settings.ocr_min_confidence
    low = [p for p in pages if p.confidence is not None and p.confidence < floor]
    if low:
        named = ", ".join(f"page {p.page} ({p.confidence:g})" for p in low)
        raise OcrLowConfidence(
            f"OCR is unsure of {named}: mean word confidence under {floor:g} "
            "(setting ocr_min_confidence); nothing is verified against that text"
        )


def image_reading(pages: list[OcrPage], settings: Settings) -> Reading:
    """The reading of an image file: its recognised pages."""
    check_confidence(pages, settings)
    pieces = [_ocr_piece(p, settings) for p in pages]
    reading = join_pages(pieces, "image")
    reading.pages = len(pages)
    reading.warnings += _warnings(pages)
    return reading


def splice(reading: Reading, pages: list[OcrPage], settings: Settings) -> Reading:
    """The PDF ``reading`` with ``pages`` recognised in place of what it read on them."""
    check_confidence(pages, settings)
    layout = reading.layout or {}
    data = reading.text.encode("utf-8")
    words: dict[int, list[list[Any]]] = {}
    for w in layout.get("words", ()):
        words.setdefault(w[2], []).append(w)
    recognised = {p.page: p for p in pages}
    pieces: list[_Piece] = []
    for entry in layout.get("pages", ()):
        number = entry["page"]
        if number in recognised:
            pieces.append(_ocr_piece(recognised[number], settings))
            continue
        start = entry["start"]
        pieces.append(
            _Piece(
                entry,
                data[start : entry["end"]].decode("utf-8"),
                [[w[0] - start, w[1] - start, *w[2:]] for w in words.get(number, ())],
            )
        )
    out = join_pages(pieces, reading.format)
    out.pages = reading.pages
    done = {p.page for p in pages if p.words}
    out.pages_without_text = [n for n in reading.pages_without_text if n not in done]
    out.warnings = [
        w
        for w in reading.warnings
        if not any(w.startswith(f"page {n} has no text layer") for n in done)
    ] + _warnings(pages)
    return out


def _warnings(pages: list[OcrPage]) -> list[str]:
    return [f"page {p.page}: OCR recognised no words" for p in pages if not p.words]


@dataclass
class _Piece:
    """One page of a reading: its layout entry (size, and what recognised it), its text and
    its words (``[start, end, page, x0, top, x1, bottom]``, offsets in the page's UTF-8)."""

    entry: dict[str, Any]
    text: str
    words: list[list[Any]]


def _ocr_piece(page: OcrPage, settings: Settings) -> _Piece:
    parts: list[str] = []
    size = 0
    words: list[list[Any]] = []
    for p, paragraph in enumerate(page.paragraphs):
        for n, line in enumerate(paragraph):
            for k, word in enumerate(line):
                sep = (
                    (BLOCK_SEP if p else "")
                    if not n and not k
                    else (LINE_SEP if not k else WORD_SEP)
                )
                parts.append(sep)
                size += len(sep)
                begin = size
                parts.append(word.text)
                size += len(word.text.encode("utf-8"))
                words.append([begin, size, page.page, word.x0, word.top, word.x1, word.bottom])
    entry = {
        "page": page.page,
        "width": page.width,
        "height": page.height,
        "ocr": page_record(page, settings),
    }
    return _Piece(entry, "".join(parts), words)


def join_pages(pieces: list[_Piece], format: str) -> Reading:
    """A reading of pages, joined as the PDF reader joins them (a newline and a form feed)."""
    from groundswell.shared.admit.digest import text_digest

    from .pdf import LAYOUT_VERSION

    parts: list[str] = []
    size = 0
    entries: list[dict[str, Any]] = []
    words: list[list[Any]] = []
    empty: list[int] = []
    for i, piece in enumerate(pieces):
        if i:
            parts.append(PAGE_SEP)
            size += len(PAGE_SEP)
        start = size
        parts.append(piece.text)
        size += len(piece.text.encode("utf-8"))
        entries.append({**piece.entry, "start": start, "end": size})
        words += [[w[0] + start, w[1] + start, *w[2:]] for w in piece.words]
        if size == start:
            empty.append(piece.entry["page"])
    text = "".join(parts)
    layout = {
        "groundgate_layout": LAYOUT_VERSION,
        "document_sha256": text_digest("document", text),
        "pages": entries,
        "words": words,
    }
    return Reading(text, format, layout=layout, pages_without_text=empty)
