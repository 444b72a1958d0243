"""``/metrics``: this process's metrics plus queue depth and active runs, read at scrape time."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.core import GaugeMetricFamily

router = APIRouter(tags=["metrics"])


class QueueCollector:
    """Broker queue lengths (any broker) and active runs (Redis reads), bounded labels."""

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
        grounding = GaugeMetricFamily(
            "groundswell_policy_grounding_rate",
            "Share of claims accepted in the latest finished run of each policy version.",
            labels=["policy", "version"],
        )
        escapes = GaugeMetricFamily(
            "groundswell_policy_escape_rate",
            "Share of labelled-wrong candidates admitted in the latest finished run of each "
            "policy version.",
            labels=["policy", "version"],
        )
        try:
            from groundswell.workers.app import queue_depths

            for queue, n in queue_depths(self._app()).items():
                depth.add_metric([queue], n)
            active.add_metric([], len(service.runs.active_run_ids()))
            for ref, latest in service.runs.policy_latest().items():
                name, _, version = ref.partition("@")
                if latest.get("grounding_rate") is not None:
                    grounding.add_metric([name, version], latest["grounding_rate"])
                if latest.get("escape_rate") is not None:
                    escapes.add_metric([name, version], latest["escape_rate"])
        except Exception:
            return  # a scrape must not fail because Redis is down; readyz reports that
        yield from (depth, active, grounding, escapes)


@router.get("/metrics", include_in_schema=False)
def metrics() -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
