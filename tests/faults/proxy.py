"""A small fault-injecting HTTP proxy for an S3 endpoint (moto's server).

Each request is forwarded to the upstream, or hit by one fault, drawn per request with a
seeded random generator:

- ``error``: a 503 SlowDown reply, the request never forwarded;
- ``drop``: the connection closed before any reply, the request never forwarded;
- ``truncate`` (GET with a body): the reply's headers promise the whole body, half is sent;
- ``lost``: the request is forwarded (a PUT takes effect) and the reply is lost.

``stats`` counts what was done, so a test can say how many faults it survived.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class FaultProxy:
    def __init__(self, upstream: str, rates: dict[str, float], seed: int = 7) -> None:
        self.upstream = urlsplit(upstream)
        self.rates = dict(rates)
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        self.enabled = True
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy.draw(self.command)
                if fault == "error":
                    payload = b"<Error><Code>SlowDown</Code><Message>injected</Message></Error>"
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                upstream = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                upstream.request(self.command, self.path, body=body, headers=headers)
                reply = upstream.getresponse()
                data = reply.read()
                upstream.close()
                if fault == "lost":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(reply.status, reply.reason)
                for key, value in reply.getheaders():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if fault == "truncate":
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def draw(self, method: str) -> str | None:
        with self.lock:
            self.stats["requests"] += 1
            if not self.enabled:
                return None
            roll = self.random.random()
            for fault, rate in self.rates.items():
                if fault == "truncate" and method != "GET":
                    continue
                if roll < rate:
                    self.stats[fault] += 1
                    return fault
                roll -= rate
            return None

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
