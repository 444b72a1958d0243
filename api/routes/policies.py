"""Policies and their immutable versions: read with the ``runs`` scope, published (policies and
calibrations, which every later run depends on) with ``admin``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Response, status
from pydantic import BaseModel, Field

from groundswell.api.deps import Admin, Principal, ServiceDep
from groundswell.api.params import policy_name_or_404
from groundswell.shared.policies import PolicyConflict, PolicyError
from groundswell.shared.policy_document import PolicyDocument

router = APIRouter(prefix="/v1/policies", tags=["policies"])


class PolicyPublish(PolicyDocument):
    """A policy version to publish; ``version`` pins its number (default: the next one)."""

    version: int | None = Field(default=None, ge=1, le=1_000_000_000)


class PolicyName(BaseModel):
    name: str
    versions: list[int]
    latest: dict[str, Any]


@router.get("", response_model=list[PolicyName], operation_id="list_policies")
def list_policies(service: ServiceDep, _: Principal) -> list[PolicyName]:
    return [
        PolicyName(name=name, versions=versions, latest=latest.as_dict())
        for name, versions, latest in service.policies.listing()
    ]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    operation_id="publish_policy",
    responses={200: {"description": "The same content was already published"}, 409: {}},
)
def publish_policy(body: PolicyPublish, response: Response, service: ServiceDep, _: Admin) -> dict:
    # What the body names, as given: an explicit null (``"guard": null``) drops the base's part.
    document = body.model_dump(exclude={"version"}, exclude_unset=True)
    try:
        policy, created = service.publish_policy(document, body.version)
    except PolicyConflict as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    except PolicyError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None
    if not created:
        response.status_code = status.HTTP_200_OK
    response.headers["Location"] = f"/v1/policies/{policy.name}/versions/{policy.version}"
    return policy.as_dict()


@router.post(
    "/calibrations",
    status_code=status.HTTP_201_CREATED,
    operation_id="put_calibration",
    responses={422: {}},
)
def put_calibration(body: dict[str, Any], service: ServiceDep, _: Admin) -> dict:
    """Store a repair-threshold calibration (``groundswell calibrate``'s report or its risk
    part) once; its ``sha256`` is what a policy's ``verify.repair.calibration`` names."""
    try:
        return {"sha256": service.policies.put_calibration(body)}
    except PolicyError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None


@router.get("/{name}", response_model=PolicyName, operation_id="get_policy")
def get_policy(name: str, service: ServiceDep, _: Principal) -> PolicyName:
    try:
        latest = service.policies.get(policy_name_or_404(name))
    except PolicyError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
    return PolicyName(name=name, versions=service.policies.versions(name), latest=latest.as_dict())


@router.get("/{name}/versions/{version}", operation_id="get_policy_version")
def get_policy_version(name: str, version: int, service: ServiceDep, _: Principal) -> dict:
    try:
        return service.policies.get(policy_name_or_404(name), version).as_dict()
    except PolicyError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
