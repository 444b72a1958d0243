"""A run's Parquet export: POST /v1/runs/{run_id}/export (sent to a worker), GET its manifest."""

from __future__ import annotations

import json

from fastapi import APIRouter, HTTPException, Response, status

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.routes.runs import get_run
from groundswell.shared.export.models import manifest_key
from groundswell.shared.export.service import export_root
from groundswell.shared.runs.service import EXPORT

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.post("/{run_id}/export", status_code=status.HTTP_202_ACCEPTED, operation_id="export_run")
def start_export(run_id: str, response: Response, service: ServiceDep, key: Principal) -> dict:
    """Write the finished run's certificates and decisions as Parquet (docs/export.md), on a
    worker; its manifest is at the Location once written. 409 while the run is unfinished."""
    record = get_run(service, run_id, key)
    if not record.terminal or record.state == "cancelled":
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"run {run_id} is {record.state}: nothing to export"
        )
    service.enqueue(EXPORT, [run_id])
    response.headers["Location"] = f"/v1/runs/{run_id}/export"
    return {"run_id": run_id, "state": "queued", "root": _public(export_root(service, record))}


@router.get("/{run_id}/export", operation_id="get_run_export")
def read_export(run_id: str, service: ServiceDep, key: Principal) -> dict:
    """The run's export manifest: format, rows per table, files with their sha256. 404 until
    the run has been exported."""
    record = get_run(service, run_id, key)
    store = service.store(export_root(service, record))
    try:
        manifest = json.loads(store.get(manifest_key(run_id)))
    except KeyError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"run {run_id} is not exported") from None
    manifest["root"] = _public(manifest.get("root"))
    return manifest


def _public(root: str | None) -> str | None:
    """An s3:// root is shown; a server's local folder is its own business."""
    return root if isinstance(root, str) and root.startswith("s3://") else None
