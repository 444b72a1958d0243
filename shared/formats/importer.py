"""Write a producer's files as the native layout (``groundswell import``).

Each document a format gives becomes ``documents/<id>.txt`` (or the source file it was given
as, such as a PDF sent to a provider), ``claims/<id>.jsonl`` and, when the format has typed
facts, ``candidates/<id>.json``; ``schema.json`` is the schema given. ``import.json`` records
what was imported: the format, the producers, the counts and the producer/verifier
disagreements (see :func:`groundswell.shared.formats.base.disagreements`). Each claim carries
its producer; when one producer made every record, ``corpus.yaml`` declares it. A run over the
corpus is then a run like any other.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from groundswell.shared.corpus import InputError, parse_schema
from groundswell.shared.formats import convert_file
from groundswell.shared.formats.base import disagreements, layout_files
from groundswell.shared.formats.pages import bind_pages
from groundswell.shared.producers import DISAGREEMENTS

IMPORT_KEY = "import.json"


@dataclass
class ImportReport:
    format: str
    documents: int = 0
    claims: int = 0
    candidates: int = 0
    errors: list[InputError] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    producers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def disagreements(self) -> dict[str, int]:
        return {k: self.counts.get(k, 0) for k in DISAGREEMENTS}

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "documents": self.documents,
            "claims": self.claims,
            "candidates": self.candidates,
            "alignment": {
                k.removeprefix("alignment."): v
                for k, v in sorted(self.counts.items())
                if k.startswith("alignment.")
            },
            "disagreements": self.disagreements(),
            # Quotations cited by page, looked for on those pages of the PDF (pages.py).
            "pages": {
                k.removeprefix("page."): v
                for k, v in sorted(self.counts.items())
                if k.startswith("page.")
            },
            "producers": list(self.producers.values()),
            "errors": [e.as_dict() for e in self.errors],
        }


def import_files(
    fmt: str,
    files: Iterable[tuple[str, Callable[[], bytes | Iterable[bytes]]]],
    store: Any,
    *,
    producer: dict[str, Any],
    schema: bytes | None = None,
    options: dict[str, Any] | None = None,
    check: bool = True,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Convert each ``(name, read)`` producer file and write its documents to ``store``;
    ``read`` gives the file's bytes or its lines (a JSONL file is then held a line at a time).

    ``check`` verifies every claim at its offsets and document-wide to count where the
    producer and the verifier disagree (one verifier per document, its text indexed once)."""
    report = ImportReport(fmt)
    if schema is not None:
        parse_schema(schema)  # an unusable schema fails here, before anything is written
        store.put("schema.json", schema)
    seen: dict[str, str] = {}
    for name, read in files:
        for got in convert_file(fmt, read(), name, producer, options):
            if isinstance(got, InputError):
                report.errors.append(got)
                continue
            where = f"{got.where.file}:{got.where.line or got.where.prefix or 1}"
            if got.doc_id.lower() in seen:
                report.errors.append(
                    InputError(
                        got.where.file,
                        f"document id {got.doc_id!r} already imported from {seen[got.doc_id.lower()]}",
                        got.where.line,
                        got.where.at(got.id_field or "document_id"),
                    )
                )
                continue
            seen[got.doc_id.lower()] = where
            text = got.text
            if got.source is not None:
                # Quotations cited by page are looked for on those pages of the file read.
                text, pages = bind_pages(got)
                report.counts.update(pages)
            for key, data in layout_files(got).items():
                store.put(key, data)
            if got.candidates is not None:
                report.candidates += len(got.candidates)
            report.documents += 1
            report.claims += len(got.claims)
            key = json.dumps(got.producer, sort_keys=True)
            report.producers.setdefault(key, got.producer)
            if check and text is not None:
                report.counts.update(disagreements(text, got.claims))
            elif got.claims:
                report.counts.update(f"alignment.{c.get('alignment')}" for c in got.claims)
            if progress is not None:
                progress(1)
    if len(report.producers) == 1:
        # One producer made every record: the corpus declares it (corpus.yaml, the native
        # layout's), so admission units, whose candidates stay as converted, count by it too.
        # A corpus.yaml already there is kept.
        import yaml

        from groundswell.shared.formats.corpus_file import CORPUS_FILE

        (only,) = report.producers.values()
        declared = yaml.safe_dump({"producer": only}, sort_keys=False, allow_unicode=True)
        store.put(CORPUS_FILE, declared.encode(), create_only=True)
    store.put(IMPORT_KEY, json.dumps(report.as_dict(), ensure_ascii=False, indent=1).encode())
    return report
