"""Google Document AI ``Document`` (its JSON: ``Document.to_json``, or a batch output file) as
a document with claims and candidates.

``text`` is the document text. Each entity, and each of its ``properties`` (named
``parent_child``), with a text anchor becomes:

- a claim: its ``mentionText`` at its ``textAnchor.textSegments`` (code point indices into
  ``text``, end exclusive; proto JSON writes them as strings and leaves out a 0), bound when
  the anchor has one segment, which the producer calls exact;
- a candidate: ``field`` the entity ``type`` in schema form (``line_item/amount`` is
  ``line_item_amount``), ``value`` its ``normalizedValue`` (a money value as a decimal string
  with its ``currencyCode`` as ``unit``, an integer, a float as a decimal string, else its
  ``text``) or else ``mentionText``, ``confidence``, and one value item from the first
  segment's start to the last one's end, in UTF-8 bytes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from groundswell.shared.formats.base import (
    Converted,
    RecordError,
    Where,
    claim,
    decimal_value,
    field_name,
    span_claims,
    to_utf8,
    validated,
)
from groundswell.shared.formats.models import DocaiDocument, DocaiEntity, int64_value
from groundswell.shared.formats.offsets import CODEPOINT, TextOffsets

FORMAT = "documentai"


def _entities(raw: list[Any], prefix: str, at: str, where: Where):
    for i, value in enumerate(raw):
        path = f"{at}[{i}]"
        e = validated(DocaiEntity, value, where, path)
        name = f"{prefix}/{e.type}" if prefix and "/" not in e.type else e.type
        yield name, path, e
        if e.properties:
            yield from _entities(e.properties, name, f"{path}.properties", where)


def _int(value: Any) -> int | None:
    value = int64_value(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _money(money: dict[str, Any]) -> str | None:
    units, nanos = _int(money.get("units", 0)), _int(money.get("nanos", 0))
    if units is None or nanos is None:
        return None  # not a Money: the mention is the value
    total = Decimal(units) + Decimal(nanos) / Decimal(10**9)
    return str(total.normalize()) if nanos else str(units)


def _value(e: DocaiEntity) -> tuple[Any, str | None]:
    nv = e.normalizedValue or {}
    money = nv.get("moneyValue")
    if isinstance(money, dict) and (amount := _money(money)) is not None:
        code = money.get("currencyCode")
        return amount, code if isinstance(code, str) else None
    if (integer := _int(nv.get("integerValue"))) is not None:
        return integer, None
    if isinstance(nv.get("floatValue"), int | float) and not isinstance(nv["floatValue"], bool):
        return decimal_value(nv["floatValue"]), None
    if isinstance(nv.get("text"), str):
        return nv["text"], None
    return e.mentionText, None


def convert(value: Any, where: Where, options: dict[str, Any]) -> list[Converted]:
    prefix = ""
    if isinstance(value, dict) and isinstance(value.get("document"), dict):
        value, prefix = value["document"], "document"  # a ProcessResponse
    doc = validated(DocaiDocument, value, where, prefix)
    at = f"{prefix}." if prefix else ""
    offsets = TextOffsets(doc.text)
    found = []
    for name, path, e in _entities(doc.entities or [], "", f"{at}entities", where):
        segments = e.textAnchor.textSegments if e.textAnchor else None
        mention = (
            e.mentionText
            if e.mentionText is not None
            else (e.textAnchor.content if e.textAnchor else None)
        )
        if not segments or mention is None:
            continue
        found.append(
            (name, path, e, mention, segments[0].startIndex, segments[-1].endIndex, len(segments))
        )
    spans = span_claims(
        offsets,
        [(f"{p}.textAnchor.textSegments", s, t, CODEPOINT) for _, p, _, _, s, t, _ in found],
        where,
    )
    utf8 = to_utf8(offsets, list(spans.values()))
    claims, candidates = [], []
    for n, (name, path, e, mention, start, end, count) in enumerate(found):
        cs, ce = spans[(start, end)]
        if ce < cs:
            raise RecordError(
                where.error("the segments end before they start", f"{path}.textAnchor")
            )
        one = count == 1
        claims.append(
            claim(n, mention, (cs, ce) if one else None, "exact" if one else "spans", field=name)
        )
        val, currency = _value(e)
        cand: dict[str, Any] = {
            "id": e.id or n,
            "field": field_name(name),
            "value": val,
        }
        if currency:
            cand["unit"] = currency
        if e.confidence is not None and 0 <= e.confidence <= 1:
            cand["confidence"] = e.confidence
        cand["evidence"] = [{"start": utf8[cs], "end": utf8[ce], "text": mention}]
        candidates.append(cand)
    return [
        Converted(
            doc_id=options["default_id"],
            text=doc.text,
            claims=claims,
            candidates=candidates,
            producer=options["producer"],
            where=where,
        )
    ]
