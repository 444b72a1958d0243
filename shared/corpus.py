"""The corpus layout and its input records, read with errors that name file, line and field.

A corpus is a store prefix holding::

    documents/<doc_id>.txt      UTF-8 source text, byte for byte
    claims/<doc_id>.jsonl       quotations to verify, one JSON object per line
    candidates/<doc_id>.json    a groundgate candidate array
    schema.json                 the admission schema
    labels/<doc_id>.json        optional gold labels

A malformed record fails alone: parsers return the good records and a list of errors.
Fields the system does not read are carried through untouched.

A corpus store may also be a :class:`RecordSource` (a producer's files read in place,
``shared/formats/source.py``): it serves the same keys, and planning pages its documents
from the source instead of from the layout's listings.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError

DOCUMENTS = "documents/"
CLAIMS = "claims/"
CANDIDATES = "candidates/"
LABELS = "labels/"
SCHEMA_KEY = "schema.json"

SUFFIX = {DOCUMENTS: ".txt", CLAIMS: ".jsonl", CANDIDATES: ".json", LABELS: ".json"}

# A document's source file: its ending (compared without regard to case) names its format.
# Text is verified byte for byte; any other format is read first (a ``read`` unit).
DOCUMENT_FORMATS = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xml": "xml",
    ".txt": "text",
    # scans: read by OCR (shared/read/ocr.py), one page per image, or per frame of a TIFF
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
}
# The greatest key a document id can have in documents/ (``.xml`` sorts after every other
# ending, in any case): a listing past ``documents/<id>.xml`` has passed all of its sources.
LAST_DOCUMENT_SUFFIX = ".xml"


def document_key(doc_id: str) -> str:
    return f"{DOCUMENTS}{doc_id}.txt"


def claims_key(doc_id: str) -> str:
    return f"{CLAIMS}{doc_id}.jsonl"


def candidates_key(doc_id: str) -> str:
    return f"{CANDIDATES}{doc_id}.json"


def labels_key(doc_id: str) -> str:
    return f"{LABELS}{doc_id}.json"


def source_format(key: str) -> str | None:
    """The format of a document source key by its ending (``.PDF`` is ``pdf``), or None."""
    dot = key.rfind(".")
    return DOCUMENT_FORMATS.get(key[dot:].lower()) if dot > key.rfind("/") else None


def doc_id_of(key: str, prefix: str) -> str | None:
    """The document id in a listed key, or None when the key is not a corpus input."""
    if not key.startswith(prefix):
        return None
    if prefix == DOCUMENTS:
        if source_format(key) is None:
            return None
        doc_id = key[len(prefix) : key.rfind(".")]
        return doc_id if doc_id and "/" not in doc_id else None
    suffix = SUFFIX[prefix]
    if not key.endswith(suffix):
        return None
    doc_id = key[len(prefix) : len(key) - len(suffix)]
    return doc_id if doc_id and "/" not in doc_id else None


@dataclass(frozen=True, slots=True)
class ListedDocument:
    """A document as a record source lists it, without its units' work: the bytes it gives
    each listing (``documents/``, ``claims/``, ...), its files' listing entries (key ->
    [size, etag], what a rerun compares to reuse a unit unread) and the source's cursor
    just past it (planning resumes there)."""

    doc_id: str
    seen: dict[str, int]
    entries: dict[str, list[Any]]
    after: dict[str, Any]


@runtime_checkable
class RecordSource(Protocol):
    """A corpus whose documents come from records (a producer's files) rather than from
    the layout's listings; its store serves each document's layout keys."""

    def listed_documents(self, cursor: dict[str, Any] | None) -> Iterator[list[ListedDocument]]:
        """The documents after ``cursor`` (None: from the start), a page at a time."""
        ...

    def source_file(self, key: str) -> bool:
        """Whether ``key`` is one of the source's files (a --changed list may name it)."""
        ...

    def record_files(self, doc_id: str) -> list[str]:
        """The source files the document's record lies in, as the running batch lists it."""
        ...

    def has_labels(self) -> bool:
        """Whether the corpus holds any labels file (``labels/``)."""
        ...


@dataclass(frozen=True, slots=True)
class InputError:
    """One malformed input: which file, which line (1-based, when it has lines), which field."""

    file: str
    message: str
    line: int | None = None
    field: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        return f"{where}: {self.field + ': ' if self.field else ''}{self.message}"


class InputFileError(ValueError):
    """A whole input file is unusable (the unit that needs it fails, the run goes on)."""

    def __init__(self, error: InputError) -> None:
        super().__init__(str(error))
        self.error = error


class ClaimRecord(BaseModel):
    """One quotation to verify. ``start``/``end`` (both or neither) bind it to offsets."""

    model_config = ConfigDict(extra="allow", strict=True)

    claim: str
    id: str | int | None = None
    start: int | None = None
    end: int | None = None


class Labels(BaseModel):
    """Gold labels of one document: is each extraction correct?"""

    model_config = ConfigDict(extra="forbid")

    claims: dict[str, StrictBool] = {}
    candidates: dict[str, StrictBool] = {}


# What a record may hold: JSON that has a canonical form (receipts are hashed over RFC 8785),
# so a record that would break sealing fails alone, here, with its line and field.
MAX_JSON_DEPTH = 100
_SAFE_INTEGER = 2**53 - 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(raw: bytes | str) -> Any:
    """``json.loads`` that refuses NaN and Infinity (Python's json accepts them)."""
    return json.loads(raw, parse_constant=_no_constant)


def json_problem(value: Any, path: str = "") -> tuple[str | None, str] | None:
    """The first part of a parsed JSON value that has no canonical form: ``(field, why)``.

    Integers beyond 2^53 (I-JSON), non-finite numbers and nesting deeper than
    :data:`MAX_JSON_DEPTH` are refused; the field is a path like ``meta.items[3]``.
    """
    if _canonical(value):
        return None  # the common case, checked without naming a path for each member
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return where or None, f"nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if abs(item) > _SAFE_INTEGER:
                return where or None, "an integer beyond 2^53 has no exact JSON number"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return where or None, "not a finite number"
        elif isinstance(item, dict):
            for key, sub in item.items():
                stack.append((sub, f"{where}.{key}" if where else str(key), depth + 1))
        elif isinstance(item, list):
            for i, sub in enumerate(item):
                stack.append((sub, f"{where}[{i}]", depth + 1))
    return None


def _canonical(value: Any) -> bool:
    """Whether :func:`json_problem` finds nothing in ``value`` (the same checks, faster)."""
    stack: list[tuple[Any, int]] = [([value], -1)]  # the value as a member, at depth 0
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_JSON_DEPTH and item:
            return False  # its members are nested too deep
        members = item.values() if type(item) is dict else item
        for sub in members:
            kind = type(sub)
            if kind is str or sub is None or kind is bool:
                continue
            if kind is int:
                if abs(sub) > _SAFE_INTEGER:
                    return False
            elif kind is float:
                if not math.isfinite(sub):
                    return False
            elif kind is dict or kind is list:
                stack.append((sub, depth + 1))
            else:
                return False  # another type (a subclass): the full check says what it is
    return True


def _json_error(exc: Exception) -> str:
    """What is wrong with a line or file that does not parse, in a reader's words."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "invalid JSON: nested too deeply"
    text = str(exc)
    if "integer string conversion" in text:
        return "invalid JSON: a number with too many digits"
    return f"invalid JSON: {text}"


def _field_of(exc: ValidationError) -> tuple[str | None, str]:
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    return (loc or None), first.get("msg", "invalid")


def decode_document(data: bytes, file: str) -> str:
    """The document text; a file that is not UTF-8 is refused with the byte and line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(
            InputError(file, f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}", line)
        ) from None


def parse_claims(
    data: bytes, file: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[InputError]]:
    """Claim records as ``(line, record)``; each bad line is an error of its own."""
    records: list[tuple[int, dict[str, Any]]] = []
    errors: list[InputError] = []
    first_line: dict[str, int] = {}  # labels name claims by id: an id must be one claim
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = load_json(raw)
        except UnicodeDecodeError as exc:
            errors.append(InputError(file, f"not UTF-8 at byte {exc.start} of the line", number))
            continue
        except (ValueError, RecursionError) as exc:
            errors.append(InputError(file, _json_error(exc), number))
            continue
        if not isinstance(obj, dict):
            errors.append(InputError(file, "a claim record must be a JSON object", number))
            continue
        problem = json_problem(obj)
        if problem is not None:
            errors.append(InputError(file, problem[1], number, problem[0]))
            continue
        try:
            record = ClaimRecord.model_validate(obj)
        except ValidationError as exc:
            field, msg = _field_of(exc)
            errors.append(InputError(file, msg, number, field))
            continue
        if (record.start is None) != (record.end is None):
            field = "end" if record.end is None else "start"
            errors.append(InputError(file, "start and end go together", number, field))
            continue
        if record.start is not None and not 0 <= record.start < record.end:  # type: ignore[operator]
            errors.append(InputError(file, "need 0 <= start < end", number, "start"))
            continue
        if record.id is not None:
            seen = first_line.setdefault(str(record.id), number)
            if seen != number:
                errors.append(InputError(file, f"id already used on line {seen}", number, "id"))
                continue
        records.append((number, obj))
    return records, errors


def parse_json_file(data: bytes, file: str) -> Any:
    """A whole JSON file; one that does not parse, or has no canonical form, is refused."""
    try:
        value = load_json(data)
    except UnicodeDecodeError as exc:
        raise InputFileError(InputError(file, f"not UTF-8 at byte {exc.start}")) from None
    except json.JSONDecodeError as exc:
        raise InputFileError(InputError(file, _json_error(exc), exc.lineno)) from None
    except (ValueError, RecursionError) as exc:
        raise InputFileError(InputError(file, _json_error(exc))) from None
    return value


def parse_candidates(data: bytes, file: str) -> tuple[list[Any], list[InputError]]:
    """The candidate array, less the items that have no canonical JSON form (each an error
    of its own, ``[i].field``). What the items mean is checked by admission
    (CANDIDATE_INVALID), not here."""
    value = parse_json_file(data, file)
    if not isinstance(value, list):
        raise InputFileError(
            InputError(file, f"a candidates file holds a JSON array, not a {type(value).__name__}")
        )
    kept: list[Any] = []
    errors: list[InputError] = []
    first: dict[str, int] = {}  # labels name candidates by id: an id must be one candidate
    for i, item in enumerate(value):
        problem = json_problem(item, f"[{i}]")
        if problem is not None:
            errors.append(InputError(file, problem[1], None, problem[0]))
            continue
        cid = item.get("id") if isinstance(item, dict) else None
        if isinstance(cid, str | int) and not isinstance(cid, bool):
            seen = first.setdefault(str(cid), i)
            if seen != i:
                errors.append(InputError(file, f"id already used by [{seen}]", None, f"[{i}].id"))
                continue
        kept.append(item)
    return kept, errors


def parse_schema(data: bytes, file: str = SCHEMA_KEY) -> dict[str, Any]:
    value = parse_json_file(data, file)
    if not isinstance(value, dict):
        raise InputFileError(InputError(file, "the admission schema must be a JSON object"))
    problem = json_problem(value)
    if problem is not None:
        raise InputFileError(InputError(file, problem[1], None, problem[0]))
    return value


def parse_labels(data: bytes, file: str) -> tuple[Labels, list[InputError]]:
    """Gold labels and the entries that are not labels.

    Labels only measure (escapes, correctness); a bad entry is reported and left out, and never
    fails the units it would have measured. An error's field says which part it belongs to
    (``claims.*`` measure verification, anything else admission)."""
    try:
        value = parse_json_file(data, file)
    except InputFileError as exc:
        return Labels(), [exc.error]
    if not isinstance(value, dict):
        kind = type(value).__name__
        return Labels(), [InputError(file, f"labels are a JSON object, not a {kind}")]
    errors: list[InputError] = []
    parts: dict[str, dict[str, bool]] = {}
    text = data.decode("utf-8", "replace")
    for part, entries in value.items():
        if part not in Labels.model_fields:
            errors.append(
                InputError(
                    file, "not a labels part (claims, candidates)", _line_of(text, part), part
                )
            )
            continue
        if not isinstance(entries, dict):
            errors.append(
                InputError(file, "an object of id: true|false", _line_of(text, part), part)
            )
            continue
        kept = parts.setdefault(part, {})
        for key, label in entries.items():
            if isinstance(label, bool):
                kept[key] = label
            else:
                errors.append(
                    InputError(
                        file,
                        f"a label is true or false, not {json.dumps(label)[:40]}",
                        _line_of(text, key),
                        f"{part}.{key}",
                    )
                )
    return Labels(**parts), errors


def _line_of(text: str, key: str) -> int | None:
    """The line of the first ``"key":`` in a JSON text (for naming a bad entry)."""
    match = re.search(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:", text)
    return text.count("\n", 0, match.start()) + 1 if match else None


# A producer file a --changed list names, in its list of documents: the file's key after this
# (a document id never holds a slash), which names every record of the file.
CHANGED_FILE = "/"


def changed_documents(
    lines: list[str],
    name: str,
    corpus: str = "",
    source_file: Callable[[str], bool] | None = None,
) -> tuple[list[str], list[InputError]]:
    """The documents a list of changed keys names (``run --changed``), and an error naming
    ``name``:line for each line that names no corpus file. A key is relative to the corpus,
    or starts with the corpus (its URL or folder) or with its S3 prefix, as S3 Inventory
    writes it. Existence is not checked: a named key that was deleted names its document.
    ``source_file``: whether a key is one of a record source's files (a producer's file
    read in place), which names all of its records: listed as ``CHANGED_FILE + key``."""
    heads = [corpus.rstrip("/") + "/"] if corpus else []
    if corpus.startswith("s3://"):
        bucket_and_prefix = corpus[5:].rstrip("/").split("/", 1)
        if len(bucket_and_prefix) == 2:
            heads.append(bucket_and_prefix[1] + "/")
    found: set[str] = set()
    errors: list[InputError] = []
    for number, line in enumerate(lines, 1):
        key = line.strip()
        if not key or key.startswith("#"):
            continue
        for head in heads:
            if key.startswith(head):
                key = key[len(head) :]
                break
        prefix = next((p for p in SUFFIX if key.startswith(p)), None)
        doc_id = doc_id_of(key, prefix) if prefix is not None else None
        if doc_id is None and source_file is not None and source_file(key):
            doc_id = CHANGED_FILE + key
        if doc_id is None:
            errors.append(
                InputError(name, f"names no corpus file: {json.dumps(key[:200])}", number)
            )
            continue
        found.add(doc_id)
    return sorted(found), errors
