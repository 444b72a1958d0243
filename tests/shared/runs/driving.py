"""A run driven in this process through the pipeline's own operations (shared by tests)."""

from __future__ import annotations

from typing import Any

from groundswell.shared.settings import Settings


def drive(settings: Settings, spec: Any, hold: tuple[str, ...] = ()) -> tuple[Any, Any, list[str]]:
    """Submit ``spec`` (a RunSpec), its tasks sent to a list and run here, in order; the
    service, the finished record and the kinds of the tasks it sent. Tasks of a kind in
    ``hold`` are sent but not run (``("finalize",)``: the run stops with every batch
    recorded)."""
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import RunStore, redis_client

    sent: list[tuple[str, list]] = []
    kinds: list[str] = []
    service = RunService(
        settings,
        RunStore(redis_client(settings.state_redis_url)),
        lambda kind, args: sent.append((kind, args)),
    )
    record, _ = service.submit(spec)
    while sent:
        kind, args = sent.pop(0)
        kinds.append(kind)
        if kind in hold:
            continue
        if kind == "plan":
            service.plan(args[0])
        elif kind == "finalize":
            service.finalize(args[0])
        else:
            service.execute(args[0], args[1], f"token-{len(kinds)}")
    return service, service.get(record.id), kinds
