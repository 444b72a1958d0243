"""Traces in workers: each pool process sets up its tracer provider and Celery's spans after
the fork (a provider's export thread does not survive one), and only when
OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise nothing of OpenTelemetry is imported. A
prefork parent imports what that set-up needs before its pool forks, so the modules are
loaded once per worker, not once per child (and again for each replaced child)."""

from __future__ import annotations

from celery import signals

from groundswell.shared import tracing


@signals.worker_process_init.connect
def _child(**_: object) -> None:
    if tracing.enabled():
        tracing.setup("groundswell-worker")


@signals.worker_init.connect
def _parent(sender=None, **_: object) -> None:
    # A solo or threads pool runs tasks in this process: no child will set it up.
    pool = str(getattr(sender, "pool_cls", "") or "")
    if not tracing.enabled():
        return
    if "solo" in pool or "thread" in pool:
        tracing.setup("groundswell-worker")
    else:  # prefork: import once here, each child inherits the modules
        tracing.preload()


@signals.worker_process_shutdown.connect
def _flush(**_: object) -> None:
    tracing.flush()
