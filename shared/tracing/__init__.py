"""OpenTelemetry traces (issue 34): the API, planning, each batch and finalize as spans of
one trace per run, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

Importing this package imports no OpenTelemetry module: :func:`enabled` reads the
environment, :func:`annotate` is a no-op until :func:`setup` ran. The instrumentations
(``opentelemetry-instrumentation-celery`` and ``-fastapi``) propagate the trace context in
Celery's message headers, so a run's tasks are children of the request (or the command)
that submitted it. docs/tracing.md.
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
    in-memory one), and the Celery instrumentation. Once per process (after a fork: a
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
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    processor = SimpleSpanProcessor(exporter) if simple else BatchSpanProcessor(exporter)
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    _active = True


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
