"""The periodic upkeep (the beat's ``reconcile``): the runs' own recovery, then the numbers
that readers of runs keep (the review gauges of runs answered since).

It stands above both sides, so the machinery of runs never imports a reader of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundswell.shared.runs.service import RunService


def reconcile(service: RunService, now: float | None = None) -> dict[str, int]:
    """Send again what is lost, rebuild what Redis forgot, then refresh the review numbers
    of runs answered since (their gauges); counts of each."""
    from groundswell.shared.review.gauges import refresh

    stats = service.reconcile(now)
    stats["reviews"] = refresh(service)
    return stats
