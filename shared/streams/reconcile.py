"""Reconciliation: a lost notification is found by listing the corpus, reading no body.

The pass lists the corpus as planning does (``CorpusPlanner``: each document's files with
their size and ETag, in document order) and walks the index of the corpus's latest run (the
run the next window is compared with, whose rows keep their inputs' listing entries) beside
it. A file listed unlike its row, a document with no row, or a row's file no longer listed
becomes an event (no sequencer) applied like a notification: one the stream has already
applied is a no-op, so only what was never notified reaches a window. Memory stays at the
documents between the two cursors (about a listing page), whatever the corpus's size.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from groundswell.shared import metrics
from groundswell.shared.runs.index import IndexMissing, RunIndex
from groundswell.shared.runs.plan import CorpusPlanner
from groundswell.shared.streams.models import CREATED, REMOVED, S3Event, StreamRecord

if TYPE_CHECKING:
    from groundswell.shared.streams.service import Ingested, StreamService

BATCH = 500  # events applied per lock


def _rows_by_doc(index: RunIndex | None) -> Iterator[tuple[str, dict[str, list[Any]] | None]]:
    """Each document of the index with the listing entries its rows kept (None when a row
    kept none: a failed unit, or one written before rows kept them)."""
    if index is None:
        return
    doc, entries = None, {}  # type: ignore[var-annotated]
    for row in index.rows():
        if row["doc_id"] != doc:
            if doc is not None:
                yield doc, entries
            doc, entries = row["doc_id"], {}
        listing = row.get("listing")
        if entries is not None and isinstance(listing, dict):
            entries.update(listing)
        else:
            entries = None
    if doc is not None:
        yield doc, entries


def differences(
    listed: dict[str, list[Any]] | None, kept: dict[str, list[Any]] | None, in_run: bool
) -> Iterator[tuple[str, str, list[Any] | None, bool]]:
    """(action, key, entry, sure) for each file of one document listed unlike the run kept
    it. ``sure``: the run shows the difference (a row kept other entries, or the document has
    no row), not merely a row that kept none (a failed unit: then the stream's own state of
    the key decides, so a failing document is not checked again at every pass)."""
    listed = listed or {}
    sure = kept is not None or not in_run
    for key, entry in listed.items():
        if kept is None or kept.get(key) != entry:
            yield CREATED, key, entry, sure
    for key in kept or {}:
        if key not in listed:
            yield REMOVED, key, None, sure


def changed_files(
    service: StreamService, record: StreamRecord
) -> Iterator[tuple[str, str, list[Any] | None, bool]]:
    """What the listing shows changed against the corpus's latest run, document by document."""
    corpus = service.corpus(record)
    planner = CorpusPlanner(corpus, None, service.settings.list_page_size)
    latest = service.runs.runs.latest_run_of_corpus(record.corpus)
    index = None
    if latest:
        run = service.runs.get_or_none(latest)
        try:
            index = RunIndex(
                service.runs.store(run.output if run else service.runs.output_url), latest
            )
        except IndexMissing:
            index = None
    listed: dict[str, dict[str, list[Any]]] = {}  # documents listed, not yet met in the index

    def pull_past(doc_id: str | None) -> None:
        """List on until every listing has passed ``doc_id`` (to the end for None)."""
        while not planner.finished and (
            doc_id is None or not all(s.passed(doc_id) for s in planner.streams)
        ):
            for unit in planner.step(1):
                listed[unit.doc_id] = unit.listing or {}

    for doc_id, kept in _rows_by_doc(index):
        pull_past(doc_id)
        for earlier in sorted(d for d in listed if d < doc_id):  # listed, in no row: new
            yield from differences(listed.pop(earlier), None, False)
        yield from differences(listed.pop(doc_id, None), kept, True)
    pull_past(None)
    for doc_id in sorted(listed):
        yield from differences(listed[doc_id], None, False)


def reconcile(service: StreamService, record: StreamRecord, now: float | None = None) -> Ingested:
    """One pass: apply what the listing shows changed (no-ops for what was notified)."""
    from groundswell.shared.streams.service import Ingested

    now = time.time() if now is None else now
    out = Ingested()
    bucket = record.bucket
    batches: dict[bool, list[S3Event]] = {True: [], False: []}
    for action, key, entry, sure in changed_files(service, record):
        size, etag = (entry[0], str(entry[1])) if entry else (None, None)
        batch = batches[sure]
        batch.append(S3Event(action, bucket, record.prefix + key, size, etag, None, now))
        if len(batch) >= BATCH:
            out.add(service.apply(record, batch, reconciling=sure))
            batch.clear()
    for sure, batch in batches.items():
        if batch:
            out.add(service.apply(record, batch, reconciling=sure))
    out.events = out.applied + out.stale + out.ignored
    service.store.set_meta(record.id, reconciled_at=now)
    metrics.STREAM_EVENTS.labels("reconciled").inc(out.applied)
    return out
