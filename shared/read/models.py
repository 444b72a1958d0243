"""What a reading is: the text a source document was read into (:class:`Reading`), the
errors that say it cannot be read, and the page ranges a reading selects. A leaf of the
package: the readers (``pdf.py``, ``text.py``, ``guard.py``, through it ``markup.py``) and the
package's entry points (``__init__.py``) build on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

READER_VERSION = "groundswell-read/1"

FORMATS = ("pdf", "html", "xml", "text", "image")  # image: PNG, JPEG, TIFF, read by OCR

MAX_PAGE = 100_000  # the highest page number a page range may name


class ReadError(ValueError):
    """A deterministic reason the file cannot be read (encrypted, truncated, mislabelled,
    too large, no text layer...). Never retried; it fails the document's units."""


class ReadTimeout(ReadError):
    """Reading took longer than the setting ``read_seconds`` allows."""


@dataclass
class Reading:
    text: str  # NFC
    format: str  # one of FORMATS
    layout: dict[str, Any] | None = None  # groundgate_layout 0.1 JSON object (PDFs only)
    pages: int | None = None  # pages in the file (PDFs)
    pages_without_text: list[int] = field(default_factory=list)  # 1-based
    warnings: list[str] = field(default_factory=list)
    reader: str = READER_VERSION  # with the reader options that made it: see reader_id


def parse_pages(spec: str) -> list[int]:
    """The 1-based pages of a range list, in its order: ``"1-3,7"`` is ``[1, 2, 3, 7]``.
    Raises ValueError for a part that is not ``N`` or ``N-M`` with 1 <= N <= M <= MAX_PAGE."""
    pages: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last if dash else first)
        except ValueError:
            low = high = 0
        if not 1 <= low <= high <= MAX_PAGE:
            raise ValueError(f"bad page range {part!r}")
        pages += range(low, high + 1)
    return pages
