"""Dependencies, as ``Annotated`` aliases: settings, the run service, the API key."""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Security, status
from fastapi.security import APIKeyHeader

from shared.runs.service import RunService
from shared.runs.state import RunStore, redis_client
from shared.settings import Settings, get_settings, hash_api_key

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False)

SettingsDep = Annotated[Settings, Depends(get_settings)]


_services: dict[int, RunService] = {}
_apps: dict[int, Any] = {}


def get_app(settings: Settings):
    """One Celery app (the producer of tasks) per settings object."""
    app = _apps.get(id(settings))
    if app is None:
        from workers.app import make_app

        app = _apps[id(settings)] = make_app(settings)
    return app


def get_service(settings: SettingsDep) -> RunService:
    """One service (Redis client, Celery producer) per settings object."""
    service = _services.get(id(settings))
    if service is None:
        from workers.app import enqueue_with

        runs = RunStore(redis_client(settings.state_redis_url))
        service = RunService(settings, runs, enqueue_with(get_app(settings)))
        _services[id(settings)] = service
    return service


ServiceDep = Annotated[RunService, Depends(get_service)]


def require_api_key(
    settings: SettingsDep, key: Annotated[str | None, Security(_api_key_header)]
) -> str:
    """The caller's key digest; 401 without a key, 403 with a wrong one."""
    if not key:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing API key: send it in the X-API-Key header",
            headers={"WWW-Authenticate": "APIKey"},
        )
    digest = hash_api_key(key)
    if not any(hmac.compare_digest(digest, known) for known in settings.api_key_hashes):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid API key")
    return digest


Principal = Annotated[str, Depends(require_api_key)]
