"""The user's own JSON, read through a declared mapping (YAML) of JSON paths.

A mapping says where, in each record, the document's id and text (or the path of its file)
are, where each quotation and its offsets are, and where each candidate's field, value, unit,
key, confidence and evidence are::

    mapping: 1
    records: $.results[*]        # optional: the records inside each JSON value
    document:
      id: $.doc_id
      text: $.text               # or  path: $.file  (relative to the source folder)
    claims:
      each: $.facts[*]           # one context per item
      quote: $.substring_quote[*]   # each value one claim
      start: $.start             # optional offsets, in `offsets` (codepoint, utf8, utf16)
      end: $.end
      offsets: codepoint
      keep: {fact: $.fact, page: $.page}   # carried on each claim
    candidates:
      each: $.extraction_metadata.field_metadata.*
      field: "@key"              # the key of the item (an object's member name)
      value: $$.data[@key]       # $$ is the record; [@key] the item's key
      quote: $.citation[0].matching_text
    producer: {model: $.model, prompt_version: v3}   # a path, or a constant

Paths: ``$`` is the current item (the record outside ``each``), ``$$`` the record, then
``.name``, ``['name']``, ``[n]``, ``[*]``, ``.*`` (every member of an object) and ``[@key]``;
``@key`` alone is the item's key. A value that is not a path is a constant. A path that finds
nothing leaves its member out; a required one (the text, a quote, a field, a value) makes the
item an error naming its place.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from groundswell.shared.corpus import InputError, InputFileError, source_format
from groundswell.shared.formats.base import (
    Converted,
    RecordError,
    Where,
    claim,
    decimal_value,
    safe_id,
    span_claims,
    to_utf8,
)
from groundswell.shared.formats.offsets import CODEPOINT, TextOffsets, unit_of

FORMAT = "mapped"
_STEP = re.compile(r"\.\*|\[\*\]|\[@key\]|\[(-?\d+)\]|\['([^']*)'\]|\.([A-Za-z_][\w-]*)")


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")
    each: str | None = None
    quote: str | None = None
    start: str | None = None
    end: str | None = None
    offsets: str = CODEPOINT  # the unit of start and end
    keep: dict[str, str] = {}
    unit: str | None = None
    field: str | None = None
    value: str | None = None
    key: str | None = None
    confidence: str | None = None


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    text: str | None = None
    path: str | None = None


class Mapping(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mapping: int = 1
    records: str | None = None
    document: _Document
    claims: _Part | None = None
    candidates: _Part | None = None
    producer: dict[str, str] = {}


def load_mapping(data: bytes, file: str) -> Mapping:
    import yaml

    try:
        raw = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputFileError(InputError(file, f"invalid YAML: {exc}", line)) from None
    try:
        mapping = Mapping.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise InputFileError(InputError(file, first.get("msg", "invalid"), None, loc)) from None
    if (mapping.document.text is None) == (mapping.document.path is None):
        raise InputFileError(InputError(file, "give the text or the path", None, "document"))
    for name in ("claims", "candidates"):
        part = getattr(mapping, name)
        for member in ("quote",) if name == "claims" else ("field", "value"):
            if part is not None and getattr(part, member) is None:
                raise InputFileError(InputError(file, "required", None, f"{name}.{member}"))
        if part is not None:
            try:
                unit_of(part.offsets)
            except ValueError as exc:
                raise InputFileError(InputError(file, str(exc), None, f"{name}.offsets")) from None
    return mapping


def is_path(expr: str) -> bool:
    return expr.startswith("$") or expr == "@key"


def select(expr: str, item: Any, record: Any, key: Any = None) -> list[tuple[Any, Any]]:
    """Each ``(value, key)`` the path finds (a constant is itself)."""
    if expr == "@key":
        return [] if key is None else [(key, None)]
    if not expr.startswith("$"):
        return [(expr, None)]
    rest = expr[2:] if expr.startswith("$$") else expr[1:]
    found: list[tuple[Any, Any]] = [(record if expr.startswith("$$") else item, key)]
    pos = 0
    while pos < len(rest):
        m = _STEP.match(rest, pos)
        if m is None:
            raise ValueError(f"cannot read the path {expr!r} at {rest[pos:]!r}")
        pos = m.end()
        step = m.group(0)
        out: list[tuple[Any, Any]] = []
        for value, k in found:
            if step in (".*", "[*]"):
                if isinstance(value, dict):
                    out.extend((v, name) for name, v in value.items())
                elif isinstance(value, list):
                    out.extend((v, i) for i, v in enumerate(value))
            elif step == "[@key]":
                if isinstance(value, dict) and key in value:
                    out.append((value[key], k))
            elif m.group(1) is not None:
                i = int(m.group(1))
                if isinstance(value, list) and -len(value) <= i < len(value):
                    out.append((value[i], k))
            else:
                name = m.group(2) if m.group(2) is not None else m.group(3)
                if isinstance(value, dict) and name in value:
                    out.append((value[name], k))
        found = out
    return found


def _one(expr: str | None, item: Any, record: Any, key: Any = None) -> Any:
    if expr is None:
        return None
    got = select(expr, item, record, key)
    return got[0][0] if got else None


def _items(part: Any, record: Any) -> list[tuple[str, Any, Any]]:
    if part.each is None:
        return [("", record, None)]
    return [(f"{part.each}[{k!r}]", v, k) for v, k in select(part.each, record, record)]


def _document(mapping: Mapping, record: Any, where: Where, options: dict[str, Any]):
    doc = mapping.document
    if doc.text is not None:
        text = _one(doc.text, record, record)
        if not isinstance(text, str):
            raise RecordError(where.error("no text at this path", doc.text))
        return text, None, ".txt"
    rel = _one(doc.path, record, record)
    if not isinstance(rel, str):
        raise RecordError(where.error("no document path at this path", doc.path))
    base = Path(options.get("base") or ".")
    path = (base / rel).resolve()
    if not path.is_relative_to(base.resolve()) or not path.is_file():
        raise RecordError(where.error(f"no document file {rel!r} in {base}", doc.path))
    fmt = source_format(path.name)
    data = path.read_bytes()
    if fmt in (None, "text"):
        try:
            return data.decode("utf-8"), None, ".txt"
        except UnicodeDecodeError as exc:
            raise RecordError(
                where.error(f"{rel}: not UTF-8 at byte {exc.start}", doc.path)
            ) from None
    # A PDF, HTML or XML file is read by the run; offsets into it are into the text read.
    return None, data, path.suffix.lower()


def convert(value: Any, where: Where, options: dict[str, Any]) -> list[Converted]:
    mapping: Mapping = options["mapping"]
    records = [(where, value)]
    if mapping.records is not None:
        records = [
            (Where(where.file, where.line, f"{where.prefix}{mapping.records}[{k!r}]"), v)
            for v, k in select(mapping.records, value, value)
        ]
    return [
        _record(mapping, record, at, options, n if len(records) > 1 else None)
        for n, (at, record) in enumerate(records)
    ]


def _record(mapping: Mapping, record: Any, where: Where, options: dict[str, Any], n: int | None):
    text, source, suffix = _document(mapping, record, where, options)
    offsets = TextOffsets(text) if text is not None else None
    producer = dict(options["producer"])
    for name, expr in mapping.producer.items():
        got = _one(expr, record, record)
        if isinstance(got, str | int | float) and not isinstance(got, bool):
            producer[name] = str(got)
    claims: list[dict[str, Any]] = []
    part = mapping.claims
    if part is not None:
        unit = unit_of(part.offsets)
        raw: list[tuple[str, str, Any, Any, dict[str, Any]]] = []
        for place, item, key in _items(part, record):
            assert part.quote is not None
            quotes = [q for q, _ in select(part.quote, item, record, key)]
            if not quotes or not all(isinstance(q, str) for q in quotes):
                raise RecordError(
                    where.error("no quotation (a string) at this path", f"{place}{part.quote}")
                )
            start, end = _one(part.start, item, record, key), _one(part.end, item, record, key)
            kept = {k: _one(e, item, record, key) for k, e in part.keep.items()}
            for q in quotes:
                raw.append((place, q, start, end, kept))
        bound = [
            (f"{p}{part.start}", s, e, unit)
            for p, _, s, e, _ in raw
            if isinstance(s, int) and isinstance(e, int)
        ]
        spans = span_claims(offsets, bound, where) if bound and offsets is not None else {}
        for i, (_place, q, s, e, kept) in enumerate(raw):
            span = spans.get((s, e)) if isinstance(s, int) and isinstance(e, int) else None
            claims.append(claim(i, q, span, "exact" if span else "unaligned", **kept))
    candidates: list[dict[str, Any]] | None = None
    part = mapping.candidates
    if part is not None:
        candidates = []
        assert part.field is not None and part.value is not None
        evidence: list[tuple[dict[str, Any], Any, Any]] = []
        unit = unit_of(part.offsets)
        for i, (place, item, key) in enumerate(_items(part, record)):
            field_ = _one(part.field, item, record, key)
            val = _one(part.value, item, record, key)
            if not isinstance(field_, str) or val is None:
                member = part.field if not isinstance(field_, str) else part.value
                raise RecordError(
                    where.error("no field (a string) or value at this path", f"{place}{member}")
                )
            cand: dict[str, Any] = {"id": i, "field": field_, "value": decimal_value(val)}
            for name in ("key", "confidence"):
                got = _one(getattr(part, name), item, record, key)
                if got is not None:
                    cand[name] = got
            unit_value = _one(part.unit, item, record, key)
            if unit_value is not None:
                cand["unit"] = unit_value
            quote = _one(part.quote, item, record, key)
            if isinstance(quote, str):
                ev: dict[str, Any] = {"text": quote}
                cand["evidence"] = [ev]
                evidence.append(
                    (ev, _one(part.start, item, record, key), _one(part.end, item, record, key))
                )
            candidates.append(cand)
        bound_ev = [(e, s, t) for e, s, t in evidence if isinstance(s, int) and isinstance(t, int)]
        if bound_ev and offsets is not None:
            cps = span_claims(
                offsets, [("candidates.start", s, t, unit) for _, s, t in bound_ev], where
            )
            utf8 = to_utf8(offsets, list(cps.values()))
            for ev, s, t in bound_ev:
                a, b = cps[(s, t)]
                ev["start"], ev["end"] = utf8[a], utf8[b]
    doc_id = _one(mapping.document.id, record, record) if mapping.document.id else None
    if doc_id is None:
        doc_id = options["default_id"] if n is None else f"{options['default_id']}-{n}"
    return Converted(
        doc_id=safe_id(doc_id),
        text=text,
        claims=claims,
        candidates=candidates,
        producer=producer,
        where=where,
        source=source,
        suffix=suffix,
        id_field=_path_field(mapping.document.id) if mapping.document.id else None,
    )


def _path_field(path: Any) -> str | None:
    """The member a JSON path of the record names, as an error names it (``$.doc_id``:
    ``doc_id``); a constant id names none."""
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    return path.lstrip("$").lstrip(".") or None
