"""Amazon Bedrock Converse citations: the documents sent and the response's source content.

A record is one Converse call: ``request`` (its messages' ``document`` blocks, in order, are
the ``documentIndex`` the citations count) or ``documents`` (the document blocks), and
``response`` (the Converse response: ``output.message.content`` holds ``citationsContent``
blocks). A document's source is ``text``, ``content`` (text blocks, joined by line breaks) or
``bytes`` (base64 in JSON: a ``txt``/``md``/``csv``/``html`` file decoded as UTF-8, a ``pdf``
kept as its file for the run's reader).

Each citation's ``sourceContent`` text becomes a claim with the generated text it supports
(``statement``): bound to ``location.documentChar`` (``start``..``end``, code points, end
exclusive), which the producer calls exact; a ``documentPage`` location lists its pages
(``start`` to ``end``, taken as inclusive), where the import binds the quotation in the PDF
read (``pages.py``); a ``documentChunk`` is kept (``chunks``) and verified over the document.
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
from groundswell.shared.formats.models import BedrockRange, BedrockRecord
from groundswell.shared.formats.offsets import CODEPOINT

FORMAT = "bedrock"
_TEXT_FORMATS = ("txt", "md", "csv", "html")


def _document(block: dict[str, Any], where: Where, at: str) -> SourceDocument:
    source = block.get("source")
    name = block.get("name") if isinstance(block.get("name"), str) else None
    if not isinstance(source, dict):
        raise RecordError(where.error("a document block has a source object", f"{at}.source"))
    if isinstance(source.get("text"), str):
        return SourceDocument(source["text"], title=name)
    content = source.get("content")
    if isinstance(content, list) and all(
        isinstance(b, dict) and isinstance(b.get("text"), str) for b in content
    ):
        blocks = [b["text"] for b in content]
        return SourceDocument("\n".join(blocks), title=name, blocks=blocks)
    if isinstance(source.get("bytes"), str):
        try:
            data = base64.b64decode(source["bytes"], validate=True)
        except (binascii.Error, ValueError):
            raise RecordError(where.error("not base64", f"{at}.source.bytes")) from None
        fmt = block.get("format")
        if fmt == "pdf":
            return SourceDocument(None, source=data, suffix=".pdf", title=name)
        if fmt in _TEXT_FORMATS:
            try:
                return SourceDocument(data.decode("utf-8"), title=name)
            except UnicodeDecodeError as exc:
                raise RecordError(
                    where.error(f"not UTF-8 at byte {exc.start}", f"{at}.source.bytes")
                ) from None
        raise RecordError(where.error(f"a {fmt!r} document cannot be read here", f"{at}.format"))
    raise RecordError(where.error("a source gives text, content or bytes", f"{at}.source"))


def _document_block(block: Any) -> dict[str, Any] | None:
    doc = block.get("document") if isinstance(block, dict) else None
    return doc if isinstance(doc, dict) else None


def convert(value: Any, where: Where, options: dict[str, Any]) -> list[Converted]:
    record = validated(BedrockRecord, value, where)
    docs = sent_documents(record.documents, record.request, where, _document_block, _document)
    content = as_dict(as_dict(record.response.get("output")).get("message")).get("content")
    if not isinstance(content, list):
        raise RecordError(
            where.error("the response has output.message.content", "response.output.message")
        )
    for b, block in enumerate(content):
        cc = block.get("citationsContent") if isinstance(block, dict) else None
        if not isinstance(cc, dict):
            continue
        statement = " ".join(
            t for p in as_list(cc.get("content")) if isinstance(t := as_dict(p).get("text"), str)
        )
        for c, cite in enumerate(as_list(cc.get("citations"))):
            at = f"response.output.message.content[{b}].citationsContent.citations[{c}]"
            location = cite.get("location") if isinstance(cite, dict) else None
            if not isinstance(location, dict) or len(location) != 1:
                raise RecordError(where.error("a citation has one location", f"{at}.location"))
            ((kind, raw),) = location.items()
            place = validated(BedrockRange, raw, where, f"{at}.location.{kind}")
            if place.documentIndex >= len(docs):
                raise RecordError(
                    where.error(
                        f"no document {place.documentIndex} was sent",
                        f"{at}.location.{kind}.documentIndex",
                    )
                )
            doc = docs[place.documentIndex]
            texts = [
                t
                for s in as_list(cite.get("sourceContent"))
                if isinstance(t := as_dict(s).get("text"), str)
            ]
            span, alignment = None, "unaligned"
            extra: dict[str, Any] = {"statement": statement or None, "location": kind}
            if kind == "documentChar" and doc.text is not None and len(texts) == 1:
                span = char_span(doc, place.start, place.end, CODEPOINT, where, f"{at}.location")
                alignment = "exact"
            elif kind == "documentPage":
                # The documented start and end page, read as inclusive: the pages listed.
                extra["pages"], alignment = list(range(place.start, place.end + 1)), "page"
            elif kind == "documentChunk":
                extra["chunks"], alignment = [place.start, place.end], "chunk"
            for t, text in enumerate(texts):
                doc.claims.append(claim(f"{b}.{c}.{t}", text, span, alignment, **extra))
    producer = dict(options["producer"])
    model = (record.request or {}).get("modelId")
    if "model" not in producer and isinstance(model, str):
        producer["model"] = model
    return cited_documents(docs, where, {**options, "producer": producer}, record.id)
