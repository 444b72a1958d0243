"""Anthropic Messages API citations: the documents sent and the response's cited text.

A record is one request and its response: ``documents`` (the document blocks as sent) or
``request`` (the request body: its user messages' document blocks, in order, are the
``document_index`` the citations count), and ``message`` or ``response`` (the Message JSON).

Each document block becomes a document: a plain-text source (``source.type: text``) its text,
a custom-content source (``content``) its text blocks joined by line breaks, a base64 PDF its
file (read by the run's reader). Each citation of a response text block becomes a claim, its
``cited_text`` with the statement it supports (``statement``):

- ``char_location``: bound to ``start_char_index``..``end_char_index`` (code points, end
  exclusive), which the producer calls exact;
- ``page_location``: the pages (1-based, end exclusive) are listed as ``pages``; the import
  reads the PDF and binds the quotation to where it is on those pages (``pages.py``);
- ``content_block_location``: bound to the cited block when it is one block, else verified
  over the document.

Citations have no typed facts: the documents have no candidates.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from groundswell.shared.formats.base import (
    Converted,
    RecordError,
    SourceDocument,
    Where,
    as_dict,
    as_list,
    char_span,
    cited_documents,
    claim,
    sent_documents,
    validated,
)
from groundswell.shared.formats.models import ANTHROPIC_CITATIONS, AnthropicRecord
from groundswell.shared.formats.offsets import CODEPOINT

FORMAT = "anthropic"


def _document(block: dict[str, Any], where: Where, at: str) -> SourceDocument:
    source = block.get("source")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    if not isinstance(source, dict):
        raise RecordError(where.error("a document block has a source object", f"{at}.source"))
    kind = source.get("type")
    if kind == "text" and isinstance(source.get("data"), str):
        return SourceDocument(source["data"], title=title)
    if kind == "content":
        content = source.get("content")
        if isinstance(content, str):
            return SourceDocument(content, title=title)
        if isinstance(content, list) and all(
            isinstance(b, dict) and isinstance(b.get("text"), str) for b in content
        ):
            blocks = [b["text"] for b in content]
            return SourceDocument("\n".join(blocks), title=title, blocks=blocks)
        raise RecordError(where.error("content is a string or text blocks", f"{at}.source.content"))
    if kind == "base64" and source.get("media_type") == "application/pdf":
        try:
            data = base64.b64decode(source.get("data") or "", validate=True)
        except (binascii.Error, ValueError):
            raise RecordError(where.error("not base64", f"{at}.source.data")) from None
        return SourceDocument(None, source=data, suffix=".pdf", title=title)
    raise RecordError(
        where.error(
            f"a {kind!r} document source cannot be read here (text, content or a base64 PDF)",
            f"{at}.source.type",
        )
    )


def _document_block(block: Any) -> dict[str, Any] | None:
    return block if isinstance(block, dict) and block.get("type") == "document" else None


def _block_span(doc: SourceDocument, first: int, last: int) -> tuple[int, int] | None:
    blocks = doc.blocks
    if blocks is None or last != first + 1 or not 0 <= first < len(blocks):
        return None
    start = sum(len(b) + 1 for b in blocks[:first])
    return start, start + len(blocks[first])


def convert(value: Any, where: Where, options: dict[str, Any]) -> list[Converted]:
    record = validated(AnthropicRecord, value, where)
    if record.message is None:
        raise RecordError(where.error("a record gives the response message", "message"))
    docs = sent_documents(record.documents, record.request, where, _document_block, _document)
    content = record.message.get("content")
    if not isinstance(content, list):
        raise RecordError(where.error("the message content is a list of blocks", "message.content"))
    for b, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            continue
        for c, raw in enumerate(as_list(block.get("citations"))):
            at = f"message.content[{b}].citations[{c}]"
            kind = as_dict(raw).get("type")
            model = ANTHROPIC_CITATIONS.get(kind) if isinstance(kind, str) else None
            if model is None:
                continue  # web search and search result citations cite no document sent
            cite = validated(model, raw, where, at)
            if cite.document_index >= len(docs):
                raise RecordError(
                    where.error(
                        f"no document {cite.document_index} was sent", f"{at}.document_index"
                    )
                )
            doc = docs[cite.document_index]
            extra: dict[str, Any] = {"statement": block.get("text"), "citation": cite.type}
            span, kind = None, "exact"
            if cite.type == "char_location":
                if doc.text is None:
                    raise RecordError(where.error("a character citation of a PDF", f"{at}.type"))
                span = char_span(
                    doc,
                    cite.start_char_index,
                    cite.end_char_index,
                    CODEPOINT,
                    where,
                    f"{at}.start_char_index",
                )
            elif cite.type == "page_location":
                # 1-based, the end exclusive: the pages cited, listed
                extra["pages"] = list(range(cite.start_page_number, cite.end_page_number))
                kind = "page"
            else:
                span = _block_span(doc, cite.start_block_index, cite.end_block_index)
                extra["blocks"] = [cite.start_block_index, cite.end_block_index]
                kind = "exact" if span else "blocks"
            doc.claims.append(claim(f"{b}.{c}", cite.cited_text, span, kind, **extra))
    producer = dict(options["producer"])
    if "model" not in producer and isinstance(record.message.get("model"), str):
        producer["model"] = record.message["model"]
    return cited_documents(docs, where, {**options, "producer": producer}, record.id)
