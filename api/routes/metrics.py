"""``/metrics``: this process's metrics plus queue depth and active runs, read at scrape time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.core import GaugeMetricFamily

from groundswell.api.deps import ServiceDep, SettingsDep, optional_api_key
from groundswell.shared.settings import ApiKey

router = APIRouter(tags=["metrics"])


# Per-corpus gauges stay bounded: the corpora whose latest finished run is most recent.
MAX_CORPUS_SERIES = 200


# The rates of the latest finished run of each corpus under each policy version: (gauge,
# the rate's name in the run list's policy_latest, help). Corpus: its last path part and a
# digest.
POLICY_GAUGES = (
    (
        "groundswell_policy_grounding_rate",
        "grounding_rate",
        "Share of claims accepted in the latest finished run of each corpus under each "
        "policy version (corpus: its last path part and a digest).",
    ),
    (
        "groundswell_policy_escape_rate",
        "escape_rate",
        "Share of labelled-wrong candidates admitted in the latest finished run of each "
        "corpus under each policy version.",
    ),
    (
        "groundswell_policy_right_admitted_rate",
        "right_admitted_rate",
        "Share of labelled-right candidates admitted in the latest finished run of each "
        "corpus under each policy version.",
    ),
    (
        "groundswell_policy_review_rate",
        "review_rate",
        "Share of candidates sent to review (needs_verification) in the latest finished run "
        "of each corpus under each policy version.",
    ),
)


class QueueCollector:
    """Read at scrape time, bounded labels: broker queue lengths (any broker), active runs and
    how long the most idle of them has gone without progress (Redis reads), and the rates of
    the latest finished run per corpus and policy version."""

    def __init__(self, service_factory, app_factory) -> None:
        self._service = service_factory
        self._app = app_factory

    def describe(self):
        # Without this the registry would call collect() (and Redis) at registration.
        return []

    def collect(self):
        service = self._service()
        depth = GaugeMetricFamily(
            "groundswell_queue_length", "Messages waiting per queue.", labels=["queue"]
        )
        active = GaugeMetricFamily("groundswell_runs_active", "Runs not yet finished.")
        pending = GaugeMetricFamily(
            "groundswell_pending_batches",
            "Batches the active runs have sent to each queue and not yet recorded: waiting, "
            "reserved by a worker or running (what the autoscaler scales on; a queue's length "
            "misses the reserved ones).",
            labels=["queue"],
        )
        idle = GaugeMetricFamily(
            "groundswell_run_idle_seconds",
            "Seconds since the active run that has gone longest without progress last "
            "progressed (created, a planning step, a batch recorded, a finalize step); 0 with "
            "no active run.",
        )
        unconsumed = GaugeMetricFamily(
            "groundswell_queues_unconsumed",
            "Active runs with work on this queue while no live worker consumes it (they wait "
            "until one starts).",
            labels=["queue"],
        )
        labels = ["corpus", "policy", "version"]
        lag = GaugeMetricFamily(
            "groundswell_stream_lag_seconds",
            "Age of the oldest event a followed corpus has not yet checked (waiting for its "
            "inputs, ready, or in the running window's run); 0 when all are checked.",
            labels=labels,
        )
        per_policy = [
            (key, GaugeMetricFamily(name, text, labels=labels)) for name, key, text in POLICY_GAUGES
        ]
        try:
            from groundswell.workers.app import QUEUE_OF, queue_depths

            for queue, n in queue_depths(self._app()).items():
                depth.add_metric([queue], n)
            run_ids = service.runs.active_run_ids()
            active.add_metric([], len(run_ids))
            for kind, n in service.runs.outstanding_batches(run_ids).items():
                pending.add_metric([QUEUE_OF[kind]], n)
            progressed = [t for t in service.runs.progressed_at(run_ids) if t]
            idle.add_metric([], max(0.0, time.time() - min(progressed)) if progressed else 0.0)
            for queue, n in unconsumed_queues(service.runs, run_ids).items():
                unconsumed.add_metric([queue], n)
            latest = service.runs.policy_latest().items()
            for key, rates in newest_series(latest, "finished_at"):
                for rate, family in per_policy:
                    if rates.get(rate) is not None:
                        family.add_metric(list(key), rates[rate])
            reviews = list(review_families(service.runs.review_latest()))
            for key, numbers in newest_series(stream_lags(service), "at"):
                lag.add_metric(list(key), numbers["lag"])  # the most behind first
        except Exception:
            return  # a scrape must not fail because Redis is down; readyz reports that
        yield from (
            depth,
            active,
            pending,
            idle,
            unconsumed,
            *(family for _, family in per_policy),
            *reviews,
            lag,
        )


class _NoStreams:
    def records(self) -> list:
        return []

    def lags(self) -> dict:
        return {}


def followed(service) -> Any:
    """The streams of followed corpora (shared/streams), not loaded when there are none."""
    from groundswell.shared.streams.store import STREAMS

    if not service.runs.r.scard(STREAMS):
        return _NoStreams()
    from groundswell.shared.streams.service import StreamService

    return StreamService(service)


def stream_lags(service) -> list[tuple[tuple[str, str], dict[str, Any]]]:
    """Per followed (corpus, policy version), its lag, for :func:`newest_series`."""
    lags = followed(service).lags()
    return [(key, {"lag": value, "at": f"{value:020.3f}"}) for key, value in lags.items()]


def unconsumed_queues(runs, run_ids: list[str]) -> dict[str, int]:
    """Per queue, the active runs last noted waiting on it (reconcile and every look at a run
    note it) that no live worker consumes now: a worker that starts clears it at once."""
    from groundswell.shared.runs.service import queues

    consumed = runs.consumed_queues()
    counts = dict.fromkeys(queues(), 0)
    for noted in runs.noted_waiting(run_ids) if consumed is not None else []:
        if noted and noted.get("queue") in counts and noted["queue"] not in consumed:
            counts[noted["queue"]] += 1
    return counts


def newest_series(
    latest: Iterable[tuple[tuple[str, str], dict[str, Any]]], newest_by: str
) -> Iterator[tuple[tuple[str, str, str], dict[str, Any]]]:
    """(corpus label, policy, version) and the numbers of each label set, newest first (by
    the member ``newest_by``): one series per label set, at most MAX_CORPUS_SERIES."""
    from groundswell.shared.metrics import corpus_label

    seen: set[tuple[str, str, str]] = set()
    for (corpus, ref), numbers in sorted(
        latest, key=lambda item: item[1].get(newest_by) or "", reverse=True
    ):
        name, _, version = ref.partition("@")
        key = (corpus_label(corpus), name, version)
        if key in seen or len(seen) >= MAX_CORPUS_SERIES:
            continue
        seen.add(key)
        yield key, numbers


def review_families(latest: dict) -> Iterator[GaugeMetricFamily]:
    """The review gauges: per corpus and policy version, its newest reviewed run's numbers
    (shared/review/gauges.py), as many series as the policy gauges at most."""
    from groundswell.shared.review.gauges import GAUGES, TASK_STATES, TASKS_GAUGE

    labels = ["corpus", "policy", "version"]
    tasks = GaugeMetricFamily(
        TASKS_GAUGE,
        "Review tasks of the newest reviewed run of each corpus under each policy version, "
        "by state (unanswered, answered, disputed).",
        labels=[*labels, "state"],
    )
    families = [
        (member, GaugeMetricFamily(name, text, labels=labels)) for name, member, text in GAUGES
    ]
    for key, numbers in newest_series(latest.items(), "run_id"):
        for state in TASK_STATES:
            tasks.add_metric([*key, state], numbers["tasks"].get(state, 0))
        for member, family in families:
            if numbers.get(member) is not None:
                family.add_metric(list(key), numbers[member])
    yield tasks
    yield from (family for _, family in families)


# The last scrape of this process (monotonic time made, body), under a lock held while one is
# made: concurrent scrapes wait for one answer instead of each reading Redis.
_scraped: tuple[float, bytes] = (float("-inf"), b"")
_scrape_lock = threading.Lock()


def scrape(max_age: float) -> bytes:
    global _scraped
    with _scrape_lock:
        made, body = _scraped
        if time.monotonic() - made >= max_age:
            body = generate_latest(REGISTRY)
            _scraped = (time.monotonic(), body)
        return body


class TeamView:
    """The registry as a team's key sees it: every series, but of those labelled by corpus
    only the series of the key's corpora."""

    def __init__(self, labels: set[str]) -> None:
        self.labels = labels

    def collect(self):
        for family in REGISTRY.collect():
            family.samples = [
                s for s in family.samples if s.labels.get("corpus", None) in (None, *self.labels)
            ]
            yield family


@router.get("/metrics", include_in_schema=False)
def metrics(
    settings: SettingsDep,
    service: ServiceDep,
    key: Annotated[ApiKey | None, Depends(optional_api_key)],
) -> Response:
    """Every series for the operator's scrape (no key) and an unlimited key; for a team's
    key, the per-corpus series of its corpora only (made for the request: a key's requests
    are rate limited)."""
    if key is None or not key.limited:
        return Response(scrape(settings.metrics_cache_seconds), media_type=CONTENT_TYPE_LATEST)
    from groundswell.shared.metrics import corpus_label

    corpora = {*service.runs.corpora(), *(r.corpus for r in followed(service).records())}
    labels = {corpus_label(c) for c in corpora if key.sees(c)}
    return Response(generate_latest(TeamView(labels)), media_type=CONTENT_TYPE_LATEST)
