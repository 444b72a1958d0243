"""A run's quality gate: GET /v1/runs/{run_id}/gate (the deployment's GROUNDSWELL_GATE_FILE)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.routes.runs import get_run
from groundswell.shared.gates.models import GateError, GateResult, load_gate
from groundswell.shared.gates.service import gate_of_run
from groundswell.shared.results.models import RunNotReady

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.get("/{run_id}/gate", response_model=GateResult, operation_id="get_run_gate")
def read_gate(run_id: str, service: ServiceDep, key: Principal) -> GateResult:
    """The finished run against the deployment's gate: each check with its value, bound and
    baseline, and the verdict (``pass``, ``warn``, ``fail``; ``exit_code`` 0, 1, 2 as the
    CLI's). 404 when no gate is configured, 409 while the run is unfinished."""
    get_run(service, run_id, key)
    path = service.settings.gate_file
    if path is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, "no gate is configured (GROUNDSWELL_GATE_FILE)"
        )
    try:
        spec = load_gate(path)
    except GateError as exc:
        raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, str(exc)) from None
    try:
        return gate_of_run(service, run_id, spec)
    except RunNotReady as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
