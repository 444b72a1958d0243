"""Notifications into windows, and each window into a run of the whole corpus.

An event is applied once: per corpus key the stream keeps the newest event it applied
(storage), and an event that is not newer (its ``sequencer`` not after the kept one, or,
without sequencers, the same object state) changes nothing: duplicates and late older
events are no-ops. An applied event marks its document *pending*. A tick moves a pending
document to *ready* once its inputs are complete (its document and each of
``stream_wait_for``: present, or removed by an event of their own), or once it has waited
``stream_grace_seconds`` (then it is checked with what is there, and the window says what
was missing). A window closes at ``stream_window_documents`` ready documents or
``stream_window_seconds`` after its first; it is a ``run --changed`` of its documents
against the corpus's latest run, so the run covers the whole corpus with the other rows
reused unread and is finalized (index, summary, Merkle root) like any run. Windows run one
after another: the next is compared with the run of the one before.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from groundswell.shared import metrics
from groundswell.shared.corpus import (
    CANDIDATES,
    CLAIMS,
    DOCUMENTS,
    LABELS,
    InputError,
    candidates_key,
    claims_key,
    doc_id_of,
    document_key,
)
from groundswell.shared.runs.models import RunSpec, iso, utcnow
from groundswell.shared.runs.service import RunService
from groundswell.shared.storage import ObjectStore
from groundswell.shared.streams.models import (
    CREATED,
    S3Event,
    StreamRecord,
    StreamSpec,
    Window,
    parse_notification,
    sequencer_newer,
    stream_id,
)
from groundswell.shared.streams.store import STREAMS, StreamStore

log = logging.getLogger("groundswell.streams")

INPUTS = (DOCUMENTS, CLAIMS, CANDIDATES, LABELS)
WAITED = {"claims": claims_key, "candidates": candidates_key}
MAX_INCOMPLETE = 100  # listed in a window record; the rest counted


@dataclass
class Ingested:
    """What one notification did."""

    events: int = 0
    applied: int = 0
    stale: int = 0  # duplicates and late older events: no-ops
    ignored: int = 0  # other event names, other buckets or prefixes, files of no input
    errors: list[InputError] = field(default_factory=list)

    def add(self, other: Ingested) -> None:
        self.events += other.events
        self.applied += other.applied
        self.stale += other.stale
        self.ignored += other.ignored
        self.errors += other.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "applied": self.applied,
            "stale": self.stale,
            "ignored": self.ignored,
            "errors": [e.as_dict() for e in self.errors[:MAX_INCOMPLETE]],
            "errors_total": len(self.errors),
        }


def newer(event: S3Event, state: dict[str, Any] | None) -> bool:
    """Whether ``event`` is after what the stream kept of its key: by sequencer when both
    have one, else by the object state it describes (a repeat of the same state is not)."""
    if state is None:
        return True
    if event.sequencer and state.get("sequencer"):
        return sequencer_newer(event.sequencer, state["sequencer"])
    present = event.action == CREATED
    return (present, event.etag if present else None) != (state["present"], state.get("etag"))


def input_doc(key: str) -> str | None:
    """The document a corpus key is an input of (documents/, claims/, candidates/, labels/)."""
    for prefix in INPUTS:
        doc_id = doc_id_of(key, prefix)
        if doc_id is not None:
            return doc_id
    return None


class TooManyStreams(RuntimeError):
    """GROUNDSWELL_MAX_STREAMS standing streams exist: a new one is refused."""


class StreamService:
    def __init__(self, runs: RunService) -> None:
        self.runs = runs
        self.settings = runs.settings
        self.store = StreamStore(runs.runs.r, runs.store(runs.output_url))
        self._corpora: dict[str, ObjectStore] = {}

    def corpus(self, record: StreamRecord) -> ObjectStore:
        if record.corpus not in self._corpora:
            self._corpora[record.corpus] = self.runs.store(record.corpus)
        return self._corpora[record.corpus]

    # -- streams ----------------------------------------------------------------------

    def follow(self, spec: StreamSpec, created_by: str | None = None) -> tuple[StreamRecord, bool]:
        """The standing stream of (corpus, policy version), made if there is none."""
        ref = self.runs.policies.resolve(spec.policy).ref
        sid = stream_id(spec.corpus, ref)
        existing = self.store.get(sid)
        if existing is not None:
            self.store.r.sadd(STREAMS, sid)
            return existing, False
        if len(self.store.ids()) >= self.settings.max_streams:
            raise TooManyStreams(
                f"{self.settings.max_streams} streams follow corpora already "
                "(GROUNDSWELL_MAX_STREAMS): this one was not made"
            )
        record = StreamRecord(
            id=sid,
            corpus=spec.corpus,
            policy=ref,
            created_at=iso(utcnow()) or "",
            created_by=created_by,
        )
        created = self.store.save(record)
        return (record if created else self.store.get(sid) or record), created

    def get(self, sid: str) -> StreamRecord | None:
        return self.store.get(sid) if sid.startswith("st-") and len(sid) == 19 else None

    def records(self) -> list[StreamRecord]:
        return [r for r in (self.store.get(sid) for sid in self.store.ids()) if r is not None]

    # -- events -----------------------------------------------------------------------

    def ingest(
        self, body: bytes | str | dict[str, Any], name: str, only: StreamRecord | None = None
    ) -> Ingested:
        """Apply one notification to the streams its objects belong to (``only``: to that
        stream alone); a record that cannot be read fails only itself."""
        now = time.time()
        events, errors, other = parse_notification(body, name, now)
        out = Ingested(events=len(events), ignored=other, errors=errors)
        for error in errors:
            metrics.bad_record("stream_events", name, ValueError(str(error)))
        streams = [only] if only is not None else self.records()
        for record in streams:
            mine = [e for e in events if record.relative(e.bucket, e.key) is not None]
            if mine:
                out.add(self.apply(record, mine))
        matched = {
            (e.bucket, e.key)
            for e in events
            for r in streams
            if r.relative(e.bucket, e.key) is not None
        }
        out.ignored += sum(1 for e in events if (e.bucket, e.key) not in matched)
        metrics.STREAM_EVENTS.labels("applied").inc(out.applied)
        metrics.STREAM_EVENTS.labels("stale").inc(out.stale)
        metrics.STREAM_EVENTS.labels("ignored").inc(out.ignored)
        metrics.STREAM_EVENTS.labels("error").inc(len(out.errors))
        return out

    def apply(
        self, record: StreamRecord, events: list[S3Event], reconciling: bool = False
    ) -> Ingested:
        """Apply events of this stream's objects under its lock (one writer of its state).

        Documents are marked pending before their keys' states are written: a crash between
        the two leaves a document checked once more, never a key known and its document
        forgotten. ``reconciling``: the events come from the listing, which differs from the
        latest run; one whose state the stream already has marks its document pending again
        when Redis no longer tracks it (Redis was lost after the event was applied)."""
        out = Ingested()
        with self.store.lock(record.id):
            pending: dict[str, dict[str, Any]] = {}
            states: dict[str, dict[str, Any]] = {}  # written once the documents are pending
            for event in events:
                key = record.relative(event.bucket, event.key)
                assert key is not None
                doc_id = input_doc(key)
                if doc_id is None:
                    out.ignored += 1
                    continue
                state = states.get(key) or self.store.key_state(record.id, key)
                if not newer(event, state):
                    if not (
                        reconciling and doc_id not in pending and self._untracked(record, doc_id)
                    ):
                        out.stale += 1
                        continue
                else:
                    present = event.action == CREATED
                    states[key] = {
                        "key": key,
                        "sequencer": event.sequencer,
                        "present": present,
                        "etag": event.etag if present else None,
                        "size": event.size if present else None,
                        "time": event.time,
                    }
                entry = pending.get(doc_id) or self.store.doc(record.id, "pending", doc_id) or {}
                entry["first"] = min(entry.get("first", event.time), event.time)
                if key.startswith(DOCUMENTS):
                    entry["document"] = key
                pending[doc_id] = entry
                out.applied += 1
            self.store.put_docs(record.id, "pending", pending)
            for state in states.values():
                self.store.put_key_state(record.id, state)
            if pending:
                oldest = min(e["first"] for e in pending.values())
                known = self.store.meta(record.id).get("oldest")
                if known is None or oldest < float(known):
                    self.store.set_meta(record.id, oldest=oldest)
            self.store.count(record.id, "events", out.applied)
        return out

    def _untracked(self, record: StreamRecord, doc_id: str) -> bool:
        """Whether no window holds the document nor will: not pending, ready or in flight."""
        return all(
            self.store.doc(record.id, which, doc_id) is None
            for which in ("pending", "ready", "inflight")
        )

    # -- windows ----------------------------------------------------------------------

    def tick(self, sid: str, now: float | None = None) -> dict[str, Any]:
        """Finish the running window if its run ended, move complete (or waited-out)
        documents to ready, and close the next window when it is full or old enough."""
        now = time.time() if now is None else now
        record = self.store.get(sid)
        if record is None:
            raise LookupError(f"no stream {sid}")
        with self.store.lock(sid):
            meta = self.store.meta(sid)
            if meta.get("run"):
                self._finish_window(record, meta, now)
                meta = self.store.meta(sid)
            self._promote(record, now)
            if not meta.get("run"):
                self._close_window(record, now)
            self._note_oldest(sid)
        return self.status(sid)

    def _finish_window(self, record: StreamRecord, meta: dict[str, str], now: float) -> None:
        run = self.runs.get_or_none(meta["run"])
        if run is not None and not run.terminal:
            return
        number = int(meta["window"])
        window = self.store.window(record.id, number)
        if window is not None:
            summary = self.runs.summary(run.id) if run is not None else None
            update: dict[str, Any] = {"state": run.state if run is not None else "lost"}
            if summary is not None:
                update["merkle_root"] = summary["index"]["merkle_root"]
                update["units"] = summary["index"]["units"]
            window = window.model_copy(update=update)
            self.store.put_window(window)
        self.store.drop_docs(record.id, "inflight")
        self.store.clear_meta(record.id, "run")
        self.store.count(record.id, "windows_finished")
        metrics.STREAM_WINDOWS.labels(window.state if window is not None else "lost").inc()

    def _present(self, record: StreamRecord, key: str) -> bool | None:
        """True when the key is there, False when an event removed it, None when it was
        never seen (not notified, and not in the corpus)."""
        state = self.store.key_state(record.id, key)
        if state is not None:
            return bool(state["present"])
        return True if self.corpus(record).head(key) is not None else None

    def _promote(self, record: StreamRecord, now: float) -> None:
        grace = self.settings.stream_grace_seconds
        ready: dict[str, dict[str, Any]] = {}
        for doc_id, entry in self.store.docs(record.id, "pending").items():
            keys = [entry.get("document") or document_key(doc_id)]
            keys += [WAITED[name](doc_id) for name in self.settings.stream_wait_for]
            missing = [k for k in keys if self._present(record, k) is None]
            document_removed = self._present(record, keys[0]) is False
            if missing and not document_removed and now - entry["first"] < grace:
                continue  # its other inputs may still be on their way
            ready[doc_id] = {
                "first": entry["first"],
                "ready_at": now,
                "missing": [] if document_removed else missing,
            }
        if ready:
            self.store.put_docs(record.id, "ready", ready)
            self.store.drop_docs(record.id, "pending", list(ready))

    def _close_window(self, record: StreamRecord, now: float) -> None:
        ready = self.store.docs(record.id, "ready")
        if not ready:
            return
        opened = min(e["ready_at"] for e in ready.values())
        full = len(ready) >= self.settings.stream_window_documents
        if not full and now - opened < self.settings.stream_window_seconds:
            return
        docs = sorted(ready, key=lambda d: (ready[d]["ready_at"], d))
        docs = sorted(docs[: self.settings.stream_window_documents])
        known = self.store.meta(record.id).get("window")
        # Numbered on from Redis; from the windows in storage after a loss of Redis.
        number = (int(known) if known else self.store.last_window_number(record.id)) + 1
        # The first window compares every document by listing (whatever changed before the
        # stream began); later ones check only their documents.
        changed = [document_key(d) for d in docs] if number > 0 else None
        spec = RunSpec(
            corpus=record.corpus,
            policy=record.policy,
            changed=changed,
            changed_name=f"stream {record.id} window {number}",
        )
        run, _ = self.runs.submit(spec)
        incomplete = [
            {
                "doc_id": d,
                "missing": ready[d]["missing"],
                "waited": round(now - ready[d]["first"], 3),
            }
            for d in docs
            if ready[d]["missing"]
        ]
        window = Window(
            stream=record.id,
            number=number,
            run_id=run.id,
            documents=len(docs),
            changed=changed is not None,
            opened_at=opened,
            closed_at=now,
            incomplete=incomplete[:MAX_INCOMPLETE],
            incomplete_total=len(incomplete),
        )
        self.store.put_window(window)
        self.store.put_docs(record.id, "inflight", {d: ready[d] for d in docs})
        self.store.drop_docs(record.id, "ready", docs)
        self.store.set_meta(record.id, window=number, run=run.id)
        if incomplete:
            log.warning(
                "stream %s window %d: %d documents checked without all their inputs after "
                "%.0f s (first: %s lacked %s)",
                record.id,
                number,
                len(incomplete),
                self.settings.stream_grace_seconds,
                incomplete[0]["doc_id"],
                ", ".join(incomplete[0]["missing"]),
            )
        log.info(
            "stream %s window %d: run %s of %d documents", record.id, number, run.id, len(docs)
        )

    def _note_oldest(self, sid: str) -> None:
        """The oldest unchecked event's time (pending, ready or in the running window)."""
        firsts = [
            e["first"]
            for which in ("pending", "ready", "inflight")
            for e in self.store.docs(sid, which).values()
        ]
        if firsts:
            self.store.set_meta(sid, oldest=min(firsts))
        else:
            self.store.clear_meta(sid, "oldest")

    def status(self, sid: str, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        meta = self.store.meta(sid)
        oldest = meta.get("oldest")
        return {
            **self.store.sizes(sid),
            "events": int(meta.get("events", 0)),
            "windows": int(meta.get("windows_finished", 0)),
            "window": int(meta["window"]) if "window" in meta else None,
            "run_id": meta.get("run"),
            "lag_seconds": max(0.0, now - float(oldest)) if oldest else 0.0,
            "reconciled_at": float(meta["reconciled_at"]) if "reconciled_at" in meta else None,
        }

    def lags(self, now: float | None = None) -> dict[tuple[str, str], float]:
        """Per (corpus, policy version), the age of the oldest unchecked event (0: none)."""
        now = time.time() if now is None else now
        out = {}
        for record in self.records():
            oldest = self.store.meta(record.id).get("oldest")
            out[(record.corpus, record.policy)] = max(0.0, now - float(oldest)) if oldest else 0.0
        return out

    def windows(self, sid: str) -> list[Window]:
        last = self.store.last_window_number(sid)
        return [w for w in (self.store.window(sid, n) for n in range(last + 1)) if w is not None]

    # -- reconciliation and the periodic pass -----------------------------------------

    def reconcile(self, sid: str, now: float | None = None) -> Ingested:
        """List the corpus and apply what no notification said (shared/streams/reconcile.py)."""
        from groundswell.shared.streams.reconcile import reconcile

        record = self.store.get(sid)
        if record is None:
            raise LookupError(f"no stream {sid}")
        return reconcile(self, record, now)

    def periodic(
        self, now: float | None = None, only: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """Every stream's tick (``only``: that stream's), and its reconciliation when one is
        due: what the beat task and ``groundswell follow`` run. A stream that fails is
        logged; the others go on."""
        now = time.time() if now is None else now
        out = {}
        for sid in [only] if only else self.store.ids():
            try:
                done = self.store.meta(sid).get("reconciled_at")
                if done is None or now - float(done) >= self.settings.stream_reconcile_seconds:
                    self.reconcile(sid, now)
                out[sid] = self.tick(sid, now)
            except Exception:
                log.exception("stream %s: its periodic pass failed", sid)
        return out
