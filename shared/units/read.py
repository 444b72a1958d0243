"""The ``read`` unit kind: read a document that is not plain text (PDF, HTML, XML) once.

A document read from another format has a read unit before its other units. Read units are
batched on their own (by source bytes, times what reading a byte costs), and each read batch
holds a batch of exactly its documents for each kind that waits for a reading: those are sent
when the read batch is recorded, so no unit waits for two read batches and there is no chord.

A read unit stores the reading (:mod:`groundswell.shared.runs.reading`: create-once, by the
source's digest and the reader) and leaves no index row: its counters say what it did
(``units.read.<computed|cached|failed>``, ``read.failed.<cause>``, ``read.pages``).
"""

from __future__ import annotations

from typing import Any

from groundswell.shared.corpus import DOCUMENTS, InputFileError, document_key, source_format
from groundswell.shared.receipts import content_sha256
from groundswell.shared.runs import kinds
from groundswell.shared.runs.reading import CONFLICT, reader
from groundswell.shared.runs.segments import Segment, sum_counters
from groundswell.shared.runs.units import UnitRunner

READ = "read"

# A read unit weighs its source's bytes times what reading a byte costs next to verifying one
# (bench/read.py: a 10-Q PDF reads at about 150 KB/s, markup at 10 MB/s): read batches stay
# a second or two of work, so the workers share a corpus of PDFs instead of one of them
# reading the large ones in a single batch.
# An image is OCRed (shared/read/ocr.py): about 3 s of a core per 300-dpi page of 0.5-1 MB.
READ_COST = {"pdf": 40, "html": 2, "xml": 2, "image": 25}


def read_unit(runner: UnitRunner, doc_id: str, source: Any) -> dict[str, int]:
    """A read unit: read the document's source file unless its reading is stored. Its
    counters: ``units.read.<computed|cached>``, ``read.failed.<cause>``, ``read.pages``."""
    if isinstance(source, list):
        return {"units.read.failed": 1, f"read.failed.{CONFLICT}": 1}
    file = source or document_key(doc_id)
    try:
        data = runner.get_input(file)
    except InputFileError:
        data = None
    if data is None:
        return {"units.read.failed": 1, "read.failed.missing": 1}
    sha, name = content_sha256(data), reader()
    stored = runner.stored_reading(sha, name)
    status = "cached"
    if stored is None:
        if runner.dry_run:
            return {"units.read.would_compute": 1}
        stored = runner.read_now(data, file, sha, name)
        status = "computed"
    out = {f"units.read.{status}": 1}
    if stored.cause:
        out[f"read.failed.{stored.cause}"] = 1
    if stored.pages:
        out["read.pages"] = stored.pages
    return out


def execute(work: kinds.Work) -> Segment:
    spec = work.spec
    counters = sum_counters(read_unit(work.runner, d, spec.source(d)) for d in spec.doc_ids)
    # No index rows: its units' results are its documents' readings.
    fresh = {k: v for k, v in counters.items() if k == "units.read.computed"}
    return Segment(spec.batch, READ, [], counters, fresh)


def plan(doc: kinds.Listed) -> int | None:
    """A unit for a document of another format that has units to read it for."""
    source = doc.source
    if not doc.units or not isinstance(source, str) or source_format(source) == "text":
        return None
    return doc.document_bytes * READ_COST.get(source_format(source) or "", 1)


KIND = kinds.register(
    kinds.Kind(
        name=READ,
        queue="read",  # reading PDFs is CPU-heavy: its own queue and workers
        execute=execute,
        inputs=(document_key,),
        listing=DOCUMENTS,
        plan=plan,
        rows="none",
        reading=True,
        counters=("read.",),
    )
)
