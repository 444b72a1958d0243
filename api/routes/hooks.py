"""Run hooks: an API key's webhooks (POST, GET, DELETE /v1/hooks) and a run's deliveries
(GET /v1/runs/{run_id}/hooks); docs/hooks.md."""

from __future__ import annotations

import re

from fastapi import APIRouter, HTTPException, Response, status

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.routes.runs import get_run
from groundswell.shared.hooks.destinations import HookRefused, check_destination
from groundswell.shared.hooks.models import Hook, HookIn
from groundswell.shared.hooks.service import HookStore, deliveries, global_hooks
from groundswell.shared.settings import ApiKey

HOOK_ID = re.compile(r"[0-9a-f]{16}")
router = APIRouter(tags=["hooks"])
MAX_HOOKS_PER_KEY = 20


def _store(service) -> HookStore:
    return HookStore(service.store(service.output_url))


def _mine(hook: Hook, key: ApiKey) -> bool:
    return hook.owner == key.name or (hook.owner is None and not key.limited)


@router.post("/v1/hooks", status_code=status.HTTP_201_CREATED, operation_id="add_hook")
def add_hook(body: HookIn, response: Response, service: ServiceDep, key: Principal) -> dict:
    """Add a webhook for the runs of this key's corpora: finished, failed, gate_failed. The
    answer holds its signing secret (shown this once); deliveries are signed with it."""
    store = _store(service)
    if sum(1 for h in store.all() if h.owner == key.name) >= MAX_HOOKS_PER_KEY:
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"key {key.name!r} has {MAX_HOOKS_PER_KEY} hooks already"
        )
    try:
        check_destination(body.url, service.settings.hook_allowed_hosts)
    except HookRefused as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, f"url: {exc}") from None
    hook = Hook.make(body, key.name)
    store.add(hook)
    response.headers["Location"] = f"/v1/hooks/{hook.id}"
    assert hook.secret is not None
    return {**hook.public(), "secret": hook.secret.get_secret_value()}


@router.get("/v1/hooks", operation_id="list_hooks")
def list_hooks(service: ServiceDep, key: Principal) -> dict:
    """This key's hooks (a key of every corpus sees the global ones too), without secrets."""
    hooks = [h for h in (*global_hooks(service.settings), *_store(service).all()) if _mine(h, key)]
    return {"items": [h.public() for h in hooks]}


@router.delete(
    "/v1/hooks/{hook_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="remove_hook"
)
def remove_hook(hook_id: str, service: ServiceDep, key: Principal) -> Response:
    store = _store(service)
    # A stored hook's id is 16 hex digits (a global one is not removable here): anything else
    # is no hook, and never becomes a storage key (a 10,000-character name is an OS error).
    hook = store.get(hook_id) if HOOK_ID.fullmatch(hook_id) else None
    if hook is None or hook.owner != key.name:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no hook {hook_id} of this key")
    store.remove(hook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/v1/runs/{run_id}/hooks", operation_id="get_run_hooks")
def run_hooks(run_id: str, service: ServiceDep, key: Principal) -> dict:
    """The run's deliveries: hook, event, status (pending, delivered, failed), attempts,
    the last answer or error, when it was delivered."""
    get_run(service, run_id, key)
    owners = {h.id: h.owner for h in (*global_hooks(service.settings), *_store(service).all())}
    items = [
        d.public()
        for d in deliveries(service, run_id)
        if owners.get(d.hook_id, "") == key.name or not key.limited
    ]
    return {"items": sorted(items, key=lambda d: (d["created_at"], d["id"]))}
