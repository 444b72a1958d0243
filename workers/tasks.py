"""Thin tasks: ids and small JSON in, nothing out; the logic lives in shared.runs.service."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from groundswell.shared.runs import kinds
from groundswell.workers.app import app
from groundswell.workers.base import BatchTask, GroundswellTask

RunId = Annotated[str, StringConstraints(min_length=1, max_length=128)]
DeliveryId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{24}$")]
BatchId = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,20}(\.[01])*$", max_length=200)]
SourceKey = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
PageList = Annotated[
    str, StringConstraints(pattern=r"^[0-9]{1,7}(-[0-9]{1,7})?(,[0-9]{1,7}(-[0-9]{1,7})?)*$")
]


@app.task(base=GroundswellTask, bind=True, name="groundswell.plan", pydantic=True)
def plan(self: GroundswellTask, run_id: RunId) -> None:
    self.service.plan(run_id)


def _batch_task(kind: kinds.Kind) -> object:
    """The task of one unit kind's batches (``groundswell.<kind>``, on the kind's queue)."""

    def run(self: BatchTask, run_id: RunId, batch: BatchId) -> None:
        self.execute(run_id, batch)

    run.__name__ = run.__qualname__ = kind.name
    return app.task(base=BatchTask, bind=True, name=kind.task, pydantic=True)(run)


# One task per registered kind (built-in, and GROUNDSWELL_KINDS_EXTRA's).
BATCH_TASKS = {kind.name: _batch_task(kind) for kind in kinds.all_kinds()}


@app.task(base=GroundswellTask, bind=True, name="groundswell.read_pages", pydantic=True)
def read_pages(
    self: GroundswellTask, run_id: RunId, file: SourceKey, sha256: Sha256, pages: PageList
) -> None:
    """A read unit's helper: recognise pages of a long scan beside it (runs/reading.py)."""
    self.service.read_pages(run_id, file, sha256, pages)


@app.task(base=GroundswellTask, bind=True, name="groundswell.finalize", pydantic=True)
def finalize(self: GroundswellTask, run_id: RunId) -> None:
    self.service.finalize(run_id)


@app.task(base=GroundswellTask, bind=True, name="groundswell.reconcile")
def reconcile(self: GroundswellTask) -> None:
    from groundswell.shared import upkeep

    upkeep.reconcile(self.service)


@app.task(base=GroundswellTask, bind=True, name="groundswell.streams")
def streams(self: GroundswellTask) -> None:
    """Every followed corpus: its window closed or finished, its reconciliation when due."""
    from groundswell.shared.streams.service import StreamService
    from groundswell.shared.streams.store import STREAMS

    if self.service.runs.r is not None and self.service.runs.r.scard(STREAMS):
        StreamService(self.service).periodic()


@app.task(base=GroundswellTask, bind=True, name="groundswell.scheduled_run", pydantic=True)
def scheduled_run(self: GroundswellTask, schedule_id: RunId, trigger: str = "tick") -> None:
    self.service.fire_schedule(schedule_id, trigger)


@app.task(base=GroundswellTask, bind=True, name="groundswell.export", pydantic=True)
def export(self: GroundswellTask, run_id: RunId) -> None:
    from groundswell.shared.export.service import export_run

    export_run(self.service, run_id)


@app.task(base=GroundswellTask, bind=True, name="groundswell.hooks", pydantic=True)
def hooks(self: GroundswellTask, run_id: RunId) -> None:
    from groundswell.shared.hooks.service import plan_deliveries
    from groundswell.shared.runs.service import DELIVER

    for delivery in plan_deliveries(self.service, run_id):
        self.service.enqueue(DELIVER, [run_id, delivery])


@app.task(base=GroundswellTask, bind=True, name="groundswell.deliver", pydantic=True)
def deliver(self: GroundswellTask, run_id: RunId, delivery: DeliveryId) -> None:
    from groundswell.shared.hooks.service import attempt

    attempt(self.service, run_id, delivery)


@app.task(base=GroundswellTask, bind=True, name="groundswell.lineage", pydantic=True)
def lineage(
    self: GroundswellTask, run_id: RunId, state: Literal["START", "COMPLETE", "FAIL"]
) -> None:
    from groundswell.shared.lineage.service import emit

    emit(self.service, run_id, state)
