"""Run operations: submit, plan, execute batches, finalize, reconcile, cancel, and reading runs.

Framework-free: Celery tasks, the API and the CLI call these with an ``enqueue`` callback
that sends a task by name, so the core never imports Celery and tasks never import each
other. Each operation lives in its own module (plan, execute, finish, recover, read);
this class holds what they share and is the one door to them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from groundswell.shared import __version__, metrics, tracing
from groundswell.shared.policies import PolicyRegistry, PolicyVersion
from groundswell.shared.runs import kinds
from groundswell.shared.runs.models import (
    ChangedListMissing,
    RunNotFound,
    RunRecord,
    RunSpec,
    iso,
    new_run_id,
    utcnow,
)
from groundswell.shared.runs.schedules import ScheduleStore, UnreadableSchedule
from groundswell.shared.runs.state import Progress, RunStore, StorageOnly
from groundswell.shared.settings import ApiKey, Settings
from groundswell.shared.storage import ObjectStore, StorageRefused, open_store

log = logging.getLogger("groundswell.runs")

# Task names of the run's own steps, shared by the enqueue callback and the Celery task
# registry; each unit kind's batches go by the kind's name (runs/kinds.py).
PLAN, FINALIZE, SCHEDULE, RECONCILE = "plan", "finalize", "schedule", "reconcile"
# What a finished run sends out (never on the path of a unit): its Parquet export, its
# hooks' deliveries (planned, then each sent and retried on its own).
EXPORT = "export"
HOOKS = "hooks"
DELIVER = "deliver"
LINEAGE = "lineage"  # an OpenLineage event: START at submit, COMPLETE or FAIL at the end
STREAMS = "streams"  # the beat's pass over followed corpora (shared/streams): ticks, reconciles
# The run's own steps, all on the control queue.
STEPS = (PLAN, FINALIZE, RECONCILE, SCHEDULE, EXPORT, HOOKS, DELIVER, LINEAGE, STREAMS)
# A helper of a read unit: recognises pages of a long scan beside it, on the reading kind's
# queue, outside the run's accounting (runs/reading.py).
READ_PAGES = "read_pages"


def queues() -> tuple[str, ...]:
    """The queues workers consume, in pipeline order: each kind's, then ``control``."""
    return kinds.queues()


def queue_of(task: str) -> str:
    """The queue of a task: a step of the run's is on ``control``, a kind's on its own
    (workers/app.py routes by it; a run's waiting_for reads it)."""
    if task == READ_PAGES:
        return next(k.queue for k in kinds.all_kinds() if k.reading)
    return kinds.CONTROL if task in STEPS else kinds.get(task).queue


Enqueue = Callable[[str, list[Any]], None]


class RunUnreadable(RuntimeError):
    """A run whose stored record (in Redis, or in storage when Redis lost it) cannot be read:
    logged with its id and counted in groundswell_bad_records_total{collection="runs"}."""

    def __init__(self, run_id: str, error: Exception) -> None:
        self.run_id = run_id
        super().__init__(
            f"run {run_id}'s record cannot be read: {metrics.bad_record('runs', run_id, error)}"
        )


def engines() -> dict[str, Any]:
    """This release and the engine revisions of its unit kinds, as a run records them."""
    return {"groundswell": __version__, **kinds.engines()}


class RunService:
    def __init__(self, settings: Settings, runs: RunStore | StorageOnly, enqueue: Enqueue) -> None:
        self.settings = settings
        self.runs = runs
        self.enqueue = enqueue
        self._slots: tuple[float, int] | None = None
        self._consumed: tuple[float, set[str] | None] | None = None

    def store(self, url: str) -> ObjectStore:
        return open_store(url, self.settings)

    def corpus_store(self, record: RunRecord) -> ObjectStore:
        """The run's corpus as its units read it: the store, or the producer files in it
        read in place (``record.format`` or its corpus.yaml). InputFileError: a bad
        corpus.yaml."""
        from groundswell.shared.formats.source import open_corpus
        from groundswell.shared.runs.units import current_listing

        return open_corpus(
            self.store(record.corpus),
            record.format,
            listing=current_listing,
            max_bytes=self.settings.max_document_bytes,
            page_size=self.settings.list_page_size,
        )

    @property
    def output_url(self) -> str:
        output = self.settings.storage_url
        # Workers may run elsewhere in the tree: a local output is always absolute.
        return output if "://" in output else os.path.abspath(output)

    @cached_property
    def policies(self) -> PolicyRegistry:
        """The policy registry of this deployment's output store, with the built-ins in it."""
        registry = PolicyRegistry(self.store(self.settings.storage_url))
        registry.ensure_builtins()
        return registry

    def worker_slots(self) -> int:
        """Worker pool processes alive now (they announce themselves), read every 10 s."""
        now = time.monotonic()
        if self._slots is None or now - self._slots[0] > 10:
            self._slots = (now, self.runs.worker_slots())
        return self._slots[1]

    def consumed_queues(self) -> set[str] | None:
        """The queues live workers consume (they announce them), read every 5 s; None when
        a live worker did not say which (an older release): then none counts as unconsumed."""
        now = time.monotonic()
        if self._consumed is None or now - self._consumed[0] > 5:
            self._consumed = (now, self.runs.consumed_queues())
        return self._consumed[1]

    def waiting_for(self, run_id: str) -> dict[str, str] | None:
        """``{"queue", "since"}`` when the run has work on a queue no live worker consumes."""
        from groundswell.shared.runs.waiting import waiting_for

        return waiting_for(self, run_id)

    def window(self) -> int:
        """How many batches a run may have pending: the setting, or 8 per worker process
        (at least 16): enough that no worker waits for planning, few enough to stay small."""
        if self.settings.max_inflight_batches:
            return self.settings.max_inflight_batches
        return max(16, 8 * self.worker_slots())

    def queued_lease_until(self) -> float:
        """A sent batch not started within this long is presumed lost and sent again."""
        return time.time() + self.settings.queued_lease_seconds

    # -- runs -------------------------------------------------------------------------

    def submit(
        self,
        spec: RunSpec,
        idempotency_key: str | None = None,
        schedule: str | None = None,
        allowed_under: str | None = None,
    ) -> tuple[RunRecord, bool]:
        """Record a run and enqueue its planning. Returns (run, created). ``allowed_under``:
        the allowed root the API checked the corpus under, checked again by the plan task."""
        from groundswell.shared.runs.finish import write_record
        from groundswell.shared.runs.index import MAX_SUMMARY_ERRORS
        from groundswell.shared.runs.layout import changed_key
        from groundswell.shared.runs.recover import sync_catalog

        sync_catalog(self)
        policy = self.policies.resolve(spec.policy)
        key_hash = hashlib.sha256(idempotency_key.encode()).hexdigest() if idempotency_key else None
        changed, changed_errors = self.changed_documents(spec)
        record = RunRecord(
            id=new_run_id(),
            corpus=spec.corpus,
            output=self.output_url,
            policy=policy.identity(),
            engines=engines(),
            created_at=iso(utcnow()),
            idempotency_key_sha256=key_hash,
            only=spec.only,
            dry_run=spec.dry_run,
            ledger=spec.ledger,
            verify_inputs=spec.verify_inputs,
            format=spec.format,
            changed=len(changed) if changed is not None else None,
            # The first lines naming no corpus file, and how many: the summary lists as many.
            changed_errors=changed_errors[:MAX_SUMMARY_ERRORS] if changed_errors else None,
            changed_errors_total=len(changed_errors) if changed_errors else None,
            previous_run=self.runs.latest_run_of_corpus(spec.corpus),
            schedule=schedule,
            allowed_under=allowed_under,
        )
        stored = self.runs.create(record, key_hash)
        if stored.id != record.id:
            return stored, False
        output = self.store(record.output)
        if changed is not None:  # before planning: its batches read the list
            output.put(changed_key(record.id), json.dumps(changed).encode())
        write_record(output, record)
        with tracing.span("groundswell.submit", run_id=record.id, corpus=record.corpus):
            self.enqueue(PLAN, [record.id])
        if self.settings.openlineage_url and not record.dry_run:
            self.enqueue(LINEAGE, [record.id, "START"])
        return record, True

    def changed_documents(
        self, spec: RunSpec
    ) -> tuple[list[str] | None, list[dict[str, Any]] | None]:
        """A --changed run's documents and the lines naming no corpus file, read once at
        submission (a corpus key names a file of keys); (None, None) for any other run."""
        from groundswell.shared.corpus import InputFileError, RecordSource, changed_documents
        from groundswell.shared.formats.source import open_corpus

        if spec.changed is None:
            return None, None
        source_file = None
        try:
            corpus = open_corpus(self.store(spec.corpus), spec.format)
        except InputFileError:
            corpus = None  # a bad corpus.yaml: the run fails planning, saying why
        if isinstance(corpus, RecordSource):
            source_file = corpus.source_file  # a producer file names all of its records
        if isinstance(spec.changed, str):
            name = spec.changed_name or spec.changed
            try:
                text = self.store(spec.corpus).get(spec.changed).decode("utf-8", "replace")
            except (KeyError, ValueError, StorageRefused) as exc:
                raise ChangedListMissing(f"{name}: the list of changed keys: {exc}") from None
            lines = text.splitlines()
        else:
            name, lines = spec.changed_name or "changed", spec.changed
        doc_ids, errors = changed_documents(lines, name, spec.corpus, source_file)
        return doc_ids, [e.as_dict() for e in errors]

    def get_or_none(self, run_id: str) -> RunRecord | None:
        """From Redis, else from storage (a finished run whose state expired, or a lost Redis).
        A record that is there but cannot be read raises ``RunUnreadable`` (logged, counted)."""
        if not run_id:
            return None
        from groundswell.shared.runs.layout import run_json

        try:
            record = self.runs.get(run_id)
            if record is not None:
                return record
            try:
                data = self.store(self.settings.storage_url).get(run_json(run_id))
            except (KeyError, ValueError):
                return None
            return RunRecord.model_validate_json(data)
        except ValidationError as exc:
            raise RunUnreadable(run_id, exc) from None

    def get(self, run_id: str) -> RunRecord:
        record = self.get_or_none(run_id)
        if record is None:
            raise RunNotFound(run_id)
        return record

    def list_runs(
        self, offset: int = 0, limit: int = 50, key: ApiKey | None = None
    ) -> tuple[list[RunRecord], int]:
        """Newest first (the list is rebuilt from storage after a loss of Redis); for a
        team's key, the runs of its corpora only."""
        from groundswell.shared.runs.recover import sync_catalog

        sync_catalog(self)
        sees = key.sees if key is not None and key.limited else None
        ids, total = self.runs.list(offset, limit, sees)
        records = [r for r in (self._listed(i) for i in ids) if r is not None]
        return records, total

    def _listed(self, run_id: str) -> RunRecord | None:
        """A listed run, None if it is gone or its record unreadable (logged, counted):
        one bad record hides no other run."""
        try:
            return self.get_or_none(run_id)
        except RunUnreadable:
            return None

    def cancel(self, run_id: str) -> RunRecord:
        from groundswell.shared.runs.finish import write_record

        record = self.get(run_id)
        if record.terminal:
            return record
        updated = self.runs.update(run_id, state="cancelled", finished_at=iso(utcnow()))
        if updated is None:  # only in storage (Redis lost it): cancel there
            updated = record.model_copy(update={"state": "cancelled", "finished_at": iso(utcnow())})
        write_record(self.store(updated.output), updated)
        self.runs.finish(updated)
        metrics.RUNS_FINISHED.labels("cancelled").inc()
        return updated

    def progress(self, run_id: str) -> Progress:
        live = self.runs.progress(run_id)
        record = self.get_or_none(run_id)
        if live is not None and record is not None and not record.terminal:
            return live
        summary = self.summary(run_id) if record is not None else None
        if summary is not None:
            counters = {
                f"units.{kind}.{status}": n
                for kind, row in summary.get("units", {}).items()
                for status, n in row.items()
                if status != "done"
            }
            units = summary["index"]["units"]
            return Progress(units, units, summary.get("failed_units", 0), True, counters)
        if live is not None:
            return live
        return Progress(0, 0, 0, False, {})

    def finished(self, record: RunRecord) -> None:
        """A run just ended: send what goes out of it (the Parquet export when
        GROUNDSWELL_EXPORT_PARQUET is set; its hooks' deliveries, planned by a task of their
        own). A send that fails is logged; the run stays ended."""
        if record.dry_run:
            return
        try:
            if self.settings.export_parquet and record.state in ("succeeded", "partially_failed"):
                self.enqueue(EXPORT, [record.id])
            if self.settings.openlineage_url and record.state != "cancelled":
                state = "FAIL" if record.state == "failed" else "COMPLETE"
                self.enqueue(LINEAGE, [record.id, state])
            if self.settings.hooks or self._keys_have_hooks():
                self.enqueue(HOOKS, [record.id])
        except Exception:
            log.exception("run %s: what goes out of it could not be sent", record.id)

    def _keys_have_hooks(self) -> bool:
        """Whether an API key added a hook (shared.hooks keeps them under ``hooks/``)."""
        pages = self.store(self.output_url).list_pages("hooks/", page_size=1)
        return any(page for page in pages)

    def summary(self, run_id: str) -> dict[str, Any] | None:
        from groundswell.shared.runs.finish import read_summary

        record = self.get(run_id)
        return read_summary(self.store(record.output), run_id)

    # -- the work ---------------------------------------------------------------------

    def plan(self, run_id: str) -> bool:
        from groundswell.shared.runs.plan import plan_run

        return plan_run(self, run_id)

    def execute(self, run_id: str, batch: str, token: str, node: str = "") -> str:
        from groundswell.shared.runs.execute import run_batch

        return run_batch(self, run_id, batch, token, node)

    def read_pages(self, run_id: str, file: str, source_sha256: str, pages: str) -> str:
        """A read unit's helper: recognise and store ``pages`` (``"17-32"``) of its source
        file; what happened (runs/reading.py ``help_read``), ``gone`` for a run gone or
        ended."""
        from groundswell.shared.read import parse_pages
        from groundswell.shared.runs.execute import context
        from groundswell.shared.runs.reading import help_read

        record = self.get_or_none(run_id)
        if record is None or record.terminal:
            return "gone"
        ctx = context(self, record)  # built once per process and run
        return help_read(
            ctx.output,
            lambda: ctx.runner.get_input(file),
            file,
            source_sha256,
            parse_pages(pages),
        )

    def release(self, run_id: str, batch: str, token: str, why: str, *, retry: bool) -> None:
        """A delivery ends without recording: a retry is not a death; a failure is, and is
        sent again at once by the next reconcile."""
        until = self.queued_lease_until() if retry else 0.0
        self.runs.release(run_id, batch, token, lease_until=until, why=why, uncount=retry)

    def finalize(self, run_id: str) -> dict[str, Any] | None:
        from groundswell.shared.runs.finish import finalize_run

        return finalize_run(self, run_id)

    def reconcile(self, now: float | None = None) -> dict[str, int]:
        from groundswell.shared.runs.recover import reconcile

        return reconcile(self, now)

    # -- what a reader of a run asks of it --------------------------------------------

    def inputs(self, record: RunRecord) -> Any:
        """The run's inputs as its units see them (corpus, policy version, runner): where a
        running run's receipts will be, and a document's stored reading, for the read side
        (:class:`shared.results.models.RunSource`)."""
        from groundswell.shared.runs.execute import context

        return context(self, record)

    def known_corpus(self, corpus: str) -> str:
        """The corpus as runs record it (a folder by its absolute path, links resolved)."""
        from groundswell.shared.runs.corpora import known_corpus

        return known_corpus(self, corpus)

    def corpus_runs(self, corpus: str, most: int) -> list[RunRecord]:
        """The corpus's latest ``most`` runs, newest first."""
        from groundswell.shared.runs.corpora import corpus_runs

        return corpus_runs(self, corpus, most)

    # -- policies and schedules -------------------------------------------------------

    @cached_property
    def schedules(self) -> ScheduleStore:
        return ScheduleStore(self.runs.r)

    def publish_policy(
        self, document: dict[str, Any], version: int | None = None
    ) -> tuple[PolicyVersion, bool]:
        """Publish a policy version; schedules that follow NAME@latest fire under it now."""
        policy, created = self.policies.publish(document, version)
        if created and self.runs.r is not None:  # schedules live in Redis
            for schedule in self.schedules.following(policy.name):
                self.enqueue(SCHEDULE, [schedule.id, f"publish:{policy.ref}"])
        return policy, created

    def fire_schedule(self, schedule_id: str, trigger: str = "tick") -> RunRecord | None:
        """Start the run of a schedule (None if it is gone, unreadable, still running, or
        already fired)."""
        try:
            schedule = self.schedules.get(schedule_id)
        except UnreadableSchedule:  # logged and counted; kept until someone removes it
            metrics.SCHEDULE_FIRES.labels("unreadable").inc()
            return None
        if schedule is None:
            return None
        # An API-made schedule is checked now, not only when it was added (the allow-list may
        # have changed since); its root goes with the run, which the plan task checks again.
        root = self.settings.allowed_root(schedule.corpus) if schedule.origin == "api" else None
        if schedule.origin == "api" and root is None:
            error = (
                f"corpus {schedule.corpus} is not under GROUNDSWELL_ALLOWED_CORPORA now: "
                f"{trigger} started no run"
            )
            log.warning("schedule %s: %s", schedule_id, error)
            self.schedules.refused(schedule_id, error)
            metrics.SCHEDULE_FIRES.labels("refused").inc()
            return None
        if trigger == "tick" and schedule.last_run_id:
            last = self.get_or_none(schedule.last_run_id)
            if last is not None and not last.terminal:
                log.info("schedule %s: run %s still going, tick skipped", schedule_id, last.id)
                metrics.SCHEDULE_FIRES.labels("skipped").inc()
                return None
        if not self.schedules.claim_fire(schedule, trigger):
            metrics.SCHEDULE_FIRES.labels("skipped").inc()
            return None
        spec = RunSpec(
            corpus=schedule.corpus,
            policy=schedule.policy,
            only=schedule.only,
            ledger=schedule.ledger,
        )
        record, _ = self.submit(spec, schedule=schedule.id, allowed_under=root)
        self.schedules.fired(schedule.id, record.id)
        metrics.SCHEDULE_FIRES.labels("started").inc()
        log.info("schedule %s (%s) started run %s", schedule_id, trigger, record.id)
        return record
