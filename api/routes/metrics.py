"""``/metrics``: this process's metrics plus queue depth and active runs, read at scrape time."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.core import GaugeMetricFamily

router = APIRouter(tags=["metrics"])


class QueueCollector:
    """Broker queue lengths and active runs (Redis reads, bounded labels)."""

    def __init__(self, service_factory) -> None:
        self._service = service_factory

    def collect(self):
        service = self._service()
        depth = GaugeMetricFamily("groundswell_queue_length", "Messages waiting per queue.", labels=["queue"])
        active = GaugeMetricFamily("groundswell_runs_active", "Runs not yet finished.")
        try:
            import redis

            broker = redis.Redis.from_url(service.settings.broker_url, socket_timeout=2)
            for queue in ("verify", "admit", "control"):
                depth.add_metric([queue], broker.llen(queue))
            active.add_metric([], len(service.runs.active_run_ids()))
        except Exception:
            return  # a scrape must not fail because Redis is down; readyz reports that
        yield depth
        yield active


@router.get("/metrics", include_in_schema=False)
def metrics() -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
