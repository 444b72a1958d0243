"""Run the sample corpus through the API and a real Celery worker in this process, with the
OpenTelemetry SDK's in-memory exporter, then print the finished spans as JSON lines.

    python -m tests.workers.tracing_harness     (settings from GROUNDSWELL_* in the environment)

The worker is Celery's own (``celery.contrib.testing.worker``: a WorkController consuming the
real Redis broker, solo pool, in a thread), so its spans and the API's land in one exporter.
"""

from __future__ import annotations

import json
import sys
import time

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundswell.shared import tracing


def main() -> None:
    exporter = InMemorySpanExporter()
    tracing.setup("groundswell-test", exporter=exporter, simple=True)

    from celery.contrib.testing.worker import start_worker
    from fastapi.testclient import TestClient

    import groundswell.workers.tasks  # noqa: F401 (the tasks, on the module's app)
    from groundswell.api.main import create_app
    from groundswell.shared.cli.runs import SAMPLE_CORPUS
    from groundswell.shared.runs.models import TERMINAL_STATES
    from groundswell.shared.runs.service import queues
    from groundswell.shared.settings import get_settings
    from groundswell.workers.app import app

    settings = get_settings()
    key = sys.argv[1]
    with (
        start_worker(app, pool="solo", perform_ping_check=False, queues=list(queues())),
        TestClient(create_app(settings)) as client,
    ):
        headers = {"X-API-Key": key}
        run = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}, headers=headers).json()
        deadline = time.monotonic() + 180
        while client.get(f"/v1/runs/{run['id']}", headers=headers).json()["state"] not in (
            TERMINAL_STATES
        ):
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.3)
        time.sleep(1)  # the finalize task's own span ends after the run is marked finished
    tracing.flush()
    print(json.dumps({"run_id": run["id"]}))
    for span in exporter.get_finished_spans():
        print(
            json.dumps(
                {
                    "name": span.name,
                    "trace": format(span.context.trace_id, "032x"),
                    "span": format(span.context.span_id, "016x"),
                    "parent": format(span.parent.span_id, "016x") if span.parent else None,
                    "attributes": dict(span.attributes or {}),
                },
                default=str,
            )
        )


if __name__ == "__main__":
    main()
