"""Dependencies, as ``Annotated`` aliases: settings, the run service, the API key and the
scope a route needs."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import redis
from fastapi import Depends, HTTPException, Request, Security, status
from fastapi.security import APIKeyHeader

from groundswell.api import session
from groundswell.api.guards import client_address, limits_for, refuse_key_in_url
from groundswell.shared.runs.service import RunService
from groundswell.shared.runs.state import RunStore, redis_client
from groundswell.shared.settings import (
    API_SCOPES,
    ApiKey,
    Settings,
    get_settings,
    hash_api_key,
)

api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)

SettingsDep = Annotated[Settings, Depends(get_settings)]


_services: dict[int, RunService] = {}
_apps: dict[int, Any] = {}


def get_app(settings: Settings):
    """One Celery app (the producer of tasks) per settings object."""
    app = _apps.get(id(settings))
    if app is None:
        from groundswell.workers.app import make_app

        app = _apps[id(settings)] = make_app(settings)
    return app


def get_service(settings: SettingsDep) -> RunService:
    """One service (Redis client, Celery producer) per settings object."""
    service = _services.get(id(settings))
    if service is None:
        from groundswell.workers.app import enqueue_with

        runs = RunStore(redis_client(settings.state_redis_url))
        service = RunService(settings, runs, enqueue_with(get_app(settings)))
        _services[id(settings)] = service
    return service


ServiceDep = Annotated[RunService, Depends(get_service)]


def require_api_key(
    request: Request,
    settings: SettingsDep,
    key: Annotated[str | None, Security(api_key_header)],
) -> ApiKey:
    """The caller's key (name, digest, scopes); 401 without a key, 403 with a wrong one, 429
    past a rate limit (per client address for everyone, tighter for failures per address
    and per presented key digest, then per key). Without the header, the review page's session cookie stands for its key; an unsafe
    method signed in so needs the session's CSRF token (403 naming what is missing)."""
    refuse_key_in_url(request)
    limits = limits_for(settings)
    address = client_address(request)
    limits.hit(limits.per_address, "address", address)
    if not key and session.cookie_of(request, settings) is not None:
        return _session_key(request, settings, limits, address)
    if not key:
        limits.failed(address, None)
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing API key: send it in the X-API-Key header",
            headers={"WWW-Authenticate": "APIKey"},
        )
    presented = hash_api_key(key)
    found = session.find_key(settings, presented)
    if found is None:
        limits.failed(address, presented)
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid API key")
    limits.hit(limits.per_key, "key", found.digest)
    return found


def optional_api_key(
    request: Request,
    settings: SettingsDep,
    key: Annotated[str | None, Security(api_key_header)],
) -> ApiKey | None:
    """The caller's key when it sends one (checked as :func:`require_api_key` checks it),
    else None: for routes that answer without a key and narrow what a team's key sees."""
    if not key and session.cookie_of(request, settings) is None:
        return None
    return require_api_key(request, settings, key)


def _session_key(request: Request, settings: Settings, limits: Any, address: str) -> ApiKey:
    value = session.cookie_of(request, settings) or ""
    try:
        found = session.open_session(settings, value)
    except redis.RedisError as exc:
        raise session.unavailable() from exc
    if found is None:
        limits.failed(address, None)
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "the session has expired or its key is no longer configured: sign in again at "
            "/review/sign-in (or send an X-API-Key header)",
            headers={"WWW-Authenticate": "APIKey"},
        )
    body = None
    if request.method not in session.SAFE_METHODS and session.is_form(request):
        body = anyio.from_thread.run(request.body)  # dependencies run in a worker thread
    session.check_csrf(settings, request, value, body)
    limits.hit(limits.per_key, "key", found.digest)
    return found


def require_scope(scope: str):
    """A dependency: the caller's key, when it has ``scope`` (or ``admin``); else 403 naming
    the key, its scopes and the scope the route needs."""

    def check(key: Annotated[ApiKey, Depends(require_api_key)]) -> ApiKey:
        if not key.allows(scope):
            has = "+".join(s for s in API_SCOPES if s in key.scopes)
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                f"the API key {key.name!r} has the scopes {has}; this route needs the "
                f"scope {scope!r} (or admin)",
            )
        return key

    check.__name__ = f"require_{scope}_scope"
    return check


# Runs, receipts, summaries, reading policies and schedules; review; changing what every run
# depends on (publishing policies and calibrations, schedules).
Principal = Annotated[ApiKey, Depends(require_scope("runs"))]
Reviewer = Annotated[ApiKey, Depends(require_scope("review"))]
Recorder = Annotated[ApiKey, Depends(require_scope("record"))]
Admin = Annotated[ApiKey, Depends(require_scope("admin"))]
