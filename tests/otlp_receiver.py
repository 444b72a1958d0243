"""An OTLP/HTTP receiver on loopback for tests of exported spans."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Receiver:
    """An OTLP/HTTP receiver on loopback: answers each POST with the next scripted status
    (then 200), and keeps what it got and on which connection."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.got: list[tuple[dict[str, str], bytes, int]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.got.append((headers, body, id(self.connection)))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests(self) -> list[ExportTraceServiceRequest]:
        out = []
        for headers, body, _ in self.got:
            if headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            out.append(ExportTraceServiceRequest.FromString(body))
        return out

    def spans(self) -> list[tuple[str, object]]:
        """Every span received, with its resource's ``service.name``."""
        out = []
        for request in self.requests():
            for rs in request.resource_spans:
                service = next(
                    (
                        a.value.string_value
                        for a in rs.resource.attributes
                        if a.key == "service.name"
                    ),
                    "",
                )
                out.extend((service, s) for ss in rs.scope_spans for s in ss.spans)
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
