"""Spans of Celery messages and tasks, from Celery's signals.

A message sent is an ``apply_async/<task>`` span (producer) whose context goes in the
message's headers as W3C ``traceparent`` (and ``tracestate``, baggage: whatever the
configured propagators write), and a task run is a ``run/<task>`` span (consumer), child of
the context its message carries, current while the task runs (so :func:`annotate` and
the spans of messages it sends hang under it). These are the names, kinds and header
fields ``opentelemetry-instrumentation-celery`` uses, so a process instrumented with it
links with these; the package itself is not used because importing it (its dependency
checks load ``packaging.requirements``, its semantic conventions, metrics set-up) cost
about 22 ms of CPU in each traced process, a third of tracing's set-up, and every span
carried ten attributes copied from the request that tell nothing a run's trace needs.

Imported by :func:`groundswell.shared.tracing.setup` only.
"""

from __future__ import annotations

from typing import Any

from celery import signals
from opentelemetry import context, propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, Status, StatusCode


class _RequestGetter(Getter[Any]):
    """Header fields of a task's message, as its request's attributes (Celery puts a
    message's headers there)."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        value = getattr(carrier, key, None)
        if value is None:
            return None
        return [value] if isinstance(value, str) else [str(v) for v in value]

    def keys(self, carrier: Any) -> list[str]:
        return []


_getter = _RequestGetter()
_tracer: trace.Tracer | None = None
_sending: dict[str, trace.Span] = {}  # task id -> its apply_async span, until it is sent
_running: dict[str, tuple[trace.Span, object]] = {}  # task id -> its run span, context token


def instrument(provider: trace.TracerProvider) -> None:
    """Connect the handlers (once per process; again only changes the provider)."""
    global _tracer
    first = _tracer is None
    _tracer = provider.get_tracer("groundswell.celery")
    if first:
        signals.before_task_publish.connect(_before_publish, weak=False)
        signals.after_task_publish.connect(_after_publish, weak=False)
        signals.task_prerun.connect(_prerun, weak=False)
        signals.task_failure.connect(_failure, weak=False)
        signals.task_retry.connect(_retry, weak=False)
        signals.task_postrun.connect(_postrun, weak=False)


def _message_id(headers: dict | None, body: Any) -> str | None:
    if headers and headers.get("id"):  # message protocol 2
        return headers["id"]
    return body.get("id") if isinstance(body, dict) else None  # protocol 1


def _before_publish(sender: Any = None, headers: dict | None = None, body: Any = None, **_):
    task_id = _message_id(headers, body)
    if _tracer is None or task_id is None or headers is None:
        return
    name = str(getattr(sender, "name", sender))
    span = _tracer.start_span(
        f"apply_async/{name}",
        kind=SpanKind.PRODUCER,
        attributes={
            "celery.action": "apply_async",
            "celery.task_name": name,
            "messaging.message.id": task_id,
        },
    )
    propagate.inject(headers, context=trace.set_span_in_context(span))
    _sending[task_id] = span


def _after_publish(headers: dict | None = None, body: Any = None, **_: Any) -> None:
    task_id = _message_id(headers, body)
    span = _sending.pop(task_id, None) if task_id else None
    if span is not None:
        span.end()


def _prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if _tracer is None or task_id is None or task is None:
        return
    parent = propagate.extract(task.request, getter=_getter)
    span = _tracer.start_span(
        f"run/{task.name}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes={
            "celery.action": "run",
            "celery.task_name": task.name,
            "messaging.message.id": task_id,
        },
    )
    _running[task_id] = (span, context.attach(trace.set_span_in_context(span, parent)))


def _failure(task_id: str | None = None, exception: BaseException | None = None, **kw: Any):
    entry = _running.get(task_id) if task_id else None
    if entry is None:
        return
    expected = getattr(kw.get("sender"), "throws", ()) or ()
    if exception is not None and expected and isinstance(exception, tuple(expected)):
        return  # a task's declared outcome, not an error
    span = entry[0]
    if exception is not None:
        span.record_exception(exception)
    span.set_status(Status(StatusCode.ERROR, str(exception) if exception else None))


def _retry(request: Any = None, reason: Any = None, **_: Any) -> None:
    entry = _running.get(getattr(request, "id", None) or "")
    if entry is not None and reason is not None:
        entry[0].set_attribute("celery.retry.reason", str(reason))


def _postrun(task_id: str | None = None, state: str | None = None, **_: Any) -> None:
    entry = _running.pop(task_id, None) if task_id else None
    if entry is None:
        return
    span, token = entry
    if state:
        span.set_attribute("celery.state", state)
    context.detach(token)
    span.end()
