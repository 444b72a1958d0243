"""What a producer record becomes, and the reading every format shares.

A record of any format becomes one or more :class:`Converted` documents: what the native layout
would hold for each (the text, or the source file to read; the claims with code point offsets;
the groundgate candidates, whose offsets are UTF-8 bytes) and the producer that made it. A
claim keeps the producer's own alignment claim as ``alignment`` (``exact``, ``greater``,
``lesser``, ``fuzzy``, or ``unaligned``), so :func:`disagreements` can check it instead of
trusting it.

Reading: a ``.jsonl`` file is one record a line; any other file is one JSON value, a record
or an array of records. A malformed record is an :class:`InputError` naming the file, its line
(or ``[i]`` in an array) and the field; the records around it are converted as usual.
"""

from __future__ import annotations

import json
import json.encoder as json_encoder
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from groundswell.shared.corpus import InputError, json_problem, load_json
from groundswell.shared.formats.offsets import OffsetError, TextOffsets
from groundswell.shared.producers import disagreement

ALIGNMENTS = ("exact", "greater", "lesser", "fuzzy", "unaligned")


@dataclass
class Where:
    """Where a record is: its file, its line (JSONL) and the path of its member."""

    file: str
    line: int | None = None
    prefix: str = ""  # "[3]" for the fourth record of a JSON array

    def at(self, field_: str | None) -> str | None:
        if not field_:
            return self.prefix or None
        return f"{self.prefix}.{field_}" if self.prefix else field_

    def error(self, message: str, field_: str | None = None) -> InputError:
        return InputError(self.file, message, self.line, self.at(field_))


@dataclass
class Converted:
    """One document as the native layout holds it."""

    doc_id: str
    text: str | None
    claims: list[dict[str, Any]]
    candidates: list[dict[str, Any]] | None
    producer: dict[str, Any]
    where: Where
    # A document given as a file to read (a PDF sent to a provider): its bytes and ending.
    source: bytes | None = None
    suffix: str = ".txt"
    # The record's member that names the document (None: named by its file or place).
    id_field: str | None = None


class RecordError(ValueError):
    """A record that converts to nothing: reported with its file, line and field."""

    def __init__(self, error: InputError) -> None:
        super().__init__(str(error))
        self.error = error


def validation_error(where: Where, exc: ValidationError, prefix: str = "") -> InputError:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    path = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
    return where.error(first.get("msg", "invalid"), path or None)


def validated(model: Any, value: Any, where: Where, prefix: str = "") -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise RecordError(validation_error(where, exc, prefix)) from None


_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")


def safe_id(raw: Any) -> str:
    """A document id usable as a key (``documents/<id>.txt``): no slash, no odd character."""
    text = _SAFE_ID.sub("_", str(raw)).strip("._") or "doc"
    return text[:200]


def read_records(
    data: bytes | Iterable[bytes], file: str
) -> Iterator[tuple[Where, Any] | InputError]:
    """Each record of a producer file with where it is, or the error of a record that is not
    JSON. ``.jsonl`` files are one record a line; others one JSON value (an array: each item).

    ``data`` is the file's bytes, or its lines (an open binary file): a JSONL file read so is
    held one line at a time, however large it is."""
    if file.endswith((".jsonl", ".ndjson")):
        lines = data.split(b"\n") if isinstance(data, bytes) else data
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                yield line_record(raw, file, number)
        return
    if not isinstance(data, bytes):
        data = b"".join(data)
    try:
        value = load_json(data)
    except UnicodeDecodeError as exc:
        yield InputError(file, f"not UTF-8 at byte {exc.start}")
        return
    except (ValueError, RecursionError) as exc:
        yield InputError(file, f"invalid JSON: {exc}", getattr(exc, "lineno", None))
        return
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        where = Where(file, None, f"[{i}]" if isinstance(value, list) else "")
        problem = json_problem(item)
        if problem is not None:
            yield where.error(problem[1], problem[0])
            continue
        yield where, item


def line_record(raw: bytes, file: str, number: int) -> tuple[Where, Any] | InputError:
    """Line ``number`` of a JSONL file as a record with where it is, or its error."""
    where = Where(file, number)
    try:
        value = load_json(raw)
    except UnicodeDecodeError as exc:
        return where.error(f"not UTF-8 at byte {exc.start} of the line")
    except (ValueError, RecursionError) as exc:
        return where.error(f"invalid JSON: {exc}")
    problem = json_problem(value)
    if problem is not None:
        return where.error(problem[1], problem[0])
    return where, value


def _no_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` of the JSON values a
# conversion makes (never circular), its C encoder made once rather than on each call.
if json_encoder.c_make_encoder is not None:
    _ENCODE = json_encoder.c_make_encoder(
        None, _no_json, json_encoder.encode_basestring, None, ":", ",", False, False, True
    )

    def _COMPACT(value: Any) -> str:
        return "".join(_ENCODE(value, 0))

else:  # pragma: no cover (CPython has the C encoder)
    _COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join([_COMPACT(r) + "\n" for r in records]).encode()


def layout_files(got: Converted) -> dict[str, bytes]:
    """What the native layout holds of a converted document, key by key: its text (or its
    source file), its claims and, when the format has typed facts, its candidates. Both
    ``groundswell import`` and a corpus read in place serve exactly these bytes, so their
    receipts are the same."""
    from groundswell.shared.corpus import candidates_key, claims_key

    if got.source is not None:
        document = {f"documents/{got.doc_id}{got.suffix}": got.source}
    else:
        assert got.text is not None
        document = {f"documents/{got.doc_id}.txt": got.text.encode("utf-8", "surrogatepass")}
    # Each claim carries the document's producer (unless it names its own), so a run counts it
    # by producer; the candidates stay as converted: a member more would move groundgate's
    # candidate digests (the LangExtract adapter's parity), and the corpus declares theirs.
    claims = [c if "producer" in c else {**c, "producer": got.producer} for c in got.claims]
    out = {**document, claims_key(got.doc_id): jsonl(claims if got.producer else got.claims)}
    if got.candidates is not None:
        out[candidates_key(got.doc_id)] = (_COMPACT(got.candidates) + "\n").encode()
    return out


def span_claims(
    offsets: TextOffsets,
    spans: list[tuple[str, int, int, str]],
    where: Where,
) -> dict[tuple[int, int], tuple[int, int]]:
    """Code point spans of ``(field, start, end, unit)`` offsets, all converted in one sweep
    per unit; an offset outside the text or inside a character raises RecordError naming the
    field."""
    by_unit: dict[str, list[tuple[str, int, int, str]]] = {}
    for item in spans:
        by_unit.setdefault(item[3], []).append(item)
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for unit, items in by_unit.items():
        try:
            got = offsets.to_codepoints((v for _, s, e, _ in items for v in (s, e)), unit)
        except OffsetError as exc:
            bad = next(f for f, s, e, _ in items if exc.value in (s, e))
            raise RecordError(where.error(str(exc), bad)) from None
        for _, s, e, _ in items:
            out[(s, e)] = (got[s], got[e])
    return out


def to_utf8(offsets: TextOffsets, spans: list[tuple[int, int]]) -> dict[int, int]:
    """UTF-8 byte offsets (groundgate's evidence unit) of code point offsets, in one sweep."""
    return offsets.from_codepoints((v for s, e in spans for v in (s, e)), "utf8")


def claim(
    cid: Any, text: str, span: tuple[int, int] | None, alignment: str, **carried: Any
) -> dict[str, Any]:
    """A claim record: bound to its offsets when the producer gave a non-empty span."""
    record: dict[str, Any] = {"id": cid, "claim": text}
    if span is not None and span[0] < span[1]:
        record["start"], record["end"] = span
    record["alignment"] = alignment
    record.update({k: v for k, v in carried.items() if v is not None})
    return record


# --- producer / verifier disagreement --------------------------------------------------------


def disagreements(text: str, claims: list[dict[str, Any]], verifier: Any = None) -> Counter[str]:
    """Where the producer's own alignment claim and the verifier disagree, counted by
    :func:`groundswell.shared.producers.disagreement` (``exact_not_verified``,
    ``unaligned_located``, ``lesser_short``); also ``claims`` and one ``alignment.<kind>``
    count per producer alignment."""
    from groundswell.shared.verify import DEFAULT, Verifier

    counts: Counter[str] = Counter()
    if not claims:
        return counts
    verifier = verifier or Verifier(text, DEFAULT)
    for record in claims:
        kind = record.get("alignment")
        counts["claims"] += 1
        counts[f"alignment.{kind}"] += 1
        quote, start, end = record.get("claim"), record.get("start"), record.get("end")
        if not isinstance(quote, str):
            continue
        if start is None:
            if kind != "unaligned":
                continue
            cert = verifier.verify(quote)
        else:
            cert = verifier.verify_at(quote, start, end)
        found = disagreement(kind, start is not None, cert.verdict, cert.tier)
        if found is not None:
            counts[found] += 1
    return counts


Convert = Callable[[Any, Where, dict[str, Any]], list[Converted]]


# --- helpers of several formats --------------------------------------------------------------


def as_list(value: Any) -> list[Any]:
    """A member that should be a list, or nothing (a hostile record gives anything)."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def decimal_value(value: Any) -> Any:
    """A number as groundgate takes a value: an integer as is, a fraction as a decimal
    string (a JSON number with a fraction is not a value, SPEC §2.5)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return repr(value) if isinstance(value, float) else value


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def field_name(raw: str) -> str:
    """A producer's field name as a schema field name (lowercase, digits, ``_``, a letter
    first): ``InvoiceTotal`` is ``invoice_total``, ``line_item/amount`` ``line_item_amount``."""
    name = re.sub(r"[^a-z0-9]+", "_", _CAMEL.sub("_", raw).lower()).strip("_")
    if not name or not name[0].isalpha():
        name = f"f_{name}"
    return name[:64]


@dataclass
class SourceDocument:
    """A document a provider was sent: its text, or its file (a PDF) when it has no text."""

    text: str | None
    source: bytes | None = None
    suffix: str = ".txt"
    title: str | None = None
    offsets: TextOffsets | None = None
    claims: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[str] | None = None  # the text blocks of a custom-content document

    def __post_init__(self) -> None:
        if self.text is not None:
            self.offsets = TextOffsets(self.text)


def cited_documents(
    docs: list[SourceDocument], where: Where, options: dict[str, Any], record_id: Any
) -> list[Converted]:
    """One Converted per document sent, with the claims cited in it (none: no document)."""
    base = safe_id(record_id) if record_id is not None else options["default_id"]
    out = []
    for n, doc in enumerate(docs):
        out.append(
            Converted(
                doc_id=base if len(docs) == 1 else f"{base}-{n}",
                text=doc.text,
                claims=doc.claims,
                candidates=None,
                producer=options["producer"],
                where=where,
                source=doc.source,
                suffix=doc.suffix,
                id_field="id" if record_id is not None else None,
            )
        )
    return out


def char_span(
    doc: SourceDocument, start: int, end: int, unit: str, where: Where, field_: str
) -> tuple[int, int]:
    """A cited span in code points, checked against the document's text."""
    assert doc.offsets is not None
    if end < start:
        raise RecordError(where.error(f"the span ends ({end}) before it starts ({start})", field_))
    return span_claims(doc.offsets, [(field_, start, end, unit)], where)[(start, end)]


def sent_documents(
    documents: list[dict[str, Any]] | None,
    request: dict[str, Any] | None,
    where: Where,
    block_document: Callable[[Any], dict[str, Any] | None],
    read: Callable[[dict[str, Any], Where, str], SourceDocument],
) -> list[SourceDocument]:
    """The documents a provider was sent, in the order its citations count them: the record's
    ``documents``, else each document block of the request's messages (``block_document``
    gives a content block's document, or None for another block)."""
    if documents is not None:
        return [read(b, where, f"documents[{i}]") for i, b in enumerate(documents)]
    if request is None:
        raise RecordError(where.error("a record gives documents or the request", "documents"))
    docs = []
    for m, message in enumerate(request.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for b, block in enumerate(content if isinstance(content, list) else []):
            doc = block_document(block)
            if doc is not None:
                docs.append(read(doc, where, f"request.messages[{m}].content[{b}]"))
    return docs
