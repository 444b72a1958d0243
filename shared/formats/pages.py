"""Quotations cited by page (Anthropic ``page_location``, Bedrock ``documentPage``, a
LlamaExtract citation's ``page``), verified on the text of those pages of the PDF.

The PDF is read here as the run reads it (the same reader, its default options), so the text
and its page ranges are the ones the run's verification sees. Each claim that names pages is
looked for in the text of those pages only; found, it is bound to that span (code points into
the text read), and the run verifies it there. Counted: ``page.located`` (on the cited pages),
``page.elsewhere`` (not there, but elsewhere in the document: the producer's page is wrong) and
``page.not_found``; a PDF that cannot be read is ``page.unread`` and its claims stay unbound
(its run units fail with the reader's error, as for any PDF).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groundswell.shared.formats.base import Converted
from groundswell.shared.formats.offsets import UTF8, OffsetError, TextOffsets

_FOUND = ("grounded", "grounded_loose")


def cited_pages(record: dict[str, Any]) -> list[int] | None:
    """The pages a claim cites (1-based), from ``pages`` (a list) or ``page`` (one)."""
    pages = record.get("pages")
    if isinstance(pages, list) and pages and all(isinstance(p, int) for p in pages):
        return pages
    page = record.get("page")
    if isinstance(page, int) and not isinstance(page, bool):
        return [page]
    return None


def bind_pages(doc: Converted) -> tuple[str | None, Counter[str]]:
    """Bind ``doc``'s page-citing claims to their spans on those pages; returns the text read
    (None when the file could not be read) and the counts."""
    from groundswell.shared.read import ReadError, read_bytes
    from groundswell.shared.verify import DEFAULT, Verifier

    counts: Counter[str] = Counter()
    wanted = [(c, p) for c in doc.claims if (p := cited_pages(c)) and "start" not in c]
    if doc.source is None or not wanted:
        return doc.text, counts
    try:
        reading = read_bytes(doc.source, f"{doc.doc_id}{doc.suffix}")
    except (ReadError, ValueError):
        counts["page.unread"] += len(wanted)
        return None, counts
    text = reading.text
    layout = reading.layout or {}
    ranges = {
        p["page"]: (p["start"], p["end"])
        for p in layout.get("pages") or []
        if isinstance(p, dict) and isinstance(p.get("page"), int)
    }
    try:
        cps = TextOffsets(text).to_codepoints((v for r in ranges.values() for v in r), UTF8)
    except OffsetError:
        counts["page.unread"] += len(wanted)
        return text, counts
    whole = Verifier(text, DEFAULT)
    verifiers: dict[tuple[int, int], Any] = {}
    for record, pages in wanted:
        spans = [ranges[p] for p in pages if p in ranges]
        if not spans:
            counts["page.not_found"] += 1  # a page the PDF does not have
            continue
        start, end = cps[min(s for s, _ in spans)], cps[max(e for _, e in spans)]
        verifier = verifiers.get((start, end))
        if verifier is None:
            verifier = verifiers[(start, end)] = Verifier(text[start:end], DEFAULT)
        cert = verifier.verify(record["claim"])
        if cert.verdict in _FOUND and cert.start is not None and cert.start < cert.end:
            record["start"], record["end"] = start + cert.start, start + cert.end
            counts["page.located"] += 1
        elif whole.verify(record["claim"]).verdict in _FOUND:
            counts["page.elsewhere"] += 1
        else:
            counts["page.not_found"] += 1
    return text, counts
