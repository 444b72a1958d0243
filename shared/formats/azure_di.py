"""Azure AI Document Intelligence ``analyzeResult`` as a document with claims and candidates.

A record is an ``analyzeResult`` (or the operation's body holding one: ``{"status",
"analyzeResult"}``). Its ``content`` is the document text; its spans count in the unit its
``stringIndexType`` names (``textElements``, the REST default; ``unicodeCodePoint``, the
Python SDK's; ``utf16CodeUnit``, JavaScript's and .NET's), converted here, once per record.

Each field of each analyzed document (``documents[].fields``, and the members of its
``valueObject`` and ``valueArray`` values, named ``parent_child``) with content becomes:

- a claim: its ``content`` at its span (bound when the field has one span; a field over
  several spans, such as an address on two lines, is verified over the whole text), which
  the producer calls exact;
- a candidate: ``field`` the field's name in schema form (``InvoiceTotal`` is
  ``invoice_total``), ``value`` its typed value (``valueNumber``, ``valueInteger``, a currency's
  ``amount`` as a decimal string, else ``valueString``/``valueDate``/... or ``content``),
  ``unit`` a currency's ``currencyCode``, ``confidence``, and one value item quoting
  ``content`` from the first span's start to the last one's end, in UTF-8 bytes.
"""

from __future__ import annotations

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
from groundswell.shared.formats.models import AzureAnalyzeResult, AzureField
from groundswell.shared.formats.offsets import TextOffsets, unit_of

FORMAT = "azure-di"
_PLAIN_VALUES = ("valueString", "valueDate", "valueTime", "valuePhoneNumber", "valueCountryRegion")


def _fields(raw: dict[str, Any], prefix: str, at: str, where: Where):
    """Each ``(name, path, field)``, members of objects and arrays after their parent."""
    for name, value in raw.items():
        path = f"{at}.{name}"
        f = validated(AzureField, value, where, path)
        full = f"{prefix}_{name}" if prefix else name
        yield full, path, f
        if f.valueObject:
            yield from _fields(f.valueObject, full, f"{path}.valueObject", where)
        for i, item in enumerate(f.valueArray or []):
            if isinstance(item, dict) and isinstance(item.get("valueObject"), dict):
                yield from _fields(
                    item["valueObject"], full, f"{path}.valueArray[{i}].valueObject", where
                )


def _value(f: AzureField) -> tuple[Any, str | None]:
    if f.valueCurrency is not None:
        amount = f.valueCurrency.get("amount")
        code = f.valueCurrency.get("currencyCode")
        return decimal_value(amount), code if isinstance(code, str) else None
    if f.valueInteger is not None:
        return f.valueInteger, None
    if f.valueNumber is not None:
        return decimal_value(f.valueNumber), None
    for name in _PLAIN_VALUES:
        got = (
            getattr(f, name) if name in AzureField.model_fields else (f.model_extra or {}).get(name)
        )
        if isinstance(got, str):
            return got, None
    return f.content, None


def convert(value: Any, where: Where, options: dict[str, Any]) -> list[Converted]:
    prefix = ""
    if isinstance(value, dict) and isinstance(value.get("analyzeResult"), dict):
        value, prefix = value["analyzeResult"], "analyzeResult"
    result = validated(AzureAnalyzeResult, value, where, prefix)
    at = f"{prefix}." if prefix else ""
    unit = unit_of(result.stringIndexType)
    text = result.content
    offsets = TextOffsets(text)
    found: list[tuple[str, str, AzureField, int, int]] = []
    for d, doc in enumerate(result.documents or []):
        for name, path, f in _fields(doc.fields or {}, "", f"{at}documents[{d}].fields", where):
            if f.content is None or not f.spans:
                continue
            start, end = f.spans[0].offset, f.spans[-1].offset + f.spans[-1].length
            found.append((name, path, f, start, end))
    # Every span of the record converted in one sweep; a bad one names its field.
    spans = span_claims(offsets, [(f"{p}.spans", s, e, unit) for _, p, _, s, e in found], where)
    utf8 = to_utf8(offsets, list(spans.values()))
    claims, candidates = [], []
    for n, (name, path, f, start, end) in enumerate(found):
        cs, ce = spans[(start, end)]
        if ce < cs:
            raise RecordError(where.error("the spans end before they start", f"{path}.spans"))
        assert f.content is not None and f.spans is not None
        one = len(f.spans) == 1
        claims.append(
            claim(n, f.content, (cs, ce) if one else None, "exact" if one else "spans", field=name)
        )
        val, currency = _value(f)
        cand: dict[str, Any] = {"id": n, "field": field_name(name), "value": val}
        if currency:
            cand["unit"] = currency
        if f.confidence is not None and 0 <= f.confidence <= 1:
            cand["confidence"] = f.confidence
        cand["evidence"] = [{"start": utf8[cs], "end": utf8[ce], "text": f.content}]
        candidates.append(cand)
    producer = dict(options["producer"])
    for key, member in (("model", result.modelId), ("producer_version", result.apiVersion)):
        if key not in producer and member:
            producer[key] = member
    return [
        Converted(
            doc_id=options["default_id"],
            text=text,
            claims=claims,
            candidates=candidates,
            producer=producer,
            where=where,
        )
    ]
