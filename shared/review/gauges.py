"""The review of runs as numbers for Prometheus: per corpus and policy version, the load and
measures of its newest reviewed run (bounded labels, no run ids).

A run's numbers are computed from object storage (``RunReview.measures``) and kept in one
small Redis hash entry per corpus and policy version, which the API's collector reads at
scrape time. They are refreshed when someone asks for a run's measures, and, for runs that
were answered since, by the periodic reconcile task, a few runs at a time: answering never
waits for them and a scrape never computes them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

# Runs refreshed by one reconcile: the rest wait for the next (they stay marked).
REFRESH_PER_RECONCILE = 20

# (gauge, the snapshot's member, help); the task counts are one gauge with a state label.
GAUGES = (
    (
        "groundswell_review_reviewers",
        "reviewers",
        "Reviewers who answered a task of the newest reviewed run of each corpus under each "
        "policy version.",
    ),
    (
        "groundswell_review_open_median_age_seconds",
        "open_median_age_seconds",
        "Median time its open (unanswered) review tasks have waited since they were made, in "
        "the newest reviewed run of each corpus under each policy version.",
    ),
    (
        "groundswell_review_agreement_rate",
        "agreement_rate",
        "Share of answers that agree with a blind label (groundgate's measures), in the "
        "newest reviewed run of each corpus under each policy version.",
    ),
    (
        "groundswell_review_escape_rate",
        "escape_rate",
        "Share of audited admitted values a reviewer found wrong (escapes after review, "
        "groundgate's measures), in the newest reviewed run of each corpus under each policy "
        "version.",
    ),
)
TASKS_GAUGE = "groundswell_review_tasks"
TASK_STATES = ("unanswered", "answered", "disputed")


def _rate(pairs: list[list[int]]) -> float | None:
    num, den = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return num / den if den else None


def snapshot(result: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one run's ``RunReview.measures()`` that the gauges show."""
    load, kinds = result["load"], result["measures"]["kinds"].values()
    return {
        "tasks": {state: load[state] for state in TASK_STATES},
        "reviewers": load["reviewers"],
        "open_median_age_seconds": load["open_median_age_seconds"],
        "agreement_rate": _rate([k["agreement"] for k in kinds]),
        "escape_rate": _rate([k["escapes"] for k in kinds]),
    }


def record(service: Any, run: Any, result: Mapping[str, Any]) -> None:
    """Keep a run's numbers for the gauges (without Redis, as in a CLI on storage alone,
    there is nowhere to keep them and nothing scrapes them)."""
    ref = result.get("policy_ref")
    if getattr(service.runs, "r", None) is None or not ref:
        return
    service.runs.set_review_latest(run.corpus, ref, run.id, snapshot(result))


def refresh(service: Any, most: int = REFRESH_PER_RECONCILE) -> int:
    """Compute again the numbers of up to ``most`` runs answered since their last refresh;
    returns how many were refreshed. A run that cannot be measured now is left out."""
    from groundswell.shared.review.store import InputsChanged, ReviewUnavailable, RunReview

    done = 0
    for run_id in service.runs.take_reviewed(most):
        run = service.get_or_none(run_id)
        if run is None:
            continue
        try:
            record(service, run, RunReview(service, run).measures())
        except (ReviewUnavailable, InputsChanged) as exc:
            log.warning("review measures of run %s left out: %s", run_id, exc)
            continue
        except Exception:  # a run that cannot be read: the others taken with it still are
            log.exception("review measures of run %s failed", run_id)
            continue
        done += 1
    return done
