"""Readings in storage: a source document's text and layout, read once per content.

A document that is not plain text (PDF, HTML, XML) is read by a ``read`` unit before its
verification and admission. The reading is stored in the output store, create-once, keyed
by the source bytes' sha256 and the reader (``readings/<sha[:2]>/<sha>-<reader key>.json``):
a redelivered read, a repeated run, a reprocessing run under a new policy, or another
corpus holding the same file, finds it and reads nothing.

A reading that fails in a deterministic way (the file is unreadable, or pages have no text
layer) is stored too, with its cause, so that it is not attempted again; a reading that ran
out of time is not stored (another machine, another load may finish it).

A long scan is shared out on the read queue, with no task waiting for another: a read unit
with more pages to OCR than the setting ``ocr_split_pages`` cuts them into ranges and sends a
helper task (``read_pages``) for each range but the first. Each recognised page is stored
create-once beside the reading (``readings/<sha[:2]>/<sha>-<reader key>/pages/<n>.json``,
:class:`Pieces`): recognition is a function of the page and the settings, so any worker's
piece of a page is the same. The unit recognises its first range, then the others from their
far end backwards, taking each page's piece when a helper stored it: it meets each helper,
going forwards, in the middle of its range (a page is done twice at most where they meet),
and when no worker is free it does all of it alone. Then it joins the pages into the reading
as one worker does, byte for byte. Helpers stand outside the run's accounting: what they do
is stored create-once, their failure only costs time, and one that finds the reading stored
stops.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groundswell.shared import metrics
from groundswell.shared.corpus import InputError, source_format
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.read.ocr import OcrPage, PageOrder

READINGS = "readings/"
READING_FORMAT = 1

# Why a document could not be read: the summary counts ``read.failed.<cause>``.
UNREADABLE, NO_TEXT, TIMEOUT, CONFLICT = "unreadable", "no_text", "timeout", "conflict"


def reader() -> str:
    """The reader (and its options) the pipeline reads with: part of every reading's key."""
    from groundswell.shared.read import reader_id

    return reader_id({})


def reading_key(source_sha256: str, reader_name: str) -> str:
    return _reading_base(source_sha256, reader_name) + ".json"


def _reading_base(source_sha256: str, reader_name: str) -> str:
    tag = hashlib.sha256(reader_name.encode()).hexdigest()[:16]
    return f"{READINGS}{source_sha256[:2]}/{source_sha256}-{tag}"


@dataclass
class StoredReading:
    """A reading as stored: the text and layout, or why there is none."""

    source_sha256: str
    format: str
    reader: str
    text: str | None = None
    layout: dict[str, Any] | None = None
    pages: int | None = None
    pages_without_text: list[int] | None = None
    warnings: list[str] | None = None
    error: dict[str, str] | None = None  # {"cause", "message"}

    @property
    def text_sha256(self) -> str | None:
        return None if self.text is None else hashlib.sha256(self.text.encode()).hexdigest()

    def failure(self, file: str) -> InputError | None:
        """Why the document's units cannot use this reading: a read error, or pages without
        a text layer (a document is never verified against an empty or partial text)."""
        if self.error is not None:
            return InputError(file, self.error["message"])
        missing = self.pages_without_text or []
        if missing or not (self.text or "").strip():
            pages = _ranges(missing) if missing else "all"
            of = f" of {self.pages}" if self.pages else ""
            return InputError(
                file,
                f"no text layer on page{'s' if len(missing) != 1 else ''} {pages}{of}: "
                "nothing to verify against there (OCR the PDF first, e.g. with ocrmypdf)",
            )
        return None

    @property
    def cause(self) -> str | None:
        if self.error is not None:
            return self.error["cause"]
        return NO_TEXT if self.failure("") is not None else None

    def dumps(self) -> bytes:
        body = {k: v for k, v in self.__dict__.items() if v is not None}
        body["reading_format"] = READING_FORMAT
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def loads(cls, data: bytes) -> StoredReading:
        body = json.loads(data)
        body.pop("reading_format", None)
        return cls(**body)


def page_list(pages: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``1-3,7`` (what ``read.parse_pages`` reads)."""
    return _ranges(pages).replace(" ", "")


def _ranges(pages: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``1-3, 7``."""
    out: list[str] = []
    for page in sorted(pages):
        if out and page == int(out[-1].rsplit("-", 1)[-1]) + 1:
            out[-1] = out[-1].split("-")[0] + f"-{page}"
        else:
            out.append(str(page))
    return ", ".join(out)


def load_reading(output: ObjectStore, source_sha256: str, reader_name: str) -> StoredReading | None:
    try:
        data = output.get(reading_key(source_sha256, reader_name))
    except KeyError:
        return None
    try:
        return StoredReading.loads(data)
    except (ValueError, TypeError):
        return None  # damaged: read again and replace


def read_source(
    output: ObjectStore,
    data: bytes,
    file: str,
    source_sha256: str,
    reader_name: str,
    helpers: Callable[[list[int]], None] | None = None,
) -> StoredReading:
    """Read a source file now and store the reading (create-once); a timeout is not stored.
    With ``helpers`` (send a helper task for these pages), a long scan is shared out."""
    from groundswell.shared.read import ReadError, ReadTimeout, read_bytes

    fmt = source_format(file) or "text"
    start = time.perf_counter()
    order = None
    if helpers is not None:
        order = split_order(Pieces(output, source_sha256, reader_name), helpers)
    try:
        reading = read_bytes(data, file, ocr_order=order)
    except ReadTimeout as exc:
        metrics.READS.labels(fmt, "failed").inc()
        return StoredReading(
            source_sha256, fmt, reader_name, error={"cause": TIMEOUT, "message": str(exc)}
        )
    except ReadError as exc:
        cause = getattr(exc, "cause", UNREADABLE)  # ocr_low_confidence says why of its own
        stored = StoredReading(
            source_sha256, fmt, reader_name, error={"cause": cause, "message": str(exc)}
        )
    else:
        stored = StoredReading(
            source_sha256,
            reading.format,
            reading.reader,
            text=reading.text,
            layout=reading.layout,
            pages=reading.pages
            if reading.pages is not None
            else (len(reading.layout["pages"]) if reading.layout else None),
            pages_without_text=reading.pages_without_text,
            warnings=reading.warnings,
        )
    seconds = time.perf_counter() - start
    metrics.READ_SECONDS.labels(fmt).observe(seconds)
    metrics.READS.labels(fmt, "failed" if stored.cause else "computed").inc()
    if stored.pages:
        metrics.READ_PAGES.labels(fmt).inc(stored.pages)
    key = reading_key(source_sha256, reader_name)
    if not output.put(key, stored.dumps(), create_only=True):
        found = load_reading(output, source_sha256, reader_name)
        if found is None:
            output.put(key, stored.dumps())
    return stored


# -- a long scan shared out ---------------------------------------------------------------

PIECE_FORMAT = 1


class Pieces:
    """The recognised pages of one source file under one reader, stored beside its reading.

    A piece is the page as ``ocr.page_json`` writes it, and who recognised it and how long it
    took (``by``: host and pid; ``seconds``), which the reading does not carry."""

    def __init__(self, output: ObjectStore, source_sha256: str, reader_name: str) -> None:
        self.output = output
        self.reading = reading_key(source_sha256, reader_name)
        self.prefix = _reading_base(source_sha256, reader_name) + "/pages/"

    def key(self, page: int) -> str:
        return f"{self.prefix}{page}.json"

    def load(self, page: int) -> OcrPage | None:
        from groundswell.shared.read.ocr import page_from_json

        try:
            body = json.loads(self.output.get(self.key(page)))
        except KeyError:
            return None
        except ValueError:
            return None  # damaged: recognised again (and not replaced: create-once)
        found = page_from_json(body)
        return found if found is not None and found.page == page else None

    def has(self, page: int) -> bool:
        return self.output.exists(self.key(page))

    def store(self, page: OcrPage, seconds: float) -> None:
        from groundswell.shared.read.ocr import page_json

        body = {
            "piece_format": PIECE_FORMAT,
            **page_json(page),
            "by": {"host": socket.gethostname(), "pid": os.getpid()},
            "seconds": round(seconds, 3),
        }
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self.output.put(self.key(page.page), data, create_only=True)

    def reading_stored(self) -> bool:
        return self.output.exists(self.reading)


def page_ranges(pages: list[int], per_range: int, most: int) -> list[list[int]]:
    """``pages`` cut into ranges of about ``per_range`` (at most ``most`` of them), their
    sizes one apart at most."""
    k = max(1, min(most, math.ceil(len(pages) / max(per_range, 1))))
    size, extra = divmod(len(pages), k)
    out, at = [], 0
    for i in range(k):
        n = size + (1 if i < extra else 0)
        out.append(pages[at : at + n])
        at += n
    return out


def _recognised(
    pieces: Pieces, recognise: Callable[[int], OcrPage], number: int, role: str
) -> OcrPage:
    start = time.perf_counter()
    page = recognise(number)
    pieces.store(page, time.perf_counter() - start)
    metrics.OCR_PAGES.labels(role, "recognised").inc()
    return page


def split_order(pieces: Pieces, helpers: Callable[[list[int]], None]) -> PageOrder:
    """A read unit's :data:`~groundswell.shared.read.ocr.PageOrder`: the pages one by one when
    they are few (setting ``ocr_split_pages``), else shared out (the module's docstring)."""
    from groundswell.shared.read.ocr import in_turn
    from groundswell.shared.settings import get_settings

    settings = get_settings()

    def order(pages: list[int], recognise: Callable[[int], OcrPage]) -> list[OcrPage]:
        if not settings.ocr_split_pages or len(pages) <= settings.ocr_split_pages:
            return in_turn(pages, recognise)
        ranges = page_ranges(pages, settings.ocr_split_pages, settings.ocr_split_ranges)
        for part in ranges[1:]:
            helpers(part)
        done: dict[int, OcrPage] = {}
        # Its own range forwards, then each other from its far end: a helper goes forwards.
        for number in [*ranges[0], *(n for part in reversed(ranges[1:]) for n in part[::-1])]:
            page = pieces.load(number)
            if page is None:
                page = _recognised(pieces, recognise, number, "unit")
            else:
                metrics.OCR_PAGES.labels("unit", "loaded").inc()
            done[number] = page
        return [done[n] for n in pages]

    return order


def help_order(pieces: Pieces) -> PageOrder:
    """A helper's order: its pages forwards, each not stored yet recognised and stored, until
    the reading is stored (the unit has joined the pages: nothing is left to help with)."""

    def order(pages: list[int], recognise: Callable[[int], OcrPage]) -> list[OcrPage]:
        for number in pages:
            if pieces.reading_stored():
                break
            if not pieces.has(number):
                _recognised(pieces, recognise, number, "helper")
        return []

    return order


def help_read(
    output: ObjectStore,
    get_source: Callable[[], bytes | None],
    file: str,
    source_sha256: str,
    pages: list[int],
) -> str:
    """A helper task's work: recognise and store ``pages`` of the source file (``get_source``
    reads it) for its read unit. What happened, for logs and tests: ``done``, ``stored`` (the
    reading was stored first), ``changed`` (the file is not the one the unit read), ``failed``
    (a read error: the unit meets it too, and reports it)."""
    from groundswell.shared.read import ReadError, recognise_pages

    pieces = Pieces(output, source_sha256, reader())
    if pieces.reading_stored():
        return "stored"
    data = get_source()
    if data is None or hashlib.sha256(data).hexdigest() != source_sha256:
        return "changed"
    try:
        recognise_pages(data, file, pages, help_order(pieces))
    except ReadError:
        return "failed"
    return "done"
