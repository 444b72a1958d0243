"""The FastAPI application: routers per resource, request metrics, readable errors."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import REGISTRY, Counter, Histogram

from groundswell.api.guards import BodyLimit, security_headers
from groundswell.api.routes import (
    corpora,
    docs,
    exports,
    gates,
    health,
    hooks,
    ledger,
    metrics,
    policies,
    receipts,
    review,
    review_page,
    runs,
    schedules,
    streams,
)
from groundswell.shared import __version__
from groundswell.shared.policies import PolicyConflict, PolicyError
from groundswell.shared.settings import Settings, get_settings

HTTP_REQUESTS = Counter(
    "groundswell_http_requests", "HTTP requests by route template.", ["method", "route", "status"]
)
HTTP_DURATION = Histogram(
    "groundswell_http_request_duration_seconds", "HTTP request latency.", ["method", "route"]
)
_collector_registered = False
# The settings of the newest app: the queue gauges (one collector a process) read its Redis.
_collector_settings: list[Settings] = []


def _describe(errors: list[dict]) -> str:
    parts = []
    for error in errors:
        loc = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body",))
        parts.append(f"{loc}: {error.get('msg')}" if loc else str(error.get("msg")))
    return "; ".join(parts)


def create_app(settings: Settings | None = None) -> FastAPI:
    global _collector_registered
    settings = settings or get_settings()
    from groundswell.shared.runs import kinds

    kinds.load(settings.kinds_extra)  # the unit kinds its routes and metrics name
    app = FastAPI(
        title="groundswell",
        version=__version__,
        description="Verify quotations and admit extracted facts at corpus scale. "
        "Every /v1 route needs an X-API-Key header.",
        # /docs is routes/docs.py (assets served here, its own policy); ReDoc would need a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.dependency_overrides[get_settings] = lambda: settings
    from groundswell.shared import tracing

    if tracing.enabled():
        tracing.setup("groundswell-api")  # warns and stays off without the tracing extra
    if tracing.active():
        tracing.instrument_api(app)
    for router in (
        runs.router,
        corpora.router,
        gates.router,
        exports.router,
        hooks.router,
        receipts.router,
        policies.router,
        schedules.router,
        streams.router,
        review.router,
        review_page.router,
        ledger.router,
        health.router,
        metrics.router,
        docs.router,
    ):
        app.include_router(router)

    _collector_settings[:] = [settings]
    if not _collector_registered:
        from groundswell.api.deps import get_app, get_service

        REGISTRY.register(
            metrics.QueueCollector(
                lambda: get_service(_collector_settings[0]),
                lambda: get_app(_collector_settings[0]),
            )
        )
        _collector_registered = True

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        return JSONResponse(
            status_code=422,
            content={
                "detail": _describe(errors),
                "errors": [
                    {"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")}
                    for e in errors
                ],
            },
        )

    @app.exception_handler(PolicyError)
    async def _policy(_: Request, exc: PolicyError) -> JSONResponse:
        # An unknown or malformed policy reference anywhere in a request.
        code = 409 if isinstance(exc, PolicyConflict) else 422
        return JSONResponse(status_code=code, content={"detail": str(exc)})

    @app.middleware("http")
    async def _metrics(request: Request, call_next):
        start = time.perf_counter()
        response = await call_next(request)
        security_headers(response.headers, response.headers.get("content-type", ""))
        route = request.scope.get("route")
        template = getattr(route, "path", "unmatched")  # a template, never a raw path: bounded
        HTTP_REQUESTS.labels(request.method, template, str(response.status_code)).inc()
        HTTP_DURATION.labels(request.method, template).observe(time.perf_counter() - start)
        return response

    app.add_middleware(BodyLimit, limit=settings.api_max_body_bytes)
    if settings.forwarded_allow_ips:
        # Outermost: the rate limits, the cookie's Secure flag and the CSRF origin check all
        # see the client's address and scheme as the trusted proxy gives them.
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    return app
