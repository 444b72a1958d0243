"""``corpus.yaml``: a corpus that names its producer format, its schema and its producer.

A corpus of producer files (a LangExtract JSONL, provider responses, document-AI results) is
read where it lies when its root holds a ``corpus.yaml`` (or the run names ``--format``)::

    format: langextract            # langextract | anthropic | bedrock | azure-di | documentai | mapped
                                   # (left out: the native layout, whose producer is declared)
    schema: schema.json            # the admission schema: a key of the corpus, or inline
    producer:                      # who made the records (format defaults to the one above)
      producer_version: "1.7.1"
      model: gemini-2.5-flash
      prompt_version: v3
      schema_version: "2"
    files: [extractions/]          # key prefixes holding the producer files (default: all)
    mapping: mapping.yaml          # mapped only: the mapping, a key of the corpus or inline
    options: {fields: {...}}       # passed to the format's conversion (field renames, ...)

A bad file is an :class:`InputFileError` naming ``corpus.yaml``, the line and the field.
This module is the one reader of the file: planning, units and the per-producer breakdown
(``producer``) all read it here.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from groundswell.shared.corpus import InputError, InputFileError
from groundswell.shared.formats.models import Producer

CORPUS_FILE = "corpus.yaml"
LAYOUT = "layout"  # the producer format of a native-layout corpus that declares a producer
MAX_CORPUS_FILE_BYTES = 1 << 20  # a declaration, not data: larger is a mistake


class ProducerDeclared(BaseModel):
    """The ``producer`` of corpus.yaml: :class:`Producer`, whose format may be left out."""

    model_config = ConfigDict(extra="forbid")

    format: str | None = None
    producer_version: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    schema_version: str | None = None

    @field_validator("producer_version", "prompt_version", "schema_version", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        # YAML reads `1.7` and `2` as numbers; a version is the text the user wrote.
        return (
            str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
        )


class CorpusFile(BaseModel):
    """A corpus's ``corpus.yaml``."""

    model_config = ConfigDict(extra="forbid")

    # None: the corpus is the native layout (documents/, claims/, ...) with a declared producer.
    format: str | None = None
    schema_: str | dict[str, Any] | None = Field(default=None, alias="schema")
    producer: ProducerDeclared = Field(default_factory=ProducerDeclared)
    files: list[str] = Field(default_factory=lambda: [""])
    mapping: str | dict[str, Any] | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("format")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        from groundswell.shared.formats import FORMATS

        if value is not None and value not in FORMATS:
            raise ValueError(f"unknown format {value!r} (one of {', '.join(FORMATS)})")
        return value

    @field_validator("files", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def producer_of(self) -> Producer:
        """The producer every record of the corpus carries (the file's format by default,
        ``layout`` for the native layout)."""
        declared = self.producer.model_dump(exclude_none=True)
        return Producer(**{"format": self.format or LAYOUT, **declared})

    def schema_bytes(self, store: Any) -> bytes | None:
        """The admission schema's bytes: the key named (``KeyError`` when missing), the
        inline schema as compact JSON, or None when the file declares none."""
        if self.schema_ is None:
            return None
        if isinstance(self.schema_, str):
            return store.get(self.schema_, max_bytes=MAX_CORPUS_FILE_BYTES * 16)
        return json.dumps(self.schema_, ensure_ascii=False, separators=(",", ":")).encode()


def _line_of(root: Any, loc: tuple[Any, ...]) -> int | None:
    """The line (1-based) of the node at ``loc`` in a composed YAML tree: the deepest one
    found, so a member that is missing names the line of the mapping that lacks it."""
    import yaml

    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == part), None)
            if found is None:
                break
            node, line = found[1], found[0].start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def parse_corpus_file(data: bytes, file: str = CORPUS_FILE) -> CorpusFile:
    """The declaration in ``data``; InputFileError naming ``file``, its line and the field."""
    import yaml

    try:
        text = data.decode("utf-8")
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except UnicodeDecodeError as exc:
        raise InputFileError(InputError(file, f"not UTF-8 at byte {exc.start}")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputFileError(InputError(file, f"invalid YAML: {problem}", line)) from None
    if not isinstance(raw, dict):
        raise InputFileError(
            InputError(file, "a mapping of format, schema, producer, ... is expected", 1)
        )
    try:
        return CorpusFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first.get("loc", ()))
        field = ".".join(str(p) for p in loc) or None
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise InputFileError(InputError(file, message, _line_of(root, loc), field)) from None


def read_corpus_file(store: Any) -> CorpusFile | None:
    """The corpus's ``corpus.yaml``, None when it has none; InputFileError when it is bad
    (or larger than a declaration can be)."""
    from groundswell.shared.storage import StorageRefused

    try:
        data = store.get(CORPUS_FILE, max_bytes=MAX_CORPUS_FILE_BYTES)
    except KeyError:
        return None
    except StorageRefused as exc:
        raise InputFileError(InputError(CORPUS_FILE, f"refused: {exc}")) from None
    return parse_corpus_file(data, CORPUS_FILE)


def declared_producer(store: Any) -> dict[str, Any] | None:
    """The producer a corpus declares for all its records: a corpus read in place, its
    format's (and corpus.yaml's members); the native layout, its corpus.yaml's ``producer``
    when the file declares one (a file that names only a schema declares none). None: the
    corpus declares no producer, and its receipts are as they always were. InputFileError
    when its corpus.yaml is bad."""
    from groundswell.shared.formats.source import ProducerCorpus

    if isinstance(store, ProducerCorpus):
        return dict(store.producer)
    declared = read_corpus_file(store)
    if declared is None:
        return None
    if declared.format is None and not declared.producer.model_dump(exclude_none=True):
        return None
    return declared.producer_of().as_dict()


__all__ = [
    "CORPUS_FILE",
    "CorpusFile",
    "ProducerDeclared",
    "declared_producer",
    "parse_corpus_file",
    "read_corpus_file",
]
