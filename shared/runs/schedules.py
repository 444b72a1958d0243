"""Schedules: re-run a corpus under a policy on an interval or a cron expression.

A schedule is stored in Redis (so it can be added and removed while beat runs); beat
fires it through a Redis-backed schedule entry (celery-redbeat, with its lock), and the
fired task submits a run. A schedule that follows ``NAME@latest`` also fires when a new
version of that policy is published.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any, Literal

import redis
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from groundswell.shared import metrics
from groundswell.shared.policies import parse_ref
from groundswell.shared.runs.models import ReprocessOnly, RunSpec, iso, utcnow

PREFIX = "gs:schedule"
# The longest interval a schedule may have whatever the settings say (ten years): beyond it
# Celery's interval arithmetic overflows; GROUNDSWELL_MAX_SCHEDULE_SECONDS is the real bound.
MAX_EVERY_SECONDS = 10 * 366 * 86400.0
_EVERY = re.compile(r"^(\d+)\s*(s|m|h|d)?$")
# Writes queued on a transaction beside a schedule's record (its beat entry).
Writes = Callable[[Any], None]
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_every(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``1h``, ``1d`` as seconds."""
    match = _EVERY.match(text.strip())
    if not match or int(match.group(1)) <= 0:
        raise ValueError(f"invalid interval {text!r}: use seconds or 30s, 15m, 1h, 1d")
    return float(int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


class ScheduleSpec(BaseModel):
    """What a caller asks for: a corpus, a policy (pinned or latest), when, and what to recompute."""

    model_config = ConfigDict(extra="forbid")

    corpus: str
    policy: str = Field(default="default@latest", description="NAME@N (pinned) or NAME@latest.")
    every_seconds: float | None = Field(
        default=None,
        gt=0,
        le=MAX_EVERY_SECONDS,
        allow_inf_nan=False,
        description="An interval in seconds (finite, within the deployment's bounds), or:",
    )
    cron: str | None = Field(default=None, description="A 5-field cron expression (UTC).")
    only: ReprocessOnly = "missing"
    # Each run it starts loads its ledger (RunSpec.ledger): under each new policy version, its
    # facts beside the earlier versions' (`groundswell ledger history`).
    ledger: bool = Field(default=False, description=RunSpec.model_fields["ledger"].description)

    @field_validator("corpus")
    @classmethod
    def _corpus(cls, value: str) -> str:
        return RunSpec(corpus=value).corpus

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        name, version = parse_ref(value)
        return f"{name}@{version}" if version is not None else f"{name}@latest"

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = value.split()
        if len(parts) != 5:
            raise ValueError("cron needs 5 fields: minute hour day-of-month month day-of-week")
        # Celery's own parser, the one beat fires with: what it refuses never gets saved.
        from celery.schedules import crontab

        minute, hour, day_of_month, month, day_of_week = parts
        try:
            crontab(minute, hour, day_of_week, day_of_month, month)
        except (ValueError, IndexError) as exc:
            raise ValueError(f"invalid cron {value!r}: {exc}") from None
        return " ".join(parts)

    @model_validator(mode="after")
    def _when(self) -> ScheduleSpec:
        if (self.every_seconds is None) == (self.cron is None):
            raise ValueError("give exactly one of every_seconds (--every) or cron (--cron)")
        return self

    @property
    def follows_latest(self) -> bool:
        return self.policy.endswith("@latest")


class Schedule(ScheduleSpec):
    id: str
    created_at: str
    # The API key that added it; None: an operator's (`groundswell schedule add`).
    created_by: str | None = None
    # api: its corpus is checked against GROUNDSWELL_ALLOWED_CORPORA at every fire, as when
    # it was added; cli: an operator's, like `groundswell run`. Records older than the field
    # are checked.
    origin: Literal["api", "cli"] = "api"
    last_fired_at: str | None = None
    last_run_id: str | None = None
    # Why the last fire started no run (cleared by the next run it starts).
    last_error: str | None = None
    runs: int = 0


class Unreadable(BaseModel):
    """A stored record that is not a schedule: its id (to remove it) and what is wrong."""

    id: str
    error: str


class ScheduleList(BaseModel):
    items: list[Schedule]
    unreadable: list[Unreadable] = Field(
        default_factory=list,
        description="Records that are not schedules (skipped, logged and counted in "
        "groundswell_bad_records_total): remove each by its id.",
    )


class TooManySchedules(ValueError):
    """Adding the schedule would pass GROUNDSWELL_MAX_SCHEDULES(_PER_KEY)."""


class UnreadableSchedule(ValueError):
    def __init__(self, record: Unreadable) -> None:
        super().__init__(f"schedule {record.id} is unreadable ({record.error})")
        self.record = record


class ScheduleStore:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    @cached_property
    def _bytes(self) -> redis.Redis:
        """The same Redis, read without decoding: a record that is not UTF-8 is one
        unreadable record, not a failure of every read of the collection."""
        pool = self.r.connection_pool
        kwargs = {**pool.connection_kwargs, "decode_responses": False}
        return redis.Redis(
            connection_pool=type(pool)(connection_class=pool.connection_class, **kwargs)
        )

    @staticmethod
    def new(spec: ScheduleSpec, created_by: str | None = None) -> Schedule:
        """A schedule with its id, not stored yet (its beat entry is built from it first):
        made with an API key's name (``created_by``) or by an operator (None)."""
        return Schedule(
            id=f"s-{secrets.token_hex(4)}",
            created_at=iso(utcnow()),
            created_by=created_by,
            origin="cli" if created_by is None else "api",
            **spec.model_dump(),
        )

    def commit(
        self,
        schedule: Schedule,
        also: Writes | None = None,
        max_total: int | None = None,
        max_per_key: int | None = None,
    ) -> Schedule:
        """Store the record and, in the same transaction, what ``also`` queues (its beat
        entry): either both are stored or neither is. TooManySchedules past ``max_total``
        records, or ``max_per_key`` of the same ``created_by`` (counted under WATCH, so two
        concurrent adds cannot both pass)."""
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(PREFIX + "s")
                    self._check_room(schedule, max_total, max_per_key)
                    pipe.multi()
                    pipe.hset(PREFIX + "s", schedule.id, schedule.model_dump_json())
                    if also is not None:
                        also(pipe)
                    pipe.execute()
                    return schedule
                except redis.WatchError:
                    continue

    def _check_room(
        self, schedule: Schedule, max_total: int | None, max_per_key: int | None
    ) -> None:
        # Read on the bytes client: a record that is not UTF-8 counts, and breaks nothing.
        if max_total is not None and self._bytes.hlen(PREFIX + "s") >= max_total:
            raise TooManySchedules(
                f"there are {max_total} schedules, the most there may be "
                "(GROUNDSWELL_MAX_SCHEDULES): remove one first"
            )
        if max_per_key is None or schedule.created_by is None:
            return
        mine = 0
        for raw in self._bytes.hvals(PREFIX + "s"):
            try:
                mine += json.loads(raw).get("created_by") == schedule.created_by
            except (ValueError, AttributeError):
                continue  # unreadable: counted in the total, nobody's
        if mine >= max_per_key:
            raise TooManySchedules(
                f"the API key {schedule.created_by!r} has {mine} schedules, the most one key "
                "may add (GROUNDSWELL_MAX_SCHEDULES_PER_KEY): remove one first"
            )

    def add(self, spec: ScheduleSpec) -> Schedule:
        """A record without a beat entry (the entry is added by workers.schedules)."""
        return self.commit(self.new(spec))

    def get(self, schedule_id: str) -> Schedule | None:
        """The schedule, None if there is none; UnreadableSchedule if its record is not one."""
        raw = self._bytes.hget(PREFIX + "s", schedule_id)
        if not raw:
            return None
        schedule = self._read(schedule_id, raw)
        if isinstance(schedule, Unreadable):
            raise UnreadableSchedule(schedule)
        return schedule

    def list(self) -> ScheduleList:
        """Every schedule, and apart the ids of records that are not one (logged, counted):
        one bad record hides nothing else, and its id is what removing it takes."""
        items: list[Schedule] = []
        unreadable: list[Unreadable] = []
        for raw_id, raw in self._bytes.hgetall(PREFIX + "s").items():
            read = self._read(raw_id.decode("utf-8", "replace"), raw)
            if isinstance(read, Unreadable):
                unreadable.append(read)
            else:
                items.append(read)
        items.sort(key=lambda s: s.created_at)
        unreadable.sort(key=lambda u: u.id)
        return ScheduleList(items=items, unreadable=unreadable)

    @staticmethod
    def _read(schedule_id: str, raw: bytes) -> Schedule | Unreadable:
        try:
            return Schedule.model_validate_json(raw)
        except ValidationError as exc:
            return Unreadable(
                id=schedule_id, error=metrics.bad_record("schedules", schedule_id, exc)
            )

    def remove(self, schedule_id: str, also: Writes | None = None) -> bool:
        """Remove the record and, in the same transaction, what ``also`` queues."""
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hdel(PREFIX + "s", schedule_id)
            if also is not None:
                also(pipe)
            return bool(pipe.execute()[0])

    def following(self, policy_name: str) -> list[Schedule]:
        wanted = f"{policy_name}@latest"
        return [s for s in self.list().items if s.follows_latest and s.policy == wanted]

    def claim_fire(self, schedule: Schedule, trigger: str) -> bool:
        """At most one run per schedule and trigger, whatever delivers the task twice.

        Beat ticks are bucketed by half the interval (a minute for cron), so a duplicate
        send is absorbed while the next tick is not.
        """
        if trigger == "tick":
            width = max(1.0, (schedule.every_seconds or 60.0) / 2)
            trigger = f"tick:{int(time.time() // width)}"
        ttl = int(max(60, (schedule.every_seconds or 60) * 4))
        return bool(self.r.set(f"{PREFIX}:{schedule.id}:fired:{trigger}", 1, nx=True, ex=ttl))

    def fired(self, schedule_id: str, run_id: str) -> None:
        def change(data: dict[str, Any]) -> None:
            data.update(
                last_fired_at=iso(utcnow()),
                last_run_id=run_id,
                last_error=None,
                runs=data.get("runs", 0) + 1,
            )

        self._update(schedule_id, change)

    def refused(self, schedule_id: str, error: str) -> None:
        """Record why a fire started no run."""
        self._update(schedule_id, lambda data: data.update(last_error=error))

    def _update(self, schedule_id: str, change: Callable[[dict[str, Any]], None]) -> None:
        with self.r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(PREFIX + "s")
                    raw = pipe.hget(PREFIX + "s", schedule_id)
                    if not raw:
                        pipe.unwatch()
                        return
                    data: dict[str, Any] = json.loads(raw)
                    change(data)
                    pipe.multi()
                    pipe.hset(PREFIX + "s", schedule_id, json.dumps(data))
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue
