"""Finished spans as an OTLP ``ExportTraceServiceRequest``, in protobuf's wire format.

The SDK's encoder builds the request from generated protobuf classes: importing them (and
``google.protobuf``) is about 9 ms of CPU in every traced process, for a request of a few
message kinds. This writes the same bytes directly (the fields in number order, the values
proto3 omits left out, a oneof's value always written), grouped by resource, then by
instrumentation scope, in the order the spans come, as the SDK's encoder does;
``tests/shared/test_tracing_otlp.py`` holds it to that encoder's output, byte for byte.
Field numbers: opentelemetry-proto's ``trace/v1/trace.proto`` and ``common/v1/common.proto``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

_FIXED64 = struct.Struct("<Q")
_FIXED32 = struct.Struct("<I")
_DOUBLE = struct.Struct("<d")
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200  # SpanFlags: the parent's remoteness is known / true
_KIND = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # an int64 below zero is its two's complement
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited field: a string, bytes or an embedded message."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _text(number: int, value: str | None) -> bytes:
    return _field(number, value.encode()) if value else b""


def _number(number: int, value: int | None) -> bytes:
    return _varint(number << 3) + _varint(value) if value else b""


def _fixed64(number: int, value: int | None) -> bytes:
    return _varint(number << 3 | 1) + _FIXED64.pack(value) if value else b""


def _fixed32(number: int, value: int) -> bytes:
    return _varint(number << 3 | 5) + _FIXED32.pack(value) if value else b""


def _any(value: Any) -> bytes:
    """An AnyValue (its oneof: the value is written even when it is 0, false or empty)."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return _varint(2 << 3) + _varint(int(value))
    if isinstance(value, str):
        return _field(1, value.encode())
    if isinstance(value, int):
        return _varint(3 << 3) + _varint(value)
    if isinstance(value, float):
        return _varint(4 << 3 | 1) + _DOUBLE.pack(value)
    if isinstance(value, bytes):
        return _field(7, value)
    if isinstance(value, Sequence):
        return _field(5, b"".join(_field(1, _any(v)) for v in value))
    if isinstance(value, Mapping):
        return _field(6, b"".join(_field(1, _key_value(str(k), v)) for k, v in value.items()))
    raise TypeError(f"attribute value of type {type(value).__name__}: {value!r}")


def _key_value(key: str, value: Any) -> bytes:
    return _text(1, key) + _field(2, _any(value))


def _attributes(number: int, attributes: Mapping[str, Any] | None) -> bytes:
    return b"".join(_field(number, _key_value(k, v)) for k, v in (attributes or {}).items())


def _flags(context: Any) -> int:
    return _HAS_IS_REMOTE | (_IS_REMOTE if context is not None and context.is_remote else 0)


def _span(span: Any) -> bytes:
    context = span.get_span_context()
    state = ",".join(f"{k}={v}" for k, v in context.trace_state.items())
    parent = span.parent
    events = b"".join(
        _field(
            11,
            _fixed64(1, event.timestamp)
            + _text(2, event.name)
            + _attributes(3, event.attributes)
            + _number(4, event.dropped_attributes),
        )
        for event in span.events
    )
    links = b"".join(
        _field(
            13,
            _field(1, link.context.trace_id.to_bytes(16, "big"))
            + _field(2, link.context.span_id.to_bytes(8, "big"))
            + _attributes(4, link.attributes)
            + _number(5, link.dropped_attributes)
            + _fixed32(6, _flags(link.context)),
        )
        for link in span.links
    )
    status = span.status
    return (
        _field(1, context.trace_id.to_bytes(16, "big"))
        + _field(2, context.span_id.to_bytes(8, "big"))
        + _text(3, state)
        + (_field(4, parent.span_id.to_bytes(8, "big")) if parent else b"")
        + _text(5, span.name)
        + _number(6, _KIND[span.kind.name])
        + _fixed64(7, span.start_time)
        + _fixed64(8, span.end_time)
        + _attributes(9, span.attributes)
        + _number(10, span.dropped_attributes)
        + events
        + _number(12, span.dropped_events)
        + links
        + _number(14, span.dropped_links)
        + _field(15, _text(2, status.description) + _number(3, status.status_code.value))
        + _fixed32(16, _flags(parent))
    )


def encode(spans: Sequence[Any]) -> bytes:
    """The ExportTraceServiceRequest of these finished spans (the SDK's ReadableSpan)."""
    grouped: dict[Any, dict[Any, list[bytes]]] = {}
    for span in spans:
        scopes = grouped.setdefault(span.resource, {})
        scopes.setdefault(span.instrumentation_scope or None, []).append(_span(span))
    out = []
    for resource, scopes in grouped.items():
        body = _field(1, _attributes(1, resource.attributes))
        for scope, encoded in scopes.items():
            described = (
                _text(1, scope.name)
                + _text(2, scope.version)
                + _attributes(3, getattr(scope, "attributes", None))
                if scope is not None
                else b""
            )
            schema = _text(3, scope.schema_url) if scope is not None else b""
            body += _field(
                2, _field(1, described) + b"".join(_field(2, s) for s in encoded) + schema
            )
        body += _text(3, resource.schema_url)
        out.append(_field(1, body))
    return b"".join(out)
