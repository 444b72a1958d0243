"""A run with work on a queue that no live worker consumes waits for ever: say which queue,
and since when, wherever the run is looked at (status, run --wait, the API, /metrics).

Workers announce the queues they consume (workers/registry.py); a run needs ``control`` for
its planning and finalize steps, and the queue of each kind of batch it has pending.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from groundswell.shared.runs.models import iso, utcnow

if TYPE_CHECKING:
    from groundswell.shared.runs.service import RunService


def needed_queues(kinds: Iterable[str]) -> list[str]:
    """The queues a run with pending batches of ``kinds`` needs, in pipeline order."""
    from groundswell.shared.runs import kinds as registry

    known = {kind.name: kind.queue for kind in registry.all_kinds()}
    needed = {registry.CONTROL} | {known[kind] for kind in kinds if kind in known}
    return [queue for queue in registry.queues() if queue in needed]


def waiting_for(service: RunService, run_id: str) -> dict[str, str] | None:
    """``{"queue", "since"}``: the first queue the run needs that no live worker consumes
    (noted in Redis, so ``since`` is when that was first seen); None when every one is
    consumed, when a live worker did not say what it consumes, or with no Redis."""
    runs = service.runs
    if runs.r is None:
        return None
    consumed = service.consumed_queues()
    missing = []
    if consumed is not None:
        missing = [q for q in needed_queues(runs.pending_kinds(run_id)) if q not in consumed]
    return runs.note_waiting(run_id, missing[0] if missing else None, iso(utcnow()))


def describe(waiting: Any) -> str:
    """The line a user reads (status, run --wait): of the run state's dict, or of the
    client's typed ``waiting_for`` (a model with the same fields)."""
    from datetime import datetime

    if not isinstance(waiting, dict):
        waiting = waiting.model_dump() if hasattr(waiting, "model_dump") else dict(waiting)
    queue = waiting["queue"]
    try:
        since = datetime.fromisoformat(waiting["since"].replace("Z", "+00:00"))
        at = since.astimezone().strftime("%H:%M:%S")
    except (KeyError, ValueError):
        at = "?"
    return (
        f"waiting for a worker on queue {queue!r} since {at} (no live worker consumes it: "
        f"start one with `groundswell worker --queues {queue}`, or with no --queues for "
        "every queue)"
    )
