"""Readings in storage: a source document's text and layout, read once per content.

A document that is not plain text (PDF, HTML, XML) is read by a ``read`` unit before its
verification and admission. The reading is stored in the output store, create-once, keyed
by the source bytes' sha256 and the reader (``readings/<sha[:2]>/<sha>-<reader key>.json``):
a redelivered read, a repeated run, a reprocessing run under a new policy, or another
corpus holding the same file, finds it and reads nothing.

A reading that fails in a deterministic way (the file is unreadable, or pages have no text
layer) is stored too, with its cause, so that it is not attempted again; a reading that ran
out of time is not stored (another machine, another load may finish it).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from groundswell.shared import metrics
from groundswell.shared.corpus import InputError, source_format
from groundswell.shared.storage import ObjectStore

READINGS = "readings/"
READING_FORMAT = 1

# Why a document could not be read: the summary counts ``read.failed.<cause>``.
UNREADABLE, NO_TEXT, TIMEOUT, CONFLICT = "unreadable", "no_text", "timeout", "conflict"


def reader() -> str:
    """The reader (and its options) the pipeline reads with: part of every reading's key."""
    from groundswell.shared.read import reader_id

    return reader_id({})


def reading_key(source_sha256: str, reader_name: str) -> str:
    tag = hashlib.sha256(reader_name.encode()).hexdigest()[:16]
    return f"{READINGS}{source_sha256[:2]}/{source_sha256}-{tag}.json"


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
    output: ObjectStore, data: bytes, file: str, source_sha256: str, reader_name: str
) -> StoredReading:
    """Read a source file now and store the reading (create-once); a timeout is not stored."""
    from groundswell.shared.read import ReadError, ReadTimeout, read_bytes

    fmt = source_format(file) or "text"
    start = time.perf_counter()
    try:
        reading = read_bytes(data, file)
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
