"""Reconcile and rebuild: lost messages, dead workers and a lost Redis cost time, not results.

``reconcile`` (every few seconds, from beat or a waiting client) sends again only the
batches whose lease expired and whose holder is no longer running, restarts planning or finalizing that stopped moving, and
rebuilds from storage any unfinished run that Redis no longer knows. Storage holds, per
run, the record, every planning step, every split and every batch's segment, so the
Redis state of a run can be derived from it exactly: the planning cursor and step, the
pending batches (planned, with no covering segment), and the counters (the segments'
sums).
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from groundswell.shared.runs import kinds
from groundswell.shared.runs.execute import halves
from groundswell.shared.runs.finalize import unit_counts
from groundswell.shared.runs.layout import (
    CATALOG_ACTIVE,
    CATALOG_RUNS,
    plan_prefix,
    run_id_of_catalog_key,
    run_json,
)
from groundswell.shared.runs.models import RunRecord, listed_at
from groundswell.shared.runs.plan import PlanStep
from groundswell.shared.runs.segments import Segment, covering_segments, read_segment, sum_counters
from groundswell.shared.runs.state import BatchSpec
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.runs.service import RunService

log = logging.getLogger("groundswell.runs")


def reconcile(service: RunService, now: float | None = None) -> dict[str, int]:
    """Send again what is really lost; rebuild what Redis forgot."""
    from groundswell.shared.runs.service import FINALIZE, PLAN

    now = now or time.time()
    runs, settings = service.runs, service.settings
    names = ("runs", "batches", "kept", "plans", "finalized", "rebuilt")
    stats = dict.fromkeys(names, 0)
    stats["rebuilt"] = sync_from_storage(service)
    for run_id in runs.active_run_ids():
        record = runs.get(run_id)
        if record is None or record.terminal:
            continue
        plan = runs.plan_state(run_id)
        waiting = service.waiting_for(run_id)  # noted for /metrics, and logged
        if waiting is not None:
            log.info(  # info: `run --wait` says it to its user in its own words
                "run %s: waiting for a worker on queue %r since %s (no live worker consumes it)",
                run_id,
                waiting["queue"],
                waiting["since"],
            )
        # A holder still running keeps its batch for another lease (its renewals were late).
        expired = runs.expired(
            run_id, service.queued_lease_until(), time.time() + settings.lease_seconds
        )
        lost = expired.resent
        for spec in lost:
            service.enqueue(spec.kind, [run_id, spec.batch])
        if lost or expired.kept:
            from groundswell.shared import metrics

            for spec in lost:
                metrics.BATCHES_RESENT.labels(spec.kind).inc()
            for spec in expired.kept:
                metrics.LEASES_KEPT.labels(spec.kind).inc()
            stats["batches"] += len(lost)
            stats["kept"] += len(expired.kept)
        if lost:
            log.warning("run %s: sent %d batches again (expired leases)", run_id, len(lost))
        if expired.kept:
            log.info("run %s: %d late leases kept (still running)", run_id, len(expired.kept))
        stalled = now - runs.idle_since(run_id) >= settings.stall_seconds
        if not stalled:
            continue
        stats["runs"] += 1
        if not plan.done:
            runs.nudge(run_id)
            runs.resume_planning_flag(run_id)
            service.enqueue(PLAN, [run_id])
            stats["plans"] += 1
        elif plan.outstanding == 0 and not runs.finalizing(run_id):
            runs.nudge(run_id)
            service.enqueue(FINALIZE, [run_id])
            stats["finalized"] += 1
    return stats


# -- after a loss of Redis --------------------------------------------------------------


# Raised when the run list in Redis gains what an older release did not keep (2: the
# per-corpus lists of team keys): a Redis of an older revision is rebuilt once.
CATALOG_REVISION = 2


def sync_catalog(service: RunService) -> None:
    """Once per Redis lifetime (a fresh or flushed Redis has no epoch) and revision of the
    run list: restore it from storage."""
    runs = service.runs
    epoch = runs.epoch()
    if epoch is None or not epoch.startswith(f"{CATALOG_REVISION}:"):
        rebuild_catalog(service, service.store(service.output_url))
        runs.set_epoch(f"{CATALOG_REVISION}:{secrets.token_hex(8)}")


def sync_from_storage(service: RunService) -> int:
    """Restore the run list if Redis lost it, and every unfinished run Redis lacks."""
    runs = service.runs
    output = service.store(service.output_url)
    sync_catalog(service)
    rebuilt = 0
    for page in output.list_pages(CATALOG_ACTIVE):
        for info in page:
            run_id = info.key.rsplit("/", 1)[1].removesuffix(".json")
            if not runs.known(run_id):
                rebuild_run(service, output, run_id)
                rebuilt += 1
    return rebuilt


def rebuild_catalog(service: RunService, output: ObjectStore) -> None:
    """The run list, and the last finished run of each corpus and of each policy version."""
    runs = service.runs
    listed: dict[str, tuple[float, str]] = {}
    corpora: dict[str, tuple[str, str]] = {}
    policies: dict[tuple[str, str], tuple[str, str, dict[str, Any]]] = {}
    for page in output.list_pages(CATALOG_RUNS):
        for info in page:
            run_id = run_id_of_catalog_key(info.key)
            try:
                entry = json.loads(output.get(info.key))
            except (KeyError, ValueError):
                continue
            listed[run_id] = (listed_at(run_id, entry.get("created_at")), entry["corpus"])
            finished = entry.get("state") in ("succeeded", "partially_failed", "failed")
            if not finished or entry.get("dry_run"):
                continue
            at, corpus, ref = entry.get("finished_at") or "", entry["corpus"], entry["policy"]
            if at >= corpora.get(corpus, ("", ""))[0]:
                corpora[corpus] = (at, run_id)
            if entry.get("rates") and at >= policies.get((corpus, ref), ("", "", {}))[0]:
                policies[(corpus, ref)] = (at, run_id, entry["rates"])
            if len(listed) >= 10_000:
                runs.add_listed(listed)
                listed = {}
    runs.add_listed(listed)
    for corpus, (_, run_id) in corpora.items():
        runs.set_corpus_latest(corpus, run_id)
    for (corpus, ref), (_, run_id, rates) in policies.items():
        runs.set_policy_latest(corpus, ref, run_id, rates)
    log.info("run list rebuilt from storage")


def rebuild_run(service: RunService, output: ObjectStore, run_id: str) -> RunRecord | None:
    """Restore an unfinished run's Redis state from its files."""
    from groundswell.shared.runs.finish import cleanup, read_summary, write_record
    from groundswell.shared.runs.service import FINALIZE

    runs = service.runs
    try:
        record = RunRecord.model_validate_json(output.get(run_json(run_id)))
    except KeyError:
        return None
    summary = read_summary(output, run_id)
    if summary is not None:  # it finished; only the tidying up was lost
        record = record.model_copy(
            update={"state": summary["state"], "finished_at": summary.get("finished_at")}
        )
        cleanup(output, run_id)
        write_record(output, record, summary)
        runs.restore(record)
        return record
    if record.terminal:  # cancelled
        runs.restore(record)
        output.delete(f"{CATALOG_ACTIVE}{run_id}.json")
        return record
    steps = list(_plan_steps(output, run_id))
    last = steps[-1] if steps else None
    pending, planned, batches_planned = [], dict.fromkeys(kinds.names(), 0), 0
    done, failed, batches_done, parts = 0, 0, 0, []
    # Units of a kind that leaves rows only when they fail join the index (and the planned
    # units) when they fail.
    rows_of = {kind.name: kind.rows for kind in kinds.all_kinds()}
    failed_late = 0
    groups = _groups(service, output, run_id)
    group = next(groups, None)
    for step in steps:
        parts.append(step.counters)
        for spec in step.batches:
            planned[spec.kind] += len(spec.doc_ids)
            batches_planned += 1
            while group is not None and group[0] < spec.batch:
                group = next(groups, None)
            present = group[1] if group is not None and group[0] == spec.batch else {}
            leaves, extra = _pending_leaves(spec, present)
            pending += leaves
            batches_planned += extra
            for segment in present.values():
                done += segment.units
                failed += segment.failed
                failed_late += segment.units if rows_of[segment.kind] == "failed" else 0
                batches_done += 1
                parts.append(segment.counters)
    counters = sum_counters(parts)
    for kind, n in planned.items():
        if n:
            counters[f"units.{kind}.planned"] = n
    # The index holds the units of the kinds that leave a row each, and the failed units of
    # those that leave rows only then; the others count in counters.
    indexed = sum(n for kind, n in planned.items() if rows_of[kind] == "every") + failed_late
    finished = bool(last and last.finished)
    state = "running" if finished else ("planning" if steps else "queued")
    record = record.model_copy(update={"state": state})
    fields: dict[str, Any] = {
        "plan_step": len(steps),
        "plan_done": 1 if finished else 0,
        "next_seq": last.next_seq if last else 0,
        "units_planned": indexed,
        "units_done": done,
        "units_failed": failed,
        "batches_planned": batches_planned,
        "batches_done": batches_done,
    }
    if last is not None:
        fields["plan_cursor"] = json.dumps(last.cursor)
    # Leases already expired: the reconcile that follows sends every pending batch.
    runs.restore(record, fields, counters, pending, lease_until=0.0)
    log.warning(
        "run %s rebuilt from storage: %d/%d units done, %d batches pending",
        run_id,
        done,
        indexed,
        len(pending),
    )
    if finished and not pending:
        service.enqueue(FINALIZE, [run_id])
    assert unit_counts(counters)  # the shape the API reads
    return record


def _plan_steps(output: ObjectStore, run_id: str) -> Iterator[PlanStep]:
    expected = 1
    for page in output.list_pages(plan_prefix(run_id)):
        for info in page:
            step = PlanStep.loads(output.get(info.key))
            if step.step != expected:  # a gap: later steps were never committed
                return
            expected += 1
            yield step


def _groups(
    service: RunService, output: ObjectStore, run_id: str
) -> Iterator[tuple[str, dict[str, Segment]]]:
    """(top-level batch, its covering segments read) in batch order, read on threads."""

    def read(batches: list[str]) -> dict[str, Segment]:
        out = {}
        for batch in batches:
            segment = read_segment(output, run_id, batch)
            if segment is not None:
                out[batch] = segment
        return out

    with ThreadPoolExecutor(16) as pool:
        window: list[tuple[str, Any]] = []
        for group in covering_segments(output, run_id):
            window.append((group.top, pool.submit(read, group.batches)))
            if len(window) >= 64:
                top, future = window.pop(0)
                yield top, future.result()
        for top, future in window:
            yield top, future.result()


def _pending_leaves(spec: BatchSpec, present: dict[str, Segment]) -> tuple[list[BatchSpec], int]:
    """The parts of a planned batch that no segment covers, and how many splits it took.

    A split is a pure function of the batch (:func:`halves`), so the halves of a batch
    whose descendants have segments are known without any record of the split.
    """
    if spec.batch in present:
        return [], 0
    if not any(b.startswith(spec.batch + ".") for b in present):
        return [spec], 0
    leaves: list[BatchSpec] = []
    splits = 1
    for child in halves(spec):
        sub, more = _pending_leaves(child, present)
        leaves += sub
        splits += more
    return leaves, splits
