"""PDF reading: the NFC text of a PDF's text layer, and the page and box of every word.

The output is groundgate 0.11.0's ``read`` for PDFs, byte for byte (text and groundgate_layout
0.1 JSON), which the differential tests check on real documents:

* pages are separated by a newline and a form feed, pdfminer's text boxes by a blank line and
  text lines by a newline; table rows are rebuilt as lines with a tab between cells
  (``pdf_tables``);
* a word is a run of visible glyphs; ligature glyphs are spelled out, and each word is NFC;
* a glyph clearly smaller than the one before it and raised (or lowered) is a superscript (or
  subscript) and is marked ``^`` (``_``), so a raised 9 after 10 reads ``10^9``, never ``109``;
* a word drawn wholly outside the page's CropBox (proof marks, slugs) is not text a reader can
  see: it is dropped, and a warning counts the drops;
* a page that yields no text gets a warning that it has no text layer (it needs OCR).

Ours alone: clear errors for files that are not readable PDFs (empty, HTML or other files named
``.pdf``, truncated, encrypted with a password), a limit on the pages read and a time limit per
document.
"""

from __future__ import annotations

import io
import time
import unicodedata
from collections.abc import Iterable
from typing import Any

from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from pdfminer.pdfpage import PDFPage
from pdfminer.pdfparser import PDFParser

from groundswell.shared.admit.digest import text_digest

from .guard import check_deadline, has_pdf_header, looks_like
from .models import ReadError, Reading, ReadTimeout, parse_pages
from .pdf_engine import Document, Glyph, GlyphLine, PageReader, TooManyBoxes
from .pdf_grid import ruled_tables
from .pdf_tables import Line, Word, compose

LAYOUT_VERSION = "0.1"  # groundgate_layout
DEFAULT_MAX_PAGES = 2000
DEFAULT_TIME_LIMIT = 300.0  # seconds per document

PAGE_SEP = "\n\f"
BLOCK_SEP = "\n\n"
ROW_SEP = "\n"
CELL_SEP = "\t"
WORD_SEP = " "

SCRIPT_SIZE = 0.85  # a glyph below this fraction of the base glyph's size may be a script
SCRIPT_SHIFT = 0.2  # ... when its baseline moved this fraction of the base size up or down

SPELLED = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)

# Reader option ``pdf_tables``: readings of tables that are better than groundgate's, by name.
#
# ``cells-1``: the cells of a number table as a reader sees them. groundgate keeps a lone
# currency sign as a cell only where other rows print one in the same column, and counts a
# footnote mark such as "(3)", that pdfminer sets apart from its label, as a figure. Either breaks
# the columns, and the rows then lose every tab. In Apple's 10-Q for Q1 2023 (page 10, net sales
# by category) groundgate writes
#     "2022 2021"  (set apart by blank lines)
#     "iPhone ® (1) $ 65,775 $ 71,628"
#     "Services (3) 20,766 19,516"
# where no amount can be told from its column. With ``cells-1`` a cell of currency signs joins
# the figure after it, and a cell of footnote marks ("(3)", "(1)(2)", "® (1)") right after a
# label joins the label, unless a figure of the table stands above or below it (then "(3)" is
# an amount); the same rows read
#     "<tab>2022<tab>2021"
#     "iPhone ® (1)<tab>$ 65,775<tab>$ 71,628"
#     "Services (3)<tab>20,766<tab>19,516"
# Tables where groundgate kept the signs in columns of their own ("$<tab>56,455") now keep them
# with their amounts too ("$ 56,455"): one cell per amount in every row.
TABLE_READINGS = {"cells-1": "number-table cells as a reader sees them"}

NO_TEXT_LAYER = "page {} has no text layer; OCR the PDF first (for example with ocrmypdf)"


def page_numbers(spec: str | Iterable[int]) -> list[int]:
    """Page numbers (1-based, sorted, each once) from "1-3,7" or from numbers."""
    if isinstance(spec, str):
        try:
            spec = parse_pages(spec)
        except ValueError as e:
            raise ReadError(f"{e} (expected e.g. 1-3,7)") from None
    numbers = sorted(set(spec))
    if not numbers or numbers[0] < 1:
        raise ReadError("pages must be 1-based page numbers")
    return numbers


def read_pdf(
    data: bytes,
    *,
    pages: str | Iterable[int] | None = None,
    max_pages: int | None = DEFAULT_MAX_PAGES,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    pdf_tables: str | None = None,
) -> Reading:
    """Read a PDF's text layer. ``pages`` selects pages ("1-3,7"); ``max_pages`` caps the
    pages read and ``time_limit`` (seconds) the whole read: None for no limit. ``pdf_tables``
    names a better reading of tables than groundgate's (one of TABLE_READINGS); None is
    groundgate's. Raises ``ReadError`` for a file that is not a readable PDF or that breaks a
    limit, ValueError for an unknown option value."""
    if pdf_tables is not None and pdf_tables not in TABLE_READINGS:
        raise ValueError(f"pdf_tables is one of {', '.join(TABLE_READINGS)}, not {pdf_tables!r}")
    wanted = None if pages is None else page_numbers(pages)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    try:
        document = Document(PDFParser(io.BytesIO(data)), password="")
        all_pages = list(PDFPage.create_pages(document))
    except PDFPasswordIncorrect:
        raise ReadError("the PDF is encrypted and needs a password; decrypt it first") from None
    except PDFEncryptionError as e:
        raise ReadError(f"the PDF is encrypted in a way that cannot be read ({e})") from None
    except ReadError:  # a timeout from the dispatcher's alarm
        raise
    except Exception as e:  # pdfminer's own errors (PSException), and its failures on junk
        raise ReadError(_diagnose(data, e)) from e
    if wanted is None:
        chosen = list(enumerate(all_pages, 1))
    else:
        chosen = [(n, all_pages[n - 1]) for n in wanted if n <= len(all_pages)]
    if max_pages is not None and len(chosen) > max_pages:
        raise ReadError(
            f"the PDF has {len(chosen)} pages to read, more than the limit of {max_pages}; "
            f"choose the pages to read (e.g. pages 1-{max_pages})"
        )
    try:
        reading = _read_pages(chosen, deadline, time_limit, pdf_tables == "cells-1")
    except ReadError:
        raise
    except Exception as e:
        raise ReadError(_diagnose(data, e)) from e
    reading.pages = len(all_pages)
    if not chosen:
        reading.warnings.append("no pages were extracted")
    elif wanted is not None and len(chosen) < len(wanted):
        reading.warnings.append(f"the PDF has fewer pages than requested ({len(chosen)} extracted)")
    return reading


def _diagnose(data: bytes, error: BaseException) -> str:
    """A plain reason why pdfminer could not read the file."""
    if not data:
        return "the file is empty (0 bytes), not a PDF"
    if not has_pdf_header(data):
        seems = looks_like(data)
        return "not a PDF (no %PDF- header)" + (f"; it looks like {seems}" if seems else "")
    if b"%%EOF" not in data[-2048:]:
        return (
            f"the PDF is truncated or damaged: it ends without %%EOF after {len(data)} bytes "
            f"({type(error).__name__}: {error})"
        )
    return f"not a readable PDF ({type(error).__name__}: {error})"


class _Text:
    """The output text, built piece by piece, with its length in UTF-8 bytes."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, s: str) -> None:
        self.parts.append(s)
        self.size += len(s.encode("utf-8"))


def _read_pages(
    chosen: list[tuple[int, PDFPage]],
    deadline: float | None,
    time_limit: float | None,
    cells_as_read: bool = False,
) -> Reading:
    reader = PageReader(check=_checker(deadline, time_limit))
    out = _Text()
    page_entries: list[dict[str, Any]] = []
    words_out: list[list[Any]] = []
    warnings: list[str] = []
    empty: list[int] = []
    for number, page in chosen:
        check_deadline()
        if deadline is not None and time.monotonic() > deadline:
            raise ReadTimeout(
                f"reading the PDF took longer than the limit of {time_limit:g} s "
                f"(stopped before page {number})"
            )
        try:
            glyphs = reader.read(page)
        except TooManyBoxes as e:
            raise ReadError(f"page {number}: {e}") from None
        vx0, vy0, vx1, vy1 = glyphs.visible
        blocks: list[list[Line]] = []
        hidden = 0
        for box in glyphs.boxes:
            lines: list[Line] = []
            for glyph_line in box:
                line: Line = []
                for text, x0, y0, x1, y1 in _glyph_words(glyph_line):
                    if x1 <= vx0 or x0 >= vx1 or y1 <= vy0 or y0 >= vy1:
                        hidden += 1
                        continue
                    line.append(
                        Word(
                            unicodedata.normalize("NFC", text.translate(SPELLED)),
                            round(x0 - vx0, 2),
                            round(vy1 - y1, 2),
                            round(x1 - vx0, 2),
                            round(vy1 - y0, 2),
                        )
                    )
                if line:
                    lines.append(line)
            if lines:
                blocks.append(lines)
        rules = []
        for x0, y0, x1, y1 in glyphs.rules:
            if x1 >= vx0 and x0 <= vx1 and y1 >= vy0 and y0 <= vy1:
                x0, y0, x1, y1 = max(x0, vx0), max(y0, vy0), min(x1, vx1), min(y1, vy1)
                rules.append((x0 - vx0, vy1 - y1, x1 - vx0, vy1 - y0))
        if page_entries:
            out.add(PAGE_SEP)
        start = out.size
        for b, block in enumerate(compose(blocks, ruled_tables(rules), cells_as_read)):
            if b:
                out.add(BLOCK_SEP)
            for r, row in enumerate(block):
                if r:
                    out.add(ROW_SEP)
                for c, cell in enumerate(row):
                    if c:
                        out.add(CELL_SEP)
                    for k, word in enumerate(cell):
                        if k:
                            out.add(WORD_SEP)
                        begin = out.size
                        out.add(word.text)
                        words_out.append(
                            [begin, out.size, number, word.x0, word.top, word.x1, word.bottom]
                        )
        page_entries.append(
            {
                "page": number,
                "width": round(vx1 - vx0, 2),
                "height": round(vy1 - vy0, 2),
                "start": start,
                "end": out.size,
            }
        )
        if hidden:
            warnings.append(f"page {number}: dropped {hidden} words drawn outside the visible page")
        if out.size == start:
            empty.append(number)
            warnings.append(NO_TEXT_LAYER.format(number))
    text = "".join(out.parts)
    if not unicodedata.is_normalized("NFC", text):
        raise ReadError("the text read from the PDF is not NFC")
    layout = {
        "groundgate_layout": LAYOUT_VERSION,
        "document_sha256": text_digest("document", text),
        "pages": page_entries,
        "words": words_out,
    }
    return Reading(
        text=text, format="pdf", layout=layout, pages_without_text=empty, warnings=warnings
    )


def _checker(deadline: float | None, time_limit: float | None):
    """What the interpreter calls now and then: the dispatcher's deadline, then ours."""

    def check() -> None:
        check_deadline()
        if deadline is not None and time.monotonic() > deadline:
            raise ReadTimeout(f"reading the PDF took longer than the limit of {time_limit:g} s")

    return check


def _glyph_words(line: GlyphLine) -> Iterable[tuple[str, float, float, float, float]]:
    """(text, x0, y0, x1, y1) for each run of non-blank glyphs in a text line, with ``^`` and
    ``_`` before a superscript or subscript run (relative to the word's last full-size glyph),
    and a space between a script and a following digit ("10^9 5", not "10^95")."""
    parts: list[str] = []
    x0 = y0 = x1 = y1 = 0.0
    base: Glyph | None = None
    script = ""
    for g in line:
        if g is None or not g.text.strip():
            if parts:
                yield "".join(parts), x0, y0, x1, y1
                parts = []
            base = None
            script = ""
            continue
        mark = ""
        if base is not None and g.size < SCRIPT_SIZE * base.size:
            lift = SCRIPT_SHIFT * base.size
            if g.y0 > base.y0 + lift:
                mark = "^"
            elif g.y0 < base.y0 - lift:
                mark = "_"
        if mark:
            if mark != script:
                parts.append(mark)
        else:
            if script and g.text[0].isdigit():
                parts.append(" ")
            base = g
        script = mark
        if parts:
            x0 = min(x0, g.x0)
            y0 = min(y0, g.y0)
            x1 = max(x1, g.x1)
            y1 = max(y1, g.y1)
        else:
            x0, y0, x1, y1 = g.x0, g.y0, g.x1, g.y1
        parts.append(g.text)
    if parts:
        yield "".join(parts), x0, y0, x1, y1
