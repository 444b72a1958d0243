"""Liveness and readiness (no API key: load balancers and orchestrators call these)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Request, Response, Security, status

from groundswell.api.deps import ServiceDep, api_key_header, require_api_key
from groundswell.api.schemas import Health
from groundswell.shared.storage import open_store

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, operation_id="healthz")
def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Health, operation_id="readyz")
def readyz(
    service: ServiceDep,
    request: Request,
    response: Response,
    key: Annotated[str | None, Security(api_key_header)],
) -> Health:
    """Ready or not, for everyone; which check failed and why (errors name internal hosts
    and ports) only for an admin key, checked and counted as on every route."""
    admin = bool(key) and require_api_key(request, service.settings, key).allows("admin")
    checks: dict[str, str] = {}
    try:
        service.runs.r.ping()
        checks["redis"] = "ok"
    except Exception as exc:  # any failure means not ready; say which
        checks["redis"] = f"error: {exc}"
    try:
        open_store(service.settings.storage_url, service.settings).exists("runs/.ready")
        checks["storage"] = "ok"
    except Exception as exc:
        checks["storage"] = f"error: {exc}"
    ready = all(v == "ok" for v in checks.values())
    if not ready:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return Health(status="ok" if ready else "unavailable", checks=checks if admin else {})
