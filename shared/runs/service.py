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
from functools import lru_cache
from typing import Any

from shared import __version__, metrics
from shared.corpus import InputError
from shared.policies import PolicyVersion, resolve_policy
from shared.runs.finalize import build_index, build_summary, dumps, final_state, run_prefix
from shared.runs.models import RunRecord, RunSpec, iso, new_run_id, utcnow
from shared.runs.plan import CorpusPlanner, batches
from shared.runs.state import RunStore
from shared.runs.units import UnitResult, UnitRunner, split_unit_key, unit_key
from shared.settings import Settings
from shared.storage import ObjectStore, open_store

log = logging.getLogger("groundswell.runs")

# Task names, shared by the enqueue callback and the Celery task registry.
PLAN, VERIFY, ADMIT, FINALIZE = "plan", "verify", "admit", "finalize"
PLAN_PAGES_PER_STEP = 20

Enqueue = Callable[[str, list[Any]], None]


class RunNotFound(LookupError):
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


@lru_cache(maxsize=64)
def _policy(ref: str) -> PolicyVersion:
    return resolve_policy(ref)


class RunService:
    def __init__(self, settings: Settings, runs: RunStore, enqueue: Enqueue) -> None:
        self.settings = settings
        self.runs = runs
        self.enqueue = enqueue

    def _store(self, url: str) -> ObjectStore:
        return open_store(url, self.settings)

    # -- submit -------------------------------------------------------------------------

    def submit(self, spec: RunSpec, idempotency_key: str | None = None) -> tuple[RunRecord, bool]:
        """Record a run and enqueue its planning. Returns (run, created)."""
        policy = resolve_policy(spec.policy)
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
        policy = _policy(record.policy["ref"])
        runner = UnitRunner(self._store(record.corpus), self._store(record.output), policy)
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
