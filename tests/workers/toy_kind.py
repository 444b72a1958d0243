"""A unit kind from outside the package, as a plug-in is written: count each document's words.

Loaded by ``GROUNDSWELL_KINDS_EXTRA=tests.workers.toy_kind`` (the registry imports it by name,
in the workers and in the process that submits), it is the whole of a kind: a planning rule
(every document), an executor (one unit per document, each leaving an index row), its own
queue and the counters it adds to the run's summary.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from groundswell.shared.corpus import DOCUMENTS, InputFileError, document_key
from groundswell.shared.runs import kinds
from groundswell.shared.runs.units import UnitResult, UnitRunner

WORDS = "words"


def count_words(runner: UnitRunner, doc_id: str, source: Any = None) -> UnitResult:
    doc = runner.document_for(WORDS, doc_id, source)
    if isinstance(doc, UnitResult):
        return doc
    try:
        words = len(doc.text().split())
    except InputFileError as exc:
        return runner.failed(WORDS, doc_id, exc.error, document_bytes=doc.size)
    counts = Counter({"words.total": words, "words.documents": 1})
    return UnitResult(WORDS, doc_id, "computed", document_bytes=doc.size, counts=counts)


def plan(doc: kinds.Listed) -> int | None:
    return doc.document_bytes if DOCUMENTS in doc.seen else None


KIND = kinds.register(
    kinds.Kind(
        name=WORDS,
        queue=WORDS,
        execute=kinds.each_document(count_words),
        inputs=(document_key,),
        listing=DOCUMENTS,
        plan=plan,
        waits_for_reading=True,
        counters=("words.",),
        unit=count_words,
    )
)
