"""Schedules as beat entries (celery-redbeat): added and removed while beat runs."""

from __future__ import annotations

import contextlib
from datetime import timedelta

from celery import Celery
from celery.schedules import crontab
from celery.schedules import schedule as interval
from redbeat import RedBeatSchedulerEntry

from groundswell.shared.runs.service import SCHEDULE, RunService
from groundswell.shared.schedules import Schedule, ScheduleSpec
from groundswell.workers.app import QUEUE_OF, TASK_NAMES


def _entry_name(schedule_id: str) -> str:
    return f"schedule-{schedule_id}"


class ScheduleRefused(ValueError):
    """A schedule this deployment does not run (it would fire too often)."""


def add_schedule(service: RunService, app: Celery, spec: ScheduleSpec) -> Schedule:
    floor = service.settings.min_schedule_seconds
    if spec.every_seconds is not None and spec.every_seconds < floor:
        raise ScheduleRefused(
            f"a schedule fires at most every {floor:g} s (GROUNDSWELL_MIN_SCHEDULE_SECONDS); "
            f"asked every {spec.every_seconds:g} s"
        )
    schedule = service.schedules.add(spec)
    if schedule.every_seconds is not None:
        when = interval(run_every=timedelta(seconds=schedule.every_seconds))
    else:
        minute, hour, day_of_month, month, day_of_week = schedule.cron.split()  # type: ignore[union-attr]
        when = crontab(minute, hour, day_of_week, day_of_month, month)
    RedBeatSchedulerEntry(
        _entry_name(schedule.id),
        TASK_NAMES[SCHEDULE],
        when,
        args=[schedule.id, "tick"],
        options={"queue": QUEUE_OF[SCHEDULE]},
        app=app,
    ).save()
    return schedule


def remove_schedule(service: RunService, app: Celery, schedule_id: str) -> bool:
    prefix = app.conf.redbeat_key_prefix
    with contextlib.suppress(KeyError):  # already gone from beat: still remove the schedule
        RedBeatSchedulerEntry.from_key(prefix + _entry_name(schedule_id), app=app).delete()
    return service.schedules.remove(schedule_id)
