"""What keeps the API from being abused: body size, request rates, headers, keys in URLs.

Rates are counted with the ``limits`` library in the run-state Redis (a moving window), so
they hold across API replicas: per API key, per client address (wrong and missing keys
included), failed authentications per client address and per presented key digest (a
tighter limit), and run submissions per key. While Redis is unreachable each API process
counts them itself: an outage makes nothing free. Failures never refuse the right key: a
key is 256 random bits, so the failures limit bounds the load of guessing, and must not let
others' failures (behind one proxy or NAT) lock a reviewer out.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from fastapi import HTTPException, Request, status
from limits import parse
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groundswell.shared.settings import Settings

log = logging.getLogger("groundswell.api")

# Query parameters that look like credentials: a key in a URL ends up in logs and histories.
KEY_PARAMETERS = {"api_key", "apikey", "api-key", "x-api-key", "key", "token", "access_token"}

HTML_HEADERS = {
    # The report is self-contained: inline styles, no scripts, no frames, nothing fetched.
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


class Limits:
    """The API's rate limits, counted in Redis."""

    def __init__(self, settings: Settings) -> None:
        storage = storage_from_string(settings.state_redis_url)
        self.limiter = MovingWindowRateLimiter(storage)
        self.local = MovingWindowRateLimiter(MemoryStorage())  # while Redis is unreachable
        self.per_key = parse(settings.api_rate_per_key)
        self.per_address = parse(settings.api_rate_per_address)
        self.failed_auth = parse(settings.api_rate_failed_auth)
        self.runs = parse(settings.api_rate_runs)

    def failed(self, address: str, digest: str | None) -> None:
        """One failed authentication, counted per client address and per the digest of the
        key presented (one key tried from many addresses); 429 past either limit."""
        refused = None
        for identity in (("failed", address), ("failed-key", digest)):
            if identity[1] is None:
                continue
            try:
                self.hit(self.failed_auth, *identity)
            except HTTPException as exc:
                refused = refused or exc
        if refused is not None:
            raise refused

    def hit(self, limit: Any, *identity: str) -> None:
        """Count one request; 429 with Retry-After once the limit is reached."""
        limiter = self.limiter
        try:
            allowed = limiter.hit(limit, "groundswell", *identity)
        except Exception as exc:  # Redis down: counted here, so limits still hold
            log.warning("rate limit counted in this process (Redis: %s)", exc)
            limiter = self.local
            allowed = limiter.hit(limit, "groundswell", *identity)
        if allowed:
            return
        try:
            reset = limiter.get_window_stats(limit, "groundswell", *identity).reset_time
            retry = max(1, math.ceil(reset - time.time()))
        except Exception:
            retry = 1
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"too many requests ({limit}): retry in {retry} s",
            headers={"Retry-After": str(retry)},
        )


_limits: dict[int, Limits] = {}


def limits_for(settings: Settings) -> Limits:
    found = _limits.get(id(settings))
    if found is None:
        found = _limits[id(settings)] = Limits(settings)
    return found


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def refuse_key_in_url(request: Request) -> None:
    named = KEY_PARAMETERS & {name.lower() for name in request.query_params}
    if named:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"an API key goes in the X-API-Key header, never in the URL ({sorted(named)[0]}=)",
        )


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes (413), by Content-Length or as they stream."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        # Read the body here, up to the limit, then hand it on: a chunked body without a
        # length is bounded as well, before anything parses it.
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = b'{"detail": "request body too large: at most %d bytes"}' % self.limit
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def security_headers(headers: Any, content_type: str) -> None:
    headers["x-content-type-options"] = "nosniff"
    if "cache-control" not in headers:
        # What a key or a session reads is nobody else's: no shared cache or browser history
        # keeps it (static assets say otherwise themselves).
        headers["cache-control"] = "no-store"
    if content_type.startswith("text/html"):
        for name, value in HTML_HEADERS.items():
            # The review page sets its own policy (its script, this API); everything else
            # gets the report's (no scripts at all).
            if name not in headers:
                headers[name] = value
