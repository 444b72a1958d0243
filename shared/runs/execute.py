"""Running one batch: lease it, compute its units, write its segment, record it once.

A batch task costs two run-state round trips in the steady state (``begin`` and
``record``); a batch that runs longer than a third of its lease renews it from a thread.
A delivery that finds the batch already had one (its attempt count is above 1) knows an
earlier delivery died without recording it:

- if that delivery wrote the segment, it is adopted and recorded;
- otherwise a batch of several units is split in two and each half sent on its own, so
  a unit that kills its worker ends up alone;
- a unit alone is given up, as failed with the reason, after the redelivery cap.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from groundswell.shared import metrics, tracing
from groundswell.shared.corpus import InputError, document_key
from groundswell.shared.policies import PolicyRegistry, PolicyVersion
from groundswell.shared.runs import kinds
from groundswell.shared.runs.index import IndexMissing, RunIndex
from groundswell.shared.runs.models import RunRecord
from groundswell.shared.runs.segments import Segment, read_segment, write_segment
from groundswell.shared.runs.state import BatchSpec, RunStore
from groundswell.shared.runs.units import UnitResult, UnitRunner
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.runs.service import RunService

LOST = "the worker was lost (killed, out of memory) or the task hit its hard time limit"


@dataclass
class RunContext:
    """What every batch of one run needs, built once per process."""

    record: RunRecord
    policy: PolicyVersion
    corpus: ObjectStore
    output: ObjectStore
    runner: UnitRunner


_contexts: OrderedDict[str, RunContext] = OrderedDict()


def context(service: RunService, record: RunRecord) -> RunContext:
    ctx = _contexts.get(record.id)
    if ctx is None:
        output = service.store(record.output)
        corpus = service.corpus_store(record)
        # The run records NAME@N, and the registry caches versions: no listing per batch.
        policy = PolicyRegistry(output).resolve(record.policy["ref"])
        previous = _previous_lookup(service, record)
        runner = UnitRunner(
            corpus,
            output,
            policy,
            only=record.only,
            dry_run=record.dry_run,
            previous=previous,
            verify_inputs=record.verify_inputs,
            changed=_changed(output, record),
            max_bytes=service.settings.max_document_bytes,
        )
        if not record.dry_run:
            runner.ocr_helpers = _helpers(service, record.id)
        ctx = RunContext(record, policy, corpus, output, runner)
        _contexts[record.id] = ctx
        while len(_contexts) > 4:
            _contexts.popitem(last=False)
    return ctx


def _helpers(service: RunService, run_id: str):
    """Send a read unit's helper task for pages of a long scan (runs/reading.py)."""
    from groundswell.shared.runs.reading import page_list
    from groundswell.shared.runs.service import READ_PAGES

    def ask(file: str, sha: str, pages: list[int]) -> None:
        service.enqueue(READ_PAGES, [run_id, file, sha, page_list(pages)])

    return ask


def _changed(output: ObjectStore, record: RunRecord) -> frozenset[str] | None:
    """The documents a --changed run names (read once per run context), None for another run."""
    if record.changed is None:
        return None
    from groundswell.shared.runs.layout import changed_key

    return frozenset(json.loads(output.get(changed_key(record.id))))


def _previous_lookup(service: RunService, record: RunRecord):
    """(kind, doc_id) -> the unit's row in the run this one follows, read from its index."""
    if not record.previous_run:
        return None
    holder: dict[str, RunIndex | None] = {}

    def lookup(kind: str, doc_id: str) -> dict[str, Any] | None:
        if "index" not in holder:
            previous = service.get_or_none(record.previous_run or "")
            store = service.store(previous.output if previous else record.output)
            try:
                holder["index"] = RunIndex(store, record.previous_run or "")
            except IndexMissing:
                holder["index"] = None
        index = holder["index"]
        return index.find(kind, doc_id) if index is not None else None

    return lookup


class Lease(threading.Thread):
    """Renews a running batch's lease every third of its length until the batch is done."""

    def __init__(self, runs: RunStore, run_id: str, batch: str, token: str, seconds: float):
        super().__init__(daemon=True, name=f"lease-{batch}")
        self.args = (runs, run_id, batch, token, seconds)
        self.stopped = threading.Event()

    def run(self) -> None:
        runs, run_id, batch, token, seconds = self.args
        while not self.stopped.wait(seconds / 3):
            try:
                runs.renew(run_id, batch, token, seconds)
            except Exception:  # a missed renewal only risks a duplicate delivery, never a count
                continue

    def __enter__(self) -> Lease:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()


def halves(spec: BatchSpec) -> list[BatchSpec]:
    """A read batch's halves both name the batches it holds: the first recorded sends them
    (their documents of the other half are then read by the unit that needs them)."""
    middle = len(spec.doc_ids) // 2
    out = []
    for suffix, ids in ((".0", spec.doc_ids[:middle]), (".1", spec.doc_ids[middle:])):
        sources = {d: spec.sources[d] for d in ids if d in spec.sources} if spec.sources else {}
        listing = {d: spec.listing[d] for d in ids if d in spec.listing} if spec.listing else {}
        child = BatchSpec(spec.batch + suffix, spec.kind, ids, sources or None, spec.then)
        out.append(replace(child, listing=listing or None))
    return out


def given_up(spec: BatchSpec, deliveries: int, why: str) -> Segment:
    """A unit that never finished, as a failed row that says why (of a kind that leaves no
    rows, as counters: a reading kind's held units then read the document themselves, or
    fail the same way)."""
    doc_id, kind = spec.doc_ids[0], kinds.get(spec.kind)
    if kind.rows == "none":
        counters = {f"units.{kind.name}.failed": 1, f"{kind.name}.failed.lost": 1}
        return Segment(spec.batch, spec.kind, [], counters)
    file = (kind.inputs[0] if kind.inputs else document_key)(doc_id)
    error = InputError(file, f"gave up after {deliveries} deliveries that did not finish: {why}")
    result = UnitResult(spec.kind, doc_id, "failed", errors=[error])
    return Segment(spec.batch, spec.kind, [result.row()], result.counters())


def run_batch(service: RunService, run_id: str, batch: str, token: str, node: str = "") -> str:
    """Execute one delivery of a batch on worker ``node``; return what happened (for logs
    and tests). An earlier delivery its worker still runs keeps the batch ("busy"), so the
    redelivery cap below only ever counts deliveries that are gone."""
    settings, runs = service.settings, service.runs
    begun = runs.begin(run_id, batch, token, settings.lease_seconds, node)
    if begun.status != "run":
        return begun.status
    assert begun.spec is not None
    spec = begun.spec
    # The run's context is built once per process: no read of the record per batch.
    ctx = _contexts.get(run_id) or context(service, service.get(run_id))
    if begun.attempts > 1:
        stored = read_segment(ctx.output, run_id, batch)
        if stored is not None:  # the delivery that died had written it
            return _record(service, ctx, stored, "adopted")
        if len(spec.doc_ids) > 1:
            children = halves(spec)
            # The halves are a function of the batch, so storage needs no record of the split.
            if runs.split(run_id, batch, token, children, service.queued_lease_until()):
                metrics.BATCH_SPLITS.labels(spec.kind).inc()
                for child in children:
                    service.enqueue(spec.kind, [run_id, child.batch])
            return "split"
        if begun.attempts > settings.max_redeliveries + 1:
            metrics.TASK_POISONED.labels(spec.kind, spec.kind).inc()
            segment = write_segment(
                ctx.output, run_id, given_up(spec, begun.attempts - 1, begun.why or LOST)
            )
            return _record(service, ctx, segment, "gave up")
    kind = kinds.get(spec.kind)
    with Lease(runs, run_id, batch, token, settings.lease_seconds):
        segment = kind.execute(kinds.Work(spec, ctx.runner, settings, ctx))
    return _record(service, ctx, write_segment(ctx.output, run_id, segment), "computed")


def _record(service: RunService, ctx: RunContext, segment: Segment, what: str) -> str:
    from groundswell.shared.runs.service import FINALIZE, PLAN

    run_id = ctx.record.id
    kind = segment.kind
    declared = kinds.get(kind)
    tracing.annotate(
        batch=segment.batch,
        kind=kind,
        units=segment.units,
        failed=segment.failed,
        cached=segment.counters.get(f"units.{kind}.cached", 0),
        computed=segment.counters.get(f"units.{kind}.computed", 0),
        outcome=what,
    )
    recorded = service.runs.record(
        run_id,
        segment.batch,
        segment.units,
        segment.failed,
        segment.counters,
        service.queued_lease_until(),
        # A unit of a kind that leaves rows only when it fails is an index unit only then:
        # planned as it is recorded.
        unplanned=segment.units if declared.rows == "failed" else 0,
    )
    if not recorded.fresh:
        return "duplicate"
    # The batches that waited for this read batch (no chord: this record released them, once).
    for spec in recorded.released:
        service.enqueue(spec.kind, [run_id, spec.batch])
    fresh = segment.counters if segment.fresh is None else segment.fresh
    metrics.observe_batch(
        segment.kind,
        segment.rows,
        fresh,
        ctx.record.policy,
        rowless=declared.rows != "every",
        observe=declared.observe,
    )
    if recorded.resume_planning:
        service.enqueue(PLAN, [run_id])
    if recorded.run_complete:
        service.enqueue(FINALIZE, [run_id])
    return what
