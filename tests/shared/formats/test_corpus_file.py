"""corpus.yaml: the declared format, schema and producer, and bad files named by line and field."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.corpus import InputFileError
from groundswell.shared.formats.corpus_file import (
    CORPUS_FILE,
    parse_corpus_file,
    read_corpus_file,
)
from groundswell.shared.storage.local import LocalStore

GOOD = b"""\
format: langextract
schema: schema.json
producer:
  producer_version: 1.7
  model: gemini-2.5-flash
  prompt_version: v3
  schema_version: 2
files: extractions/
"""


def test_declaration_read_with_producer_defaults(tmp_path) -> None:
    (tmp_path / CORPUS_FILE).write_bytes(GOOD)
    (tmp_path / "schema.json").write_bytes(b'{"fields": {}}')
    store = LocalStore(tmp_path)
    got = read_corpus_file(store)
    assert got is not None
    assert got.format == "langextract"
    assert got.files == ["extractions/"]
    # The producer's format is the file's; YAML numbers are kept as the versions written.
    assert got.producer_of().as_dict() == {
        "format": "langextract",
        "producer_version": "1.7",
        "model": "gemini-2.5-flash",
        "prompt_version": "v3",
        "schema_version": "2",
    }
    assert got.schema_bytes(store) == b'{"fields": {}}'


def test_no_corpus_file_is_none(tmp_path) -> None:
    assert read_corpus_file(LocalStore(tmp_path)) is None


def test_inline_schema_and_defaults() -> None:
    got = parse_corpus_file(b"format: anthropic\nschema:\n  fields: {total: {type: number}}\n")
    assert got.files == [""]
    assert got.producer_of().as_dict() == {"format": "anthropic"}
    assert json.loads(got.schema_bytes(None)) == {"fields": {"total": {"type": "number"}}}


@pytest.mark.parametrize(
    ("data", "line", "field", "says"),
    [
        (b"format: langextract\nproducer:\n  model: m\n  modle: x\n", 4, "producer.modle", "Extra"),
        (b"format: langextrakt\n", 1, "format", "unknown format"),
        (b"schema: s.json\nproducer: {}\nformat: 3\n", 3, "format", "string"),
        (b"format: langextract\nfiles:\n  - a/\n  - [1]\n", 4, "files.1", "string"),
        (b"format: langextract\nproducer:\n  model: [1, 2]\n", 3, "producer.model", "string"),
        (b"format: langextract\n  bad: indent\n", 2, None, "invalid YAML"),
        (b"- a list\n", 1, None, "a mapping"),
    ],
)
def test_bad_file_names_line_and_field(
    data: bytes, line: int, field: str | None, says: str
) -> None:
    with pytest.raises(InputFileError) as info:
        parse_corpus_file(data)
    error = info.value.error
    assert (error.file, error.line, error.field) == (CORPUS_FILE, line, field)
    assert says in error.message
    assert str(error).startswith(f"{CORPUS_FILE}:{line}: ")


def test_native_layout_declares_only_its_producer() -> None:
    got = parse_corpus_file(b"producer:\n  model: gpt-5\n")
    assert got.format is None
    assert got.producer_of().as_dict() == {"format": "layout", "model": "gpt-5"}
