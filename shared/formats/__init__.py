"""Producer formats: the files an extraction pipeline writes, read as a corpus's records.

A corpus is a source of records (DESIGN.md, "Where the next capabilities go"). A record is
what one document gives a run: its text (or a file to read), its claims with offsets, its
candidates, and its producer (format, producer version, model, prompt or schema version).
The layout folder or prefix (``corpus.py``) is one source; this package holds the others
that are files a producer wrote: LangExtract JSONL, provider citations, document-AI
results, and a declared mapping for anything else. A JSONL file is cut into line-aligned
byte ranges that units read where they lie, so planning never downloads it whole.

Offsets are converted here, once, at the source: from the producer's unit (code points,
UTF-8 bytes, UTF-16 code units) to the engines'. Everything after the record is unchanged:
receipts, reuse, summaries, review, the ledger.

File names, as in every domain: ``models.py`` (each format's records and the producer,
pydantic at the boundary), ``base.py`` (what a record becomes, the reading all formats share,
the producer/verifier disagreement counts), one module a format (``langextract.py``,
``anthropic.py``, ``bedrock.py``, ``azure_di.py``, ``documentai.py``, ``mapped.py``),
``offsets.py`` (the unit conversion). It builds on ``corpus``, ``storage``,
``text`` and ``settings`` and is read by planning and the units; it imports no run
machinery, no reader of a run and no API.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from typing import Any

from groundswell.shared.corpus import InputError
from groundswell.shared.formats.base import (
    Converted,
    RecordError,
    Where,
    line_record,
    read_records,
    safe_id,
)

# Each format's module (imported when its records are read) and the name of the format.
FORMATS = {
    "langextract": "langextract",
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "azure-di": "azure_di",
    "documentai": "documentai",
    "mapped": "mapped",
}


def converter(fmt: str) -> Any:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return importlib.import_module(f"groundswell.shared.formats.{FORMATS[fmt]}").convert


def file_stem(file: str) -> str:
    """What names a file's records that have no id of their own (``<stem>-<line>``)."""
    return safe_id(file.rsplit("/", 1)[-1].split(".", 1)[0])


def _converted(
    convert: Any, where: Where, value: Any, n: int, stem: str, producer: dict[str, Any], options
) -> Iterator[Converted | InputError]:
    # A record without an id of its own is named by its file, and its line or place.
    single = where.line is None and not where.prefix
    default = stem if single else f"{stem}-{where.line if where.line is not None else n + 1}"
    opts = {**(options or {}), "producer": producer, "default_id": default}
    try:
        yield from convert(value, where, opts)
    except RecordError as exc:
        yield exc.error


def convert_file(
    fmt: str,
    data: bytes | Iterable[bytes],
    file: str,
    producer: dict[str, Any],
    options: dict[str, Any] | None = None,
) -> Iterator[Converted | InputError]:
    """Each document of a producer file, or the error of a record that gave none (the
    records around a bad one are converted as usual)."""
    convert, stem = converter(fmt), file_stem(file)
    for n, got in enumerate(read_records(data, file)):
        if isinstance(got, InputError):
            yield got
            continue
        yield from _converted(convert, *got, n, stem, producer, options)


def convert_line(
    fmt: str,
    raw: bytes,
    file: str,
    line: int,
    producer: dict[str, Any],
    options: dict[str, Any] | None = None,
) -> Iterator[Converted | InputError]:
    """The documents of line ``line`` of a JSONL producer file, read on its own (a range
    of the file): what :func:`convert_file` gives for that line."""
    got = line_record(raw, file, line)
    if isinstance(got, InputError):
        yield got
        return
    yield from _converted(converter(fmt), *got, line - 1, file_stem(file), producer, options)


__all__ = [
    "FORMATS",
    "Converted",
    "RecordError",
    "convert_file",
    "convert_line",
    "converter",
    "file_stem",
]
