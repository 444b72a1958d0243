"""Run operations: submit, plan, execute units, finalize, reconcile, cancel.

Framework-free: Celery tasks, the API and the CLI call these with an ``enqueue`` callback
that sends a task by name, so the core never imports Celery and tasks never import each
other.
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

from shared import __version__, metrics
from shared.corpus import InputError
from shared.policies import PolicyRegistry, PolicyVersion
from shared.receipts import open_receipt
from shared.runs.diff import diff_runs
from shared.runs.finalize import build_index, build_summary, dumps, final_state, run_prefix
from shared.runs.models import RunRecord, RunSpec, iso, new_run_id, utcnow
from shared.runs.plan import CorpusPlanner, batches
from shared.runs.state import RunStore
from shared.runs.units import UnitResult, UnitRunner, split_unit_key, unit_key
from shared.schedules import ScheduleStore
from shared.settings import Settings
from shared.storage import ObjectStore, open_store

log = logging.getLogger("groundswell.runs")

# Task names, shared by the enqueue callback and the Celery task registry.
PLAN, VERIFY, ADMIT, FINALIZE, SCHEDULE = "plan", "verify", "admit", "finalize", "schedule"
PLAN_PAGES_PER_STEP = 20

Enqueue = Callable[[str, list[Any]], None]
_previous_indexes: dict[str, dict[str, dict[str, Any]]] = {}


def policy_rates(summary: dict[str, Any]) -> dict[str, Any]:
    """What the per-policy-version gauges report about a finished run."""
    rates = summary.get("rates", {})
    return {
        "grounding_rate": rates.get("claims_accepted"),
        "escape_rate": rates.get("candidates_escape_rate"),
        "finished_at": summary.get("finished_at"),
    }


class RunNotFound(LookupError):
    pass


class RunNotFinished(RuntimeError):
    pass


def engines() -> dict[str, Any]:
    from shared.admit import ENGINE_REVISION as ADMIT_REVISION
    from shared.admit import SPEC_VERSION
    from shared.verify import ENGINE_REVISION as VERIFY_REVISION

    return {
        "groundswell": __version__,
        "verify": VERIFY_REVISION,
        "admit": ADMIT_REVISION,
        "admit_spec": SPEC_VERSION,
    }


class RunService:
    def __init__(self, settings: Settings, runs: RunStore, enqueue: Enqueue) -> None:
        self.settings = settings
        self.runs = runs
        self.enqueue = enqueue

    def _store(self, url: str) -> ObjectStore:
        return open_store(url, self.settings)

    @cached_property
    def policies(self) -> PolicyRegistry:
        """The policy registry of this deployment's output store, with the built-ins in it."""
        registry = PolicyRegistry(self._store(self.settings.storage_url))
        registry.ensure_builtins()
        return registry

    # -- submit -------------------------------------------------------------------------

    def submit(
        self, spec: RunSpec, idempotency_key: str | None = None, schedule: str | None = None
    ) -> tuple[RunRecord, bool]:
        """Record a run and enqueue its planning. Returns (run, created)."""
        policy = self.policies.resolve(spec.policy)
        key_hash = hashlib.sha256(idempotency_key.encode()).hexdigest() if idempotency_key else None
        output = self.settings.storage_url
        if "://" not in output:
            output = os.path.abspath(output)  # workers may run elsewhere in the tree
        record = RunRecord(
            id=new_run_id(),
            corpus=spec.corpus,
            output=output,
            policy=policy.identity(),
            engines=engines(),
            created_at=iso(utcnow()),
            idempotency_key_sha256=key_hash,
        )
        record.only, record.dry_run = spec.only, spec.dry_run
        record.previous_run = self.runs.latest_run_of_corpus(spec.corpus)
        record.schedule = schedule
        stored = self.runs.create(record, key_hash)
        if stored.id != record.id:
            return stored, False
        self._store(record.output).put(
            run_prefix(record.id) + "run.json", dumps(record.model_dump())
        )
        self.enqueue(PLAN, [record.id])
        return record, True

    def get(self, run_id: str) -> RunRecord:
        record = self.runs.get(run_id)
        if record is None:
            raise RunNotFound(run_id)
        return record

    def cancel(self, run_id: str) -> RunRecord:
        record = self.get(run_id)
        if record.terminal:
            return record
        updated = self.runs.update(run_id, state="cancelled", finished_at=iso(utcnow()))
        assert updated is not None
        self._store(updated.output).put(
            run_prefix(run_id) + "run.json", dumps(updated.model_dump())
        )
        metrics.RUNS_FINISHED.labels("cancelled").inc()
        return updated

    # -- plan ---------------------------------------------------------------------------

    def plan(self, run_id: str, pages: int = PLAN_PAGES_PER_STEP) -> bool:
        """One planning step; re-enqueues itself until the listing is done. True when done."""
        record = self.runs.get(run_id)
        if record is None or record.terminal:
            return True
        if record.state == "queued":
            self.runs.update(run_id, state="planning", started_at=iso(utcnow()))
        planner = CorpusPlanner(
            self._store(record.corpus), self.runs.plan_cursor(run_id), self.settings.list_page_size
        )
        units = planner.step(pages)
        fresh = set(self.runs.add_planned(run_id, [u.key for u in units]))
        todo = [u for u in units if u.key in fresh]
        for kind, doc_ids in batches(
            todo, self.settings.batch_bytes, self.settings.batch_max_units
        ):
            self.enqueue(kind, [run_id, doc_ids])
        self.runs.save_plan_cursor(run_id, planner.cursor())
        if not planner.finished:
            self.enqueue(PLAN, [run_id])
            return False
        progress = self.runs.finish_planning(run_id)
        self.runs.update(run_id, state="running")
        if progress.done >= progress.planned:
            self.enqueue(FINALIZE, [run_id])
        return True

    # -- units --------------------------------------------------------------------------

    def execute(
        self, kind: str, run_id: str, doc_ids: list[str], *, first_delivery: bool = True
    ) -> list[UnitResult]:
        """Run the units of one batch that are not done yet, recording each exactly once."""
        record = self.runs.get(run_id)
        if record is None or record.terminal:
            return []
        # The run records NAME@N, and the registry caches versions: no listing per batch.
        policy = PolicyRegistry(self._store(record.output)).resolve(record.policy["ref"])
        runner = UnitRunner(
            self._store(record.corpus),
            self._store(record.output),
            policy,
            only=record.only,
            dry_run=record.dry_run,
            previous=lambda: self.previous_index(record),
        )
        done = self.runs.done_among(run_id, [unit_key(kind, d) for d in doc_ids])
        results = []
        for doc_id in doc_ids:
            unit = unit_key(kind, doc_id)
            if unit in done:
                continue
            attempts = self.runs.attempt(run_id, unit) if first_delivery else 1
            if attempts > self.settings.max_redeliveries + 1:
                # The unit keeps killing its worker (or timing out): give up on it alone.
                result = UnitResult(
                    kind,
                    doc_id,
                    "failed",
                    errors=[
                        InputError(
                            unit, f"gave up after {attempts - 1} deliveries that did not finish"
                        )
                    ],
                )
                metrics.TASK_POISONED.labels(kind, kind).inc()
            else:
                result = runner.verify(doc_id) if kind == VERIFY else runner.admit(doc_id)
            recorded = self.runs.record(run_id, unit, result.index_entry(), result.counters())
            if recorded.fresh:
                metrics.observe_unit(
                    kind, result.status, result.counts, record.policy, result.document_bytes
                )
            if recorded.run_complete:
                self.enqueue(FINALIZE, [run_id])
            results.append(result)
        return results

    def previous_index(self, record: RunRecord) -> dict[str, dict[str, Any]]:
        """The index of the run this one follows (same corpus), by unit; {} when none."""
        if not record.previous_run:
            return {}
        cached = _previous_indexes.get(record.previous_run)
        if cached is None:
            previous = self.runs.get(record.previous_run)
            store = self._store(previous.output if previous else record.output)
            try:
                data = store.get(run_prefix(record.previous_run) + "index.jsonl")
            except KeyError:
                data = b""
            cached = {}
            for line in data.splitlines():
                row = json.loads(line)
                cached[row["unit"]] = {"status": row.get("status"), "inputs": row.get("inputs")}
            _previous_indexes.clear()  # keep one: a worker serves one run at a time mostly
            _previous_indexes[record.previous_run] = cached
        return cached

    # -- finalize -----------------------------------------------------------------------

    def finalize(self, run_id: str) -> dict[str, Any] | None:
        """Write the index and summary once every planned unit is done. Idempotent."""
        record = self.runs.get(run_id)
        if record is None or record.terminal:
            return None
        progress = self.runs.progress(run_id)
        if not progress.planning_done or progress.done < progress.planned:
            return None
        if not self.runs.claim_finalize(run_id, ttl=self.settings.task_time_limit):
            return None
        try:
            output = self._store(record.output)
            lines, root, rows = build_index(self.runs.done_entries(run_id))
            prefix = run_prefix(run_id)
            output.put(prefix + "index.jsonl", lines)
            finished = utcnow()
            summary = build_summary(record.model_dump(), progress.counters, rows, root)
            state = final_state(summary)
            summary.update(
                state=state,
                created_at=record.created_at,
                started_at=record.started_at,
                finished_at=iso(finished),
            )
            output.put(prefix + "summary.json", dumps(summary))
            if not record.dry_run:
                # Summaries are kept per policy version too; the gauges read the latest.
                policy = record.policy
                output.put(
                    f"summaries/{policy['name']}/{policy['version']}/{run_id}.json", dumps(summary)
                )
                self.runs.set_latest(record.corpus, run_id, policy["ref"], policy_rates(summary))
            updated = self.runs.update(run_id, state=state, finished_at=iso(finished))
            assert updated is not None
            output.put(prefix + "run.json", dumps(updated.model_dump()))
            self.runs.expire_unit_state(run_id)
            metrics.RUNS_FINISHED.labels(state).inc()
            log.info("run %s finished: %s, %d units", run_id, state, len(rows))
            return summary
        finally:
            self.runs.release_finalize(run_id)

    def summary(self, run_id: str) -> dict[str, Any] | None:
        record = self.get(run_id)
        try:
            data = self._store(record.output).get(run_prefix(run_id) + "summary.json")
        except KeyError:
            return None
        return json.loads(data)

    # -- diffs --------------------------------------------------------------------------

    def index_rows(self, run_id: str) -> list[dict[str, Any]] | None:
        record = self.get(run_id)
        try:
            data = self._store(record.output).get(run_prefix(run_id) + "index.jsonl")
        except KeyError:
            return None
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def diff(self, run_a: str, run_b: str) -> dict[str, Any]:
        """Run B against run A (both finished); kept under run A once computed."""
        record_a, record_b = self.get(run_a), self.get(run_b)
        store_a = self._store(record_a.output)
        key = run_prefix(run_a) + f"diffs/{run_b}.json"
        try:
            return json.loads(store_a.get(key))
        except KeyError:
            pass
        summary_a, summary_b = self.summary(run_a), self.summary(run_b)
        if summary_a is None or summary_b is None:
            unfinished = run_a if summary_a is None else run_b
            raise RunNotFinished(f"run {unfinished} has not finished: a diff needs two summaries")
        stores = {record_a.output: store_a, record_b.output: self._store(record_b.output)}

        def load(receipt_key: str) -> dict[str, Any] | None:
            for store in stores.values():
                try:
                    return open_receipt(store.get(receipt_key), receipt_key)
                except KeyError:
                    continue
            return None

        result = diff_runs(
            summary_a, summary_b, self.index_rows(run_a) or [], self.index_rows(run_b) or [], load
        )
        store_a.put(key, dumps(result))
        return result

    def report(self, run_id: str, max_documents: int = 50) -> str:
        """The HTML report of a finished run."""
        from shared.corpus import document_key, labels_key
        from shared.report import render_report

        record = self.get(run_id)
        summary = self.summary(run_id)
        if summary is None:
            raise RunNotFinished(f"run {run_id} is {record.state}: its report needs its summary")
        output, corpus = self._store(record.output), self._store(record.corpus)

        def receipt(key: str) -> dict[str, Any] | None:
            try:
                return open_receipt(output.get(key), key)
            except (KeyError, ValueError):
                return None

        def document(doc_id: str) -> str | None:
            try:
                return corpus.get(document_key(doc_id)).decode("utf-8", "replace")
            except KeyError:
                return None

        def labels(doc_id: str) -> dict[str, Any]:
            try:
                return json.loads(corpus.get(labels_key(doc_id)))
            except (KeyError, ValueError):
                return {}

        return render_report(
            summary, self.index_rows(run_id) or [], receipt, document, labels, max_documents
        )

    # -- policies and schedules -----------------------------------------------------------

    @cached_property
    def schedules(self) -> ScheduleStore:
        return ScheduleStore(self.runs.r)

    def publish_policy(
        self, document: dict[str, Any], version: int | None = None
    ) -> tuple[PolicyVersion, bool]:
        """Publish a policy version; schedules that follow NAME@latest fire under it now."""
        policy, created = self.policies.publish(document, version)
        if created:
            for schedule in self.schedules.following(policy.name):
                self.enqueue(SCHEDULE, [schedule.id, f"publish:{policy.ref}"])
        return policy, created

    def fire_schedule(self, schedule_id: str, trigger: str = "tick") -> RunRecord | None:
        """Start the run of a schedule (None if it is gone, still running, or already fired)."""
        schedule = self.schedules.get(schedule_id)
        if schedule is None:
            return None
        if trigger == "tick" and schedule.last_run_id:
            last = self.runs.get(schedule.last_run_id)
            if last is not None and not last.terminal:
                log.info("schedule %s: run %s still going, tick skipped", schedule_id, last.id)
                return None
        if not self.schedules.claim_fire(schedule, trigger):
            return None
        spec = RunSpec(corpus=schedule.corpus, policy=schedule.policy, only=schedule.only)
        record, _ = self.submit(spec, schedule=schedule.id)
        self.schedules.fired(schedule.id, record.id)
        log.info("schedule %s (%s) started run %s", schedule_id, trigger, record.id)
        return record

    # -- reconcile ----------------------------------------------------------------------

    def reconcile(self, now: float | None = None) -> dict[str, int]:
        """Re-enqueue the missing work of stalled runs (lost messages, killed workers)."""
        now = now or time.time()
        stats = {"runs": 0, "units": 0, "plans": 0, "finalized": 0}
        for run_id in self.runs.active_run_ids():
            if now - self.runs.updated_at(run_id) < self.settings.stall_seconds:
                continue
            record = self.runs.get(run_id)
            if record is None or record.terminal:
                continue
            stats["runs"] += 1
            progress = self.runs.progress(run_id)
            self.runs.touch(run_id)
            if not progress.planning_done:
                self.enqueue(PLAN, [run_id])
                stats["plans"] += 1
                continue
            if progress.done >= progress.planned:
                self.enqueue(FINALIZE, [run_id])
                stats["finalized"] += 1
                continue
            for chunk in self.runs.pending_units(run_id):
                by_kind: dict[str, list[str]] = {}
                for unit in chunk:
                    kind, doc_id = split_unit_key(unit)
                    by_kind.setdefault(kind, []).append(doc_id)
                for kind, doc_ids in by_kind.items():
                    size = self.settings.batch_max_units
                    for i in range(0, len(doc_ids), size):
                        self.enqueue(kind, [run_id, doc_ids[i : i + size]])
                        stats["units"] += len(doc_ids[i : i + size])
            log.warning("run %s stalled; re-enqueued %d units", run_id, stats["units"])
        return stats
