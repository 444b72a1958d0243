"""LangExtract's annotated documents (``lx.io.save_annotated_documents``: JSONL, a document a
line) as claims and candidates.

Each extraction is a claim (its ``extraction_text`` at its ``char_interval``, code points, or
unbound when LangExtract could not align it) and a groundgate candidate, built as groundgate's
own LangExtract adapter builds it, so that admission decides the same packet:

- ``field`` is ``extraction_class`` (renamed through the ``fields`` option), ``value`` the
  ``value`` attribute or else ``extraction_text``, ``unit`` and ``key`` the attributes of those
  names when set; ``extraction_class`` and ``alignment_status`` stay on the candidate;
- the evidence starts with the value item, the interval in UTF-8 bytes quoting
  ``extraction_text``; then a role item for each of ``sign_text``, ``scale_text``,
  ``unit_text``, ``key_text`` and ``field_text`` that holds text (``field_text`` may be a list:
  one field item per entry with text, the list cut one past the 8 a candidate may cite, so
  admission still refuses too many; a list for another role goes as it is, for admission to
  refuse); then the outside items: ``external`` from ``source_url``, ``source_retrieved`` and
  ``source_quote`` when all three hold text, ``knowledge`` from ``knowledge``;
- an unaligned extraction has only its outside items (and any refused role lists) as evidence,
  and no evidence member at all when there are none (admission rejects it NO_EVIDENCE).

Unlike the adapter, a text that is not NFC is taken as it is: the run admits it on its NFC
form and moves the offsets with it, as for any document of the native layout.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from groundswell.shared.formats.base import (
    Converted,
    RecordError,
    Where,
    claim,
    safe_id,
    to_utf8,
    validated,
)
from groundswell.shared.formats.models import LxDocument, LxExtraction
from groundswell.shared.formats.offsets import TextOffsets

FORMAT = "langextract"
ROLE_ATTRIBUTES = (
    ("sign", "sign_text"),
    ("scale", "scale_text"),
    ("unit", "unit_text"),
    ("key", "key_text"),
    ("field", "field_text"),
)
OUTSIDE_ATTRIBUTES = ("source_url", "source_quote", "source_retrieved", "knowledge")
# A candidate cites at most this many field items (groundgate SPEC §3).
MAX_FIELD_ITEMS = 8


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _roles(attrs: dict[str, Any], names: dict[str, str]) -> tuple[list[dict[str, Any]], bool]:
    """The role items, and whether one of them makes the candidate invalid."""
    items: list[dict[str, Any]] = []
    invalid = False
    for role, attribute in ROLE_ATTRIBUTES:
        raw = attrs.get(names.get(attribute, attribute))
        if isinstance(raw, list) and role == "field":
            texts = [t for t in raw if _has_text(t)][: MAX_FIELD_ITEMS + 1]
            items.extend({"role": role, "text": t} for t in texts)
            invalid |= len(texts) > MAX_FIELD_ITEMS
        elif isinstance(raw, list):
            items.append({"role": role, "text": raw})
            invalid = True
        elif _has_text(raw):
            items.append({"role": role, "text": raw})
    return items, invalid


def _outside(attrs: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    url, quote, retrieved, knowledge = (attrs.get(names.get(a, a)) for a in OUTSIDE_ATTRIBUTES)
    out: list[dict[str, Any]] = []
    if _has_text(url) and _has_text(retrieved) and _has_text(quote):
        out.append({"source": "external", "url": url, "retrieved": retrieved, "text": quote})
    if _has_text(knowledge):
        out.append({"source": "knowledge", "text": knowledge})
    return out


_EXTRACTIONS: TypeAdapter[list[LxExtraction]] = TypeAdapter(list[LxExtraction])


def _extractions(raw: list[Any], where: Where) -> list[LxExtraction]:
    """The extractions validated in one call; a bad one is named by validating each."""
    try:
        return _EXTRACTIONS.validate_python(raw)
    except ValidationError:
        return [validated(LxExtraction, x, where, f"extractions[{i}]") for i, x in enumerate(raw)]


def convert(value: Any, where: Where, options: dict[str, Any]) -> list[Converted]:
    doc = validated(LxDocument, value, where)
    text = doc.text
    offsets = TextOffsets(text)
    fields: dict[str, str] = options.get("fields") or {}
    names: dict[str, str] = options.get("attributes") or {}
    # The attributes that give evidence items (under the names the options give them).
    evidence_names = {names.get(a, a) for _, a in ROLE_ATTRIBUTES} | {
        names.get(a, a) for a in OUTSIDE_ATTRIBUTES
    }
    extractions = list(enumerate(_extractions(doc.extractions or [], where)))
    spans: list[tuple[int, int]] = []
    for i, x in extractions:
        interval = x.char_interval
        if interval is None or interval.start_pos is None or interval.end_pos is None:
            continue
        if not 0 <= interval.start_pos <= interval.end_pos <= len(text):
            raise RecordError(
                where.error(
                    f"need 0 <= start_pos <= end_pos <= {len(text)} (the text's code points)",
                    f"extractions[{i}].char_interval",
                )
            )
        spans.append((interval.start_pos, interval.end_pos))
    utf8 = to_utf8(offsets, spans)  # every interval of the document in one sweep
    claims: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    for i, x in extractions:
        attrs = x.attributes or {}
        cand: dict[str, Any] = {
            "id": i,
            "field": fields.get(x.extraction_class, x.extraction_class),
            "value": attrs.get("value", x.extraction_text),
            "extraction_class": x.extraction_class,
            "alignment_status": x.alignment_status,
        }
        for member in ("unit", "key"):
            if attrs.get(member) is not None:
                cand[member] = attrs[member]
        if attrs and not evidence_names.isdisjoint(attrs):
            roles, invalid = _roles(attrs, names)
            outside = _outside(attrs, names)
        else:
            roles, invalid, outside = [], False, []
        interval = x.char_interval
        aligned = interval is not None and None not in (interval.start_pos, interval.end_pos)
        if aligned:
            assert interval is not None and interval.start_pos is not None
            start, end = interval.start_pos, interval.end_pos
            assert end is not None
            value_item = {"start": utf8[start], "end": utf8[end], "text": x.extraction_text}
            cand["evidence"] = [value_item, *roles, *outside]
        elif outside or invalid:
            # Unaligned: only outside items can hold the value; refused roles still refuse it.
            bad = [r for r in roles if not isinstance(r["text"], str)]
            if len([r for r in roles if r["role"] == "field"]) > MAX_FIELD_ITEMS:
                bad += [r for r in roles if r["role"] == "field"]
            cand["evidence"] = [*bad, *outside]
        candidates.append(cand)
        if not aligned:
            kind, span = "unaligned", None
        else:
            kind = (x.alignment_status or "aligned").removeprefix("match_")
            span = (start, end)
        claims.append(claim(i, x.extraction_text, span, kind, extraction_class=x.extraction_class))
    doc_id = safe_id(doc.document_id) if doc.document_id else options["default_id"]
    return [
        Converted(
            doc_id=doc_id,
            text=text,
            claims=claims,
            candidates=candidates,
            producer=options["producer"],
            where=where,
            id_field="document_id" if doc.document_id else None,
        )
    ]
