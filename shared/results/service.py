"""Reading a run: receipt pages, one document's receipts, diffs.

Each costs what it shows, not what the run holds: a finished run is read through its
index (a manifest bisect and a piece), a running one through its segments from a
cursor, and a diff is written once in pieces and then paged.

This is the read side: it reads what a run wrote (its record, index, segments and
receipts, :data:`RUN_RECORDS`) and never imports what makes a run; where a running run's
receipts will be follows from its inputs, which the :class:`RunSource` provides.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from groundswell.shared.receipts import ReceiptError, open_receipt
from groundswell.shared.results.diff import build_diff, diff_page, labelled_rows, moved_items
from groundswell.shared.results.models import ADMIT, VERIFY, RunNotReady, RunsNotComparable
from groundswell.shared.runs.index import IndexMissing, RunIndex
from groundswell.shared.runs.layout import diff_prefix
from groundswell.shared.runs.models import RunRecord
from groundswell.shared.runs.segments import Segment, covering_segments
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.results.models import RunSource


def finished_record(service: RunSource, run_id: str, done: str) -> RunRecord:
    """The record of a run that has ended; :class:`RunNotReady` otherwise (``done``: what
    is done to it once it finishes, for the message)."""
    from groundswell.shared.runs.models import RunNotFound

    try:
        record = service.get(run_id)
    except RunNotFound:
        raise RunNotReady(f"no run {run_id}") from None
    if not record.terminal:
        raise RunNotReady(f"run {run_id} is {record.state}: it is {done} once it finishes")
    return record


def run_index(service: RunSource, record: RunRecord) -> RunIndex | None:
    """The index of a run, or None before it has one (a running run)."""
    try:
        return RunIndex(service.store(record.output), record.id)
    except IndexMissing:
        return None


def receipts_page(
    service: RunSource, record: RunRecord, cursor: dict[str, Any] | None, limit: int
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A page of index rows and the cursor of the next page (None at the end).

    A finished run pages its index in (doc_id, kind) order (cursor ``{"k": key}``); a run
    still going pages the batches recorded so far, in batch order (``{"s", "o"}``).
    """
    index = run_index(service, record) if record.terminal or not cursor or "k" in cursor else None
    if index is not None:
        after = tuple(cursor["k"]) if cursor and "k" in cursor else None
        rows, more = index.page(after, limit)  # type: ignore[arg-type]
        last = rows[-1] if rows else None
        return rows, ({"k": [last["doc_id"], last["kind"]]} if more and last else None)
    return _live_page(service.store(record.output), record.id, cursor or {}, limit)


def _live_page(
    store: ObjectStore, run_id: str, cursor: dict[str, Any], limit: int
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    # The cursor names the listing key before a group and how many of its rows were shown.
    start, skip = cursor.get("s") or None, int(cursor.get("o") or 0)
    out: list[dict[str, Any]] = []
    for last_key, rows in _group_rows(store, run_id, start):
        remaining = rows[skip:]
        if len(out) == limit and remaining:
            return out, {"s": start, "o": skip}
        room = limit - len(out)
        out += remaining[:room]
        if len(remaining) > room:
            return out, {"s": start, "o": skip + room}
        start, skip = last_key, 0
    return out, None


def _group_rows(
    store: ObjectStore, run_id: str, start_after: str | None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    from groundswell.shared.runs.layout import segment_key

    for group in covering_segments(store, run_id, start_after=start_after):
        rows: list[dict[str, Any]] = []
        for batch in group.batches:
            key = segment_key(run_id, batch)
            try:
                rows += Segment.loads(store.get(key), key).rows
            except KeyError:
                continue
        yield group.last_key, rows


def document_receipts(service: RunSource, record: RunRecord, doc_id: str) -> dict[str, Any]:
    """The verify and admit units of one document, with their receipts."""
    store = service.store(record.output)
    units: dict[str, dict[str, Any]] = {}
    index = run_index(service, record)
    if index is not None:
        for row in index.document(doc_id):
            units[row["kind"]] = row
    elif not record.terminal:
        # Still running: where each receipt is (or will be) follows from the inputs alone.
        runner = service.inputs(record).runner
        for kind in (VERIFY, ADMIT):
            key = runner.locate(kind, doc_id)
            if key is not None and store.exists(key):
                units[kind] = {"unit": f"{kind}/{doc_id}", "kind": kind, "receipt": key}
    receipts: dict[str, dict[str, Any] | None] = {VERIFY: None, ADMIT: None}
    for kind, row in units.items():
        key = row.get("receipt")
        if key:
            try:
                receipts[kind] = open_receipt(store.get(key), key)
            except (KeyError, ReceiptError) as exc:
                raise ReceiptError(f"receipt {key}: {exc}") from None
    return {"run_id": record.id, "doc_id": doc_id, "units": units, **receipts}


def diff(
    service: RunSource, record_a: RunRecord, record_b: RunRecord, offset: int, limit: int
) -> dict[str, Any]:
    """Run B against run A: rates, totals and a page of what moved (built once, then paged)."""
    from groundswell.shared.runs.models import RunNotFinished

    if record_a.corpus != record_b.corpus:
        raise RunsNotComparable(
            f"runs {record_a.id} and {record_b.id} are of different corpora "
            f"({record_a.corpus}, {record_b.corpus}): a diff compares two runs of one corpus"
        )
    store_a = service.store(record_a.output)
    prefix = diff_prefix(record_a.id, record_b.id)
    try:
        manifest = json.loads(store_a.get(prefix + "manifest.json"))
    except KeyError:
        summary_a, summary_b = service.summary(record_a.id), service.summary(record_b.id)
        index_a, index_b = run_index(service, record_a), run_index(service, record_b)
        if summary_a is None or summary_b is None or index_a is None or index_b is None:
            unfinished = record_a.id if summary_a is None or index_a is None else record_b.id
            raise RunNotFinished(
                f"run {unfinished} has not finished: a diff needs two summaries"
            ) from None
        stores = [store_a, service.store(record_b.output)]

        def load(receipt_key: str) -> dict[str, Any] | None:
            for store in stores:
                try:
                    return open_receipt(store.get(receipt_key), receipt_key)
                except KeyError:
                    continue
            return None

        items = moved_items(index_a.rows(), index_b.rows(), load)
        manifest = build_diff(store_a, prefix, summary_a, summary_b, items)
    out = {k: v for k, v in manifest.items() if k != "pieces"}
    if "labelled" not in out:  # a diff written before it counted labelled candidates
        summaries = service.summary(record_a.id), service.summary(record_b.id)
        out["labelled"] = labelled_rows(*(s or {} for s in summaries))
    out["moved"] = diff_page(store_a, manifest, offset, limit)
    return out


class RunResults:
    """The read side of runs for the API and the CLI: each method names runs by id."""

    def __init__(self, source: RunSource) -> None:
        self.source = source

    def receipts_page(
        self, run_id: str, cursor: dict[str, Any] | None, limit: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        return receipts_page(self.source, self.source.get(run_id), cursor, limit)

    def document_receipts(self, run_id: str, doc_id: str) -> dict[str, Any]:
        return document_receipts(self.source, self.source.get(run_id), doc_id)

    def diff(self, run_a: str, run_b: str, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        return diff(self.source, self.source.get(run_a), self.source.get(run_b), offset, limit)
