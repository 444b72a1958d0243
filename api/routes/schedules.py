"""Schedules: re-run a corpus under a policy on an interval or cron expression."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.guards import limits_for
from groundswell.api.routes.runs import checked_corpus
from groundswell.shared.runs.schedules import (
    Schedule,
    ScheduleList,
    ScheduleSpec,
    TooManySchedules,
    UnreadableSchedule,
)
from groundswell.shared.settings import ApiKey

router = APIRouter(prefix="/v1/schedules", tags=["schedules"])


def _app(service):
    from groundswell.workers.app import make_app

    return make_app(service.settings)


@router.get("", response_model=ScheduleList, operation_id="list_schedules")
def list_schedules(service: ServiceDep, key: Principal) -> ScheduleList:
    """The schedules (``items``) and the ids of stored records that are not one
    (``unreadable``): each is skipped, logged and counted; DELETE removes it. A team's key
    sees its corpora's schedules, and no unreadable record (whose corpus is unknown)."""
    listed = service.schedules.list()
    if not key.limited:
        return listed
    return ScheduleList(items=[s for s in listed.items if key.sees(s.corpus)])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=Schedule,
    operation_id="add_schedule",
    responses={409: {"description": "GROUNDSWELL_MAX_SCHEDULES(_PER_KEY) reached"}},
)
def add_schedule(
    body: ScheduleSpec, response: Response, service: ServiceDep, principal: Principal
) -> Schedule:
    from groundswell.workers.schedules import ScheduleRefused
    from groundswell.workers.schedules import add_schedule as add

    # Each schedule starts runs: adding one counts against the key's run submissions.
    limits = limits_for(service.settings)
    limits.hit(limits.runs, "runs", principal.digest)
    checked, _ = checked_corpus(service.settings, body.corpus, principal)
    body = body.model_copy(update={"corpus": checked})
    service.policies.resolve(body.policy)  # an unknown policy is refused now, not at the first tick
    try:
        schedule = add(service, _app(service), body, created_by=principal.name)
    except ScheduleRefused as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None
    except TooManySchedules as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    response.headers["Location"] = f"/v1/schedules/{schedule.id}"
    return schedule


def _seen(service, schedule_id: str, key: ApiKey) -> Schedule | None:
    """The schedule, or None when there is none or the key does not see its corpus (a
    team's key: another team's schedule is not there); an unreadable record is a 409 for a
    key without corpora, and not there for a team's key (its corpus is unknown)."""
    try:
        schedule = service.schedules.get(schedule_id)
    except UnreadableSchedule as exc:
        if key.limited:
            return None
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"{exc}: DELETE /v1/schedules/{schedule_id} removes it",
        ) from None
    return schedule if schedule is not None and key.sees(schedule.corpus) else None


@router.get("/{schedule_id}", response_model=Schedule, operation_id="get_schedule")
def get_schedule(schedule_id: str, service: ServiceDep, key: Principal) -> Schedule:
    schedule = _seen(service, schedule_id, key)
    if schedule is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no schedule {schedule_id}")
    return schedule


@router.delete(
    "/{schedule_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="remove_schedule"
)
def remove_schedule(schedule_id: str, service: ServiceDep, key: Principal) -> Response:
    from groundswell.workers.schedules import remove_schedule as remove

    # Another team's schedule is not there to remove; an unreadable record is removed by a
    # key without corpora only.
    seen = not key.limited or _seen(service, schedule_id, key) is not None
    if not seen or not remove(service, _app(service), schedule_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no schedule {schedule_id}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
