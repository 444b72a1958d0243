"""The OTLP/HTTP span exporter over http.client: what a receiver gets (the SDK's protobuf
request, headers, gzip), one connection kept alive, retries of 5xx, and the environment it
leaves to the SDK's exporter; and what a prefork parent loads before its pool forks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from groundswell.shared.tracing import otlp
from groundswell.workers.embedded import service_env
from tests.otlp_receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for name in list(os.environ):
        if name.startswith(("OTEL_EXPORTER_OTLP_", "OTEL_PYTHON_EXPORTER_")):
            monkeypatch.delenv(name)
    return monkeypatch


def _spans(exporter: otlp.HttpSpanExporter, *names: str) -> None:
    """End a span per name through a private provider (the global one stays unset)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "t"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for name in names:
        with tracer.start_as_current_span(name, attributes={"groundswell.units": 3}):
            pass


def test_spans_arrive_as_the_sdk_encodes_them_on_one_connection(receiver, clean_env):
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url + "/")
    clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=ours,authorization=Bearer%20k")
    exporter = otlp.HttpSpanExporter()
    assert exporter.url == receiver.url + "/v1/traces"
    _spans(exporter, "one", "two", "three")
    requests = receiver.requests()
    assert len(requests) == 3
    spans = [
        s for r in requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    assert [s.name for s in spans] == ["one", "two", "three"]
    assert all(s.attributes[0].key == "groundswell.units" for s in spans)
    assert all(s.attributes[0].value.int_value == 3 for s in spans)
    service = requests[0].resource_spans[0].resource.attributes
    assert {"service.name": "t"}.items() <= {a.key: a.value.string_value for a in service}.items()
    headers = receiver.got[0][0]
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["x-team"] == "ours" and headers["authorization"] == "Bearer k"
    assert len({conn for *_, conn in receiver.got}) == 1  # kept alive
    exporter.shutdown()
    assert exporter.export([]) is SpanExportResult.FAILURE


def test_gzip_and_the_traces_endpoint_as_given(receiver, clean_env):
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # not used
    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url + "/custom/path")
    clean_env.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    exporter = otlp.HttpSpanExporter()
    assert exporter.url == receiver.url + "/custom/path"
    _spans(exporter, "zipped")
    assert receiver.got[0][0]["content-encoding"] == "gzip"
    assert receiver.requests()[0].resource_spans[0].scope_spans[0].spans[0].name == "zipped"


def test_a_5xx_is_retried_and_a_4xx_is_not(receiver, clean_env):
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    exporter = otlp.HttpSpanExporter()
    exporter.backoff = 0.01
    provider = TracerProvider()
    span = provider.get_tracer("t").start_span("s")
    span.end()
    receiver.statuses = [503, 502]
    assert exporter.export([span]) is SpanExportResult.SUCCESS
    assert len(receiver.got) == 3
    receiver.statuses = [400]
    assert exporter.export([span]) is SpanExportResult.FAILURE
    assert len(receiver.got) == 4
    receiver.statuses = [503] * otlp.ATTEMPTS
    assert exporter.export([span]) is SpanExportResult.FAILURE
    assert len(receiver.got) == 4 + otlp.ATTEMPTS


def test_no_receiver_fails_the_batch_without_raising(clean_env):
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # discard: refused
    clean_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.5")
    exporter = otlp.HttpSpanExporter()
    exporter.backoff = 0.01
    span = TracerProvider().get_tracer("t").start_span("s")
    span.end()
    assert exporter.export([span]) is SpanExportResult.FAILURE


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OTEL_EXPORTER_OTLP_CLIENT_KEY", "/k.pem"),
        ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "/c.pem"),
        ("OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER", "x"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "deflate"),
    ],
)
def test_what_only_the_sdk_exporter_does_goes_to_it(clean_env, name, value):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from groundswell.shared import tracing

    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    assert otlp.handles_environment()
    assert isinstance(tracing._exporter(), otlp.HttpSpanExporter)
    clean_env.setenv(name, value)
    assert not otlp.handles_environment()
    if "CREDENTIAL" in name:  # the SDK's exporter looks the provider up (and there is none)
        with pytest.raises(RuntimeError, match="opentelemetry_otlp_credential_provider"):
            tracing._exporter()
    else:
        assert isinstance(tracing._exporter(), OTLPSpanExporter)


def test_preload_imports_the_set_up_and_sets_nothing_up():
    """What a prefork parent runs before its pool forks: the modules, no provider, no thread
    (an export thread would not survive the fork), neither requests (the stdlib's client) nor
    protobuf (the wire encoding)."""
    code = (
        "import sys, threading\n"
        "from groundswell.shared import tracing\n"
        "tracing.preload()\n"
        "from opentelemetry import trace\n"
        "print(all(m in sys.modules for m in ('opentelemetry.sdk.trace.export',\n"
        "    'groundswell.shared.tracing.otlp', 'groundswell.shared.tracing.celery_spans')),\n"
        "    tracing.active(), type(trace.get_tracer_provider()).__name__,\n"
        "    threading.active_count(), 'requests' in sys.modules, 'google.protobuf' in sys.modules)\n"
    )
    env = {**service_env(), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "ProxyTracerProvider", "1", "False", "False"]


def test_a_failed_task_span_says_error_and_a_declared_outcome_does_not():
    """Celery's signals in a process with an in-memory exporter (eager tasks: run, failure and
    postrun signals as in a worker; the sent message's span and headers by a real publish to
    an in-memory broker)."""
    code = """
import json
from celery import Celery
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from groundswell.shared import tracing
exporter = InMemorySpanExporter()
tracing.setup("t", exporter=exporter, simple=True)
app = Celery("t", broker="memory://")
app.conf.task_always_eager = False

@app.task(name="t.boom")
def boom():
    raise ValueError("no")

@app.task(name="t.declared", throws=(KeyError,))
def declared():
    raise KeyError("expected")

@app.task(name="t.fine")
def fine():
    tracing.annotate(units=2)

for task in (boom, declared, fine):
    try:
        task.apply()
    except Exception:
        pass
with tracing.span("outer"):
    sent = fine.apply_async()
with app.connection_for_read() as conn:
    message = conn.SimpleQueue("celery").get(timeout=5)
    headers = message.headers
out = []
for s in exporter.get_finished_spans():
    out.append({"name": s.name, "status": s.status.status_code.name, "trace": s.context.trace_id,
                "span": s.context.span_id, "parent": s.parent.span_id if s.parent else None,
                "events": [e.name for e in s.events], "attrs": dict(s.attributes)})
print(json.dumps({"spans": out, "traceparent": headers.get("traceparent"), "id": sent.id}))
"""
    env = {k: v for k, v in service_env().items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    result = json.loads(done.stdout.splitlines()[-1])
    spans = {s["name"]: s for s in result["spans"]}
    assert spans["run/t.boom"]["status"] == "ERROR"
    assert spans["run/t.boom"]["events"] == ["exception"]
    assert spans["run/t.boom"]["attrs"]["celery.state"] == "FAILURE"
    assert spans["run/t.declared"]["status"] == "UNSET"
    assert spans["run/t.fine"]["attrs"]["groundswell.units"] == 2  # current while it ran
    sent, outer = spans["apply_async/t.fine"], spans["outer"]
    assert sent["parent"] == outer["span"] and sent["attrs"]["messaging.message.id"] == result["id"]
    trace_hex, span_hex = format(sent["trace"], "032x"), format(sent["span"], "016x")
    # the message carries the send's span as the task's parent (flags: sampled, and more)
    assert result["traceparent"].startswith(f"00-{trace_hex}-{span_hex}-")


def test_the_wire_encoding_is_the_sdk_encoders_byte_for_byte():
    """Every field the encoder writes: two resources (one with a schema), three scopes, each
    span kind, a remote parent with a trace state, events, links, statuses and attribute
    values of every type, zeros and empties among them (a oneof writes them)."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import (
        Link,
        NonRecordingSpan,
        SpanContext,
        Status,
        StatusCode,
        TraceFlags,
        TraceState,
    )

    from groundswell.shared.tracing import wire

    memory = InMemorySpanExporter()
    first = TracerProvider(resource=Resource.create({"service.name": "a", "n": 3}))
    second = TracerProvider(resource=Resource({"service.name": "b"}, schema_url="https://x/1"))
    for provider in (first, second):
        provider.add_span_processor(SimpleSpanProcessor(memory))
    scoped = first.get_tracer("s1", "1.0", schema_url="https://s/1")
    remote = SpanContext(
        0xABC,
        0xDEF,
        is_remote=True,
        trace_flags=TraceFlags(1),
        trace_state=TraceState([("k", "v")]),
    )
    values = {"s": "x", "e": "", "b": False, "t": True, "i": 0, "neg": -5, "big": 2**62}
    values |= {"f": 0.0, "g": 1.5, "l": ["a", "b"], "li": [1, 2], "lb": [True]}
    with scoped.start_as_current_span("root", kind=trace.SpanKind.SERVER, attributes=values) as s:
        s.add_event("event", {"k": 1})
        s.add_event("bare")
        links = [Link(remote, {"why": "x"}), Link(remote)]
        with first.get_tracer("s2").start_as_current_span("child", links=links) as child:
            child.set_status(Status(StatusCode.ERROR, "bad"))
            child.record_exception(ValueError("v"))
    under_remote = trace.set_span_in_context(NonRecordingSpan(remote))
    for kind in trace.SpanKind:
        second.get_tracer("s3").start_span(kind.name, context=under_remote, kind=kind).end()
    ok = scoped.start_span("ok")
    ok.set_status(Status(StatusCode.OK))
    ok.end()
    spans = memory.get_finished_spans()
    assert len(spans) == 8
    assert wire.encode(spans) == encode_spans(spans).SerializeToString()
    assert wire.encode([]) == encode_spans([]).SerializeToString() == b""
