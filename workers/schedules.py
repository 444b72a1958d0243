"""Schedules as beat entries (celery-redbeat): added and removed while beat runs.

A schedule's record and its beat entry are written in one Redis transaction (redbeat keeps
its entries in the run-state Redis: the same URL), and the entry is built, and its next
time computed, before that: a schedule beat cannot run is refused, never half stored.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from typing import Any

from celery import Celery
from celery.schedules import crontab
from celery.schedules import schedule as interval
from pydantic import ValidationError
from redbeat import RedBeatScheduler, RedBeatSchedulerEntry
from redbeat.decoder import RedBeatJSONEncoder
from redis.exceptions import RedisError

from groundswell.shared import metrics
from groundswell.shared.runs.schedules import Schedule, ScheduleSpec
from groundswell.shared.runs.service import SCHEDULE, RunService
from groundswell.workers.app import QUEUE_OF, TASK_NAMES


class BeatEntry(RedBeatSchedulerEntry):
    """An entry that beat could not load or compute is skipped (logged with its key and
    counted), not an error of the whole tick: one bad entry stops no schedule, nor
    reconcile. redbeat drops a skipped key from its schedule; removing the schedule (or
    ``groundswell schedule remove``) deletes the entry itself."""

    @classmethod
    def from_key(cls, key, app=None):
        try:
            entry = super().from_key(key, app=app)
            entry.is_due()  # what each tick computes
        except (KeyError, RedisError):
            raise  # gone (redbeat drops it), or Redis itself: not a bad entry
        except Exception as exc:
            metrics.bad_record("beat_entries", key, exc)
            raise KeyError(key) from None
        return entry


class BeatScheduler(RedBeatScheduler):
    """redbeat's scheduler (the Redis-backed schedule, with its lock) over ``BeatEntry``."""

    Entry = BeatEntry


def _entry_name(schedule_id: str) -> str:
    return f"schedule-{schedule_id}"


class ScheduleRefused(ValueError):
    """A schedule this deployment does not run (too often, too rarely, or not computable)."""


def check_interval(service: RunService, spec: ScheduleSpec) -> None:
    """The deployment's bounds on an interval (the model already refused what is not finite)."""
    every = spec.every_seconds
    if every is None:
        return
    floor, ceiling = service.settings.min_schedule_seconds, service.settings.max_schedule_seconds
    if not math.isfinite(every) or every < floor:
        raise ScheduleRefused(
            f"every_seconds: a schedule fires at most every {floor:g} s "
            f"(GROUNDSWELL_MIN_SCHEDULE_SECONDS); asked every {every:g} s"
        )
    if every > ceiling:
        raise ScheduleRefused(
            f"every_seconds: a schedule fires at least every {ceiling:g} s "
            f"(GROUNDSWELL_MAX_SCHEDULE_SECONDS); asked every {every:g} s"
        )


def beat_entry(app: Celery, schedule: Schedule) -> RedBeatSchedulerEntry:
    """The schedule's beat entry, its next time computed once: what fails here is refused."""
    try:
        if schedule.every_seconds is not None:
            when: Any = interval(run_every=timedelta(seconds=schedule.every_seconds))
        elif schedule.cron is not None:
            minute, hour, day_of_month, month, day_of_week = schedule.cron.split()
            when = crontab(minute, hour, day_of_week, day_of_month, month)
        else:
            raise ValueError("neither every_seconds nor cron")
        entry = RedBeatSchedulerEntry(
            _entry_name(schedule.id),
            TASK_NAMES[SCHEDULE],
            when,
            args=[schedule.id, "tick"],
            options={"queue": QUEUE_OF[SCHEDULE]},
            app=app,
        )
        when.remaining_estimate(app.now())
        entry.score  # noqa: B018 (computed now: a failure is the caller's 422, not beat's)
    except (ValueError, OverflowError, TypeError) as exc:
        raise ScheduleRefused(f"schedule {schedule.id}: beat cannot run it: {exc}") from None
    return entry


def _save_entry(entry: RedBeatSchedulerEntry):
    """Queue on a transaction what ``RedBeatSchedulerEntry.save`` writes (redbeat's layout:
    a hash with the definition and the meta, and the key's next time in the schedule)."""
    definition = {
        "name": entry.name,
        "task": entry.task,
        "args": entry.args,
        "kwargs": entry.kwargs,
        "options": entry.options,
        "schedule": entry.schedule,
        "enabled": entry.enabled,
    }
    meta = json.dumps({"last_run_at": entry.last_run_at}, cls=RedBeatJSONEncoder)
    score = entry.score

    def queue(pipe: Any) -> None:
        pipe.hset(entry.key, "definition", json.dumps(definition, cls=RedBeatJSONEncoder))
        pipe.hsetnx(entry.key, "meta", meta)
        pipe.zadd(entry.app.redbeat_conf.schedule_key, {entry.key: score})

    return queue


def add_schedule(
    service: RunService, app: Celery, spec: ScheduleSpec, created_by: str | None = None
) -> Schedule:
    """Add a schedule and its beat entry: by the API key ``created_by`` (its corpus is then
    checked again at each fire), or by an operator (None). TooManySchedules past the
    deployment's bounds."""
    check_interval(service, spec)
    try:  # validated again: a spec made without validation (model_construct) is caught here
        schedule = service.schedules.new(spec, created_by)
    except ValidationError as exc:
        raise ScheduleRefused(f"schedule: {exc.errors()[0]['msg']}") from None
    entry = beat_entry(app, schedule)
    settings = service.settings
    return service.schedules.commit(
        schedule,
        also=_save_entry(entry),
        max_total=settings.max_schedules,
        max_per_key=settings.max_schedules_per_key,
    )


def remove_schedule(service: RunService, app: Celery, schedule_id: str) -> bool:
    """The record and its beat entry, in one transaction; neither is read first, so an
    unreadable one is removed as well."""
    from redbeat.schedulers import ensure_conf

    conf = ensure_conf(app)
    key = conf.key_prefix + _entry_name(schedule_id)

    def queue(pipe: Any) -> None:
        pipe.zrem(conf.schedule_key, key)
        pipe.delete(key)

    return service.schedules.remove(schedule_id, also=queue)
