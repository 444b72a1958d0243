"""OTLP/HTTP span export over the standard library's ``http.client``.

The SDK's ``OTLPSpanExporter`` builds a ``requests`` session when it is made: importing
``requests`` (and ``urllib3``) is about 26 ms of CPU in every traced process, more than the
rest of the set-up together, for a few posts a minute. This exporter sends the same request
(``application/x-protobuf``, the SDK encoder's bytes written by :mod:`.wire` without the
generated protobuf classes) on one kept-alive connection per process, and reads the same standard variables: the endpoint, headers, timeout (seconds, as
the Python SDK reads it), ``gzip`` compression and a CA certificate. Client certificates, a
credential provider or ``deflate`` are left to the SDK's exporter (:func:`handles_environment`).

Imported by :func:`groundswell.shared.tracing.setup` only (it loads the SDK).
"""

from __future__ import annotations

import gzip
import http.client
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Sequence
from urllib.parse import urlsplit

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.util.re import parse_env_headers

from groundswell.shared.tracing import wire

_log = logging.getLogger("groundswell.tracing")

RETRYABLE = frozenset({408, 429, 502, 503, 504})
ATTEMPTS = 4  # then the batch is dropped (as the SDK's exporter does after its retries)

# What only the SDK's exporter does: these send a run's spans through it instead.
_SDK_ONLY = (
    "OTEL_EXPORTER_OTLP_CLIENT_KEY",
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY",
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)


def _env(name: str) -> str:
    """The traces-specific variable, else the general one."""
    return (
        os.environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
        or os.environ.get(f"OTEL_EXPORTER_OTLP_{name}")
        or ""
    ).strip()


def handles_environment() -> bool:
    """Whether this exporter covers what the environment configures (else the SDK's)."""
    if any(os.environ.get(name) for name in _SDK_ONLY):
        return False
    return _env("COMPRESSION").lower() in ("", "none", "gzip")


def endpoint() -> str:
    """The traces URL: the traces variable as given, else the base endpoint + ``/v1/traces``."""
    if url := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return url
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return f"{base.removesuffix('/')}/v1/traces"


class HttpSpanExporter(SpanExporter):
    """Spans to an OTLP/HTTP receiver as protobuf, on one connection kept alive."""

    backoff = 1.0  # seconds before the first retry of a 429 or 5xx, doubling after

    def __init__(self, url: str | None = None) -> None:
        self.url = url or endpoint()
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) OTLP endpoint: {self.url!r}")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            self._timeout = float(_env("TIMEOUT") or 10)
        except ValueError:
            self._timeout = 10.0
        self._gzip = _env("COMPRESSION").lower() == "gzip"
        self._headers = {
            **{k.lower(): v for k, v in parse_env_headers(_env("HEADERS"), liberal=True).items()},
            "content-type": "application/x-protobuf",
        }
        if self._gzip:
            self._headers["content-encoding"] = "gzip"
        self._cafile = _env("CERTIFICATE") or None
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()  # the export thread and a flush at shutdown
        self._shutdown = False

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._https:
                context = ssl.create_default_context(cafile=self._cafile)
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=context
                )
            else:
                self._conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout
                )
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _post(self, body: bytes) -> int | None:
        """The response's status, or None when the connection failed (it is closed)."""
        try:
            conn = self._connection()
            conn.request("POST", self._path, body=body, headers=self._headers)
            response = conn.getresponse()
            response.read()
            if response.will_close:
                self._close()
            return response.status
        except (OSError, http.client.HTTPException) as exc:
            _log.debug("OTLP export to %s: %s", self.url, exc)
            self._close()
            return None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        body = wire.encode(spans)
        if self._gzip:
            body = gzip.compress(body)
        deadline = time.monotonic() + self._timeout
        with self._lock:
            for attempt in range(ATTEMPTS):
                status = self._post(body)
                if status is not None and 200 <= status < 300:
                    return SpanExportResult.SUCCESS
                if status is not None and status not in RETRYABLE:
                    break
                # A kept-alive connection the receiver closed fails once: retry at once.
                pause = 0.0 if status is None and attempt == 0 else self.backoff * 2**attempt
                pause *= random.uniform(0.8, 1.2)
                if attempt == ATTEMPTS - 1 or time.monotonic() + pause > deadline:
                    break
                time.sleep(pause)
        _log.warning(
            "OTLP export of %d spans to %s failed (%s): dropped",
            len(spans),
            self.url,
            status if status is not None else "no connection",
        )
        return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True  # nothing is held here: the span processor holds the queue

    def shutdown(self) -> None:
        self._shutdown = True
        with self._lock:
            self._close()
