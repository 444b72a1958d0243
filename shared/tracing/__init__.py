"""OpenTelemetry traces (issue 34): the API, planning, each batch and finalize as spans of
one trace per run, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

Importing this package imports no OpenTelemetry module: :func:`enabled` reads the
environment, :func:`annotate` is a no-op until :func:`setup` ran. Celery's signals
(:mod:`.celery_spans`) carry the trace context in each message's headers, so a run's tasks
are children of the request (``opentelemetry-instrumentation-fastapi``) or the command that
submitted it; spans go out over OTLP/HTTP (:mod:`.otlp`). docs/tracing.md.
"""

from __future__ import annotations

import os
from typing import Any

_active = False


def enabled() -> bool:
    """Whether traces are wanted: an OTLP endpoint is configured (the standard variables)."""
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def active() -> bool:
    return _active


def setup(service_name: str, exporter: Any = None, simple: bool = False) -> None:
    """A tracer provider exporting to OTLP over HTTP (or to ``exporter``: tests pass the SDK's
    in-memory one), and spans of Celery messages and tasks. Once per process (after a fork: a
    prefork child calls it from ``worker_process_init``)."""
    global _active
    if _active:
        return
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        import logging

        logging.getLogger("groundswell").warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: no traces "
            "(pip install 'groundswell[tracing]')"
        )
        return
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        exporter = _exporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    processor = SimpleSpanProcessor(exporter) if simple else BatchSpanProcessor(exporter)
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    from groundswell.shared.tracing import celery_spans

    celery_spans.instrument(provider)
    _active = True


def _exporter() -> Any:
    """OTLP/HTTP protobuf: through ``http.client`` (:mod:`.otlp`), or the SDK's exporter for
    what only it does (client certificates, a credential provider, deflate)."""
    from groundswell.shared.tracing import otlp

    if otlp.handles_environment():
        return otlp.HttpSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def preload() -> None:
    """Import what :func:`setup` needs, without setting anything up: a prefork worker's
    parent calls it before its pool forks, so each child inherits the modules and only
    makes its provider and exporter (which must be made after the fork)."""
    try:
        import opentelemetry.sdk.trace.export  # noqa: F401

        from groundswell.shared.tracing import celery_spans, otlp  # noqa: F401
    except ImportError:
        return  # setup() says so in each child


def instrument_api(app: Any) -> None:
    """The FastAPI instrumentation on ``app`` (a span per request; tasks it sends are its
    children)."""
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, excluded_urls="healthz,readyz,metrics")


def annotate(**attributes: Any) -> None:
    """Set ``groundswell.<name>`` attributes on the current span (nothing when inactive)."""
    if not _active:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    for name, value in attributes.items():
        if value is not None:
            span.set_attribute(f"groundswell.{name}", value)


def flush() -> None:
    if not _active:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    force = getattr(provider, "force_flush", None)
    if force is not None:
        force()


class _NoSpan:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def span(name: str, **attributes: Any) -> Any:
    """A span around a block (a no-op context when inactive)."""
    if not _active:
        return _NoSpan()
    from opentelemetry import trace

    named = {f"groundswell.{k}": v for k, v in attributes.items() if v is not None}
    return trace.get_tracer("groundswell").start_as_current_span(name, attributes=named)
