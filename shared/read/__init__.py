"""Reading: a source document (PDF, HTML, XML or text) turned into the NFC text that
verification and admission read, with the page and box of every word for PDFs.

The default readers match groundgate 0.11.0's ``read`` byte for byte (its package, with the
``pdf`` extra, is the dev-only oracle of the differential tests). ``READER_VERSION`` names what
the readers produce: it is part of the content address of a stored reading, so changing any
output byte means a new version.
"""

from __future__ import annotations

import os
import unicodedata
from os import PathLike
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from groundswell.shared.read.models import (
    FORMATS,
    MAX_PAGE,
    READER_VERSION,
    ReadError,
    Reading,
    ReadTimeout,
    parse_pages,
)
from groundswell.shared.settings import get_settings

if TYPE_CHECKING:
    from groundswell.shared.read.ocr import PageOrder

# File name endings (compared without regard to case) and the format each one names.
SUFFIXES = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".xml": "xml",
    ".txt": "text",
    ".text": "text",
    ".md": "text",
    ".markdown": "text",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
}


def reader_id(options: dict[str, Any]) -> str:
    """What made a reading: READER_VERSION, and the reader options in name order, with the
    OCR that reads pages without text (``groundswell-read/1;ocr=ocr-1/tesseract-5.3.0/...;
    xml_breaks=uslm-1``; see ``ocr.ocr_id``). Equal ids give equal text for equal bytes."""
    settings = get_settings()
    if settings.ocr_mode != "off":
        from groundswell.shared.read.ocr import ocr_id

        options = {**options, "ocr": ocr_id(settings)}
    return READER_VERSION + "".join(f";{k}={v}" for k, v in sorted(options.items()))


def format_of(name: str) -> str:
    """The format that a file name's ending names (``.XML`` is ``xml``)."""
    suffix = PurePath(name).suffix.lower()
    try:
        return SUFFIXES[suffix]
    except KeyError:
        raise ReadError(f"{name}: unsupported file type {suffix or '(none)'}") from None


def check_size(size: int, name: str) -> None:
    """Refuse a source of ``size`` bytes above the setting ``read_max_bytes``."""
    limit = get_settings().read_max_bytes
    if size > limit:
        raise ReadError(
            f"{name}: {size:,} bytes, more than the {limit:,} that reading allows "
            "(setting read_max_bytes)"
        )


def read_path(path: str | PathLike[str], *, pages: str | None = None, **options: Any) -> Reading:
    """:func:`read_bytes` of a local file, named by its path; too large a file is refused
    before it is loaded. OSError when it cannot be opened."""
    name = str(path)
    with open(path, "rb") as fh:
        check_size(os.fstat(fh.fileno()).st_size, name)
        data = fh.read()
    return read_bytes(data, name, pages=pages, **options)


def read_bytes(
    data: bytes,
    name: str,
    *,
    pages: str | None = None,
    format: str | None = None,
    ocr_order: PageOrder | None = None,
    **options: Any,
) -> Reading:
    """Read one source document: ``data`` are its bytes, ``name`` its file name (its ending
        picks the reader, unless ``format`` names one of FORMATS). ``pages`` ("1-3,7") selects the
        pages of a PDF; other formats read everything. ``options`` go to the reader of the format;
    ``ocr_order`` is how the pages OCR recognises are shared out (one by one when None).

        The settings ``read_max_bytes``, ``read_max_pages`` and ``read_seconds`` bound the work.
        Raises :class:`ReadError` (with ``name`` in its message) when the file cannot be read."""
    from groundswell.shared.read.guard import binary_kind, has_pdf_header, looks_like, time_limit

    settings = get_settings()
    if format is None:
        format = format_of(name)
    elif format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: one of {', '.join(FORMATS)}")
    wanted = parse_pages(pages) if pages is not None else None
    check_size(len(data), name)
    if not data:
        raise ReadError(f"{name}: the file is empty (0 bytes)")
    if format == "pdf" and not has_pdf_header(data):
        seems = looks_like(data)
        raise ReadError(
            f"{name}: not a PDF (no %PDF- header)" + (f"; it looks like {seems}" if seems else "")
        )
    if format not in ("pdf", "image") and (kind := binary_kind(data)):
        raise ReadError(f"{name}: {kind}, not {_FORMAT_NAMES[format]}: is it mislabelled?")
    with time_limit(settings.read_seconds, name):
        if format == "pdf":
            limits = {"max_pages": settings.read_max_pages, "time_limit": settings.read_seconds}
            reading = _pdf(data, name, wanted, limits, options)
            reading = _recognise(reading, data, name, settings, ocr_order)
        elif format == "image":
            reading = _image(data, name, settings, options, ocr_order)
        else:
            reading = _markup(data, name, format, dict(options))
    reading.reader = reader_id(options)
    return reading


_FORMAT_NAMES = {
    "pdf": "a PDF",
    "html": "HTML",
    "xml": "XML",
    "text": "plain text",
    "image": "an image",
}


def _named(exc: ReadError, name: str) -> ReadError:
    """The error with the file's name in front of its message, of the same type."""
    if str(exc).startswith(name):
        return exc
    return type(exc)(f"{name}: {exc}")


def _recognise(
    reading: Reading, data: bytes, name: str, settings: Any, order: PageOrder | None
) -> Reading:
    """The PDF reading with its pages OCRed (setting ``ocr_mode``): those without a text
    layer, or all. Without an OCR engine, pages without text stay so, with a warning."""
    from groundswell.shared.read import ocr

    if settings.ocr_mode == "off":
        return reading
    if settings.ocr_mode == "always":
        chosen = [p["page"] for p in (reading.layout or {}).get("pages", ())]
    else:
        chosen = list(reading.pages_without_text)
    if not chosen:
        return reading
    if ocr.engine_version(settings.ocr_command) is None:
        reading.warnings.append(
            f"no OCR engine ({settings.ocr_command!r} is not installed): pages without a text "
            "layer are not recognised"
        )
        return reading
    try:
        pages = ocr.ocr_pdf_pages(data, chosen, settings, order or ocr.in_turn)
        return ocr.splice(reading, pages, settings)
    except ReadError as exc:
        raise _named(exc, name) from exc


def _image(
    data: bytes, name: str, settings: Any, options: dict[str, Any], order: PageOrder | None
) -> Reading:
    from groundswell.shared.read import ocr

    if options:
        raise ValueError(f"no image reader option is called {', '.join(sorted(options))}")
    try:
        pages = ocr.ocr_image(data, settings, settings.read_max_pages, order or ocr.in_turn)
        return ocr.image_reading(pages, settings)
    except ReadError as exc:
        raise _named(exc, name) from exc


def recognise_pages(data: bytes, name: str, pages: list[int], order: PageOrder) -> None:
    """Recognise ``pages`` of a PDF or image file in ``order`` (which keeps what it wants of
    them), within the setting ``read_seconds``: a helper's share of a long scan (shared/runs/
    reading.py). ReadError as :func:`read_bytes` raises it."""
    from groundswell.shared.read import ocr
    from groundswell.shared.read.guard import time_limit

    settings = get_settings()
    format = format_of(name)
    with time_limit(settings.read_seconds, name):
        if format == "pdf":
            ocr.ocr_pdf_pages(data, pages, settings, order)
        elif format == "image":
            ocr.ocr_image(data, settings, settings.read_max_pages, order, pages)
        else:
            raise ReadError(f"{name}: {_FORMAT_NAMES[format]} has no pages to recognise")


def _pdf(
    data: bytes,
    name: str,
    pages: list[int] | None,
    limits: dict[str, Any],
    options: dict[str, Any],
) -> Reading:
    import inspect

    from groundswell.shared.read.pdf import read_pdf  # pdfminer loads only for PDFs

    # The PDF reader's options are its keyword parameters, but for the pages and the limits.
    known = set(inspect.signature(read_pdf).parameters) - {"data", "pages", *limits}
    if unknown := sorted(set(options) - known):
        raise ValueError(f"no pdf reader option is called {', '.join(unknown)}")
    try:
        return read_pdf(data, pages=pages, **limits, **options)
    except ReadError as exc:
        raise _named(exc, name) from exc


def _markup(data: bytes, name: str, format: str, options: dict[str, Any]) -> Reading:
    from groundswell.shared.read.guard import looks_like
    from groundswell.shared.read.markup import (
        XML_BREAKS,
        UnsafeXML,
        XMLError,
        html_text,
        xml_text,
    )
    from groundswell.shared.read.text import decode_text

    breaks = options.pop("xml_breaks", None) if format == "xml" else None
    if options:
        raise ValueError(f"no {format} reader option is called {', '.join(sorted(options))}")
    if format == "xml":
        if breaks is not None and breaks not in XML_BREAKS:
            raise ValueError(f"xml_breaks is one of {', '.join(XML_BREAKS)}, not {breaks!r}")
        try:
            text = xml_text(data, breaks)
        except XMLError as exc:
            seems = looks_like(data)
            hint = f"; it looks like {seems}" if seems not in (None, "XML") else ""
            raise ReadError(f"{name}: not well-formed XML ({exc}){hint}") from None
        except UnsafeXML as exc:
            raise ReadError(f"{name}: unsafe XML: {exc}") from None
    elif format == "html":
        text = html_text(decode_text(data, name))
    else:
        text = decode_text(data, name)
    warnings = [] if text.strip() else [f"{PurePath(name).name}: no text was extracted"]
    return Reading(unicodedata.normalize("NFC", text), format, warnings=warnings)


__all__ = [
    "FORMATS",
    "MAX_PAGE",
    "READER_VERSION",
    "SUFFIXES",
    "ReadError",
    "ReadTimeout",
    "Reading",
    "check_size",
    "format_of",
    "parse_pages",
    "read_bytes",
    "read_path",
    "reader_id",
    "recognise_pages",
]
