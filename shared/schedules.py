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
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
    last_fired_at: str | None = None
    last_run_id: str | None = None
    runs: int = 0


class ScheduleStore:
    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    @staticmethod
    def new(spec: ScheduleSpec) -> Schedule:
        """A schedule with its id, not stored yet (its beat entry is built from it first)."""
        return Schedule(
            id=f"s-{secrets.token_hex(4)}", created_at=iso(utcnow()), **spec.model_dump()
        )

    def commit(self, schedule: Schedule, also: Writes | None = None) -> Schedule:
        """Store the record and, in the same transaction, what ``also`` queues (its beat
        entry): either both are stored or neither is."""
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hset(PREFIX + "s", schedule.id, schedule.model_dump_json())
            if also is not None:
                also(pipe)
            pipe.execute()
        return schedule

    def add(self, spec: ScheduleSpec) -> Schedule:
        """A record without a beat entry (the entry is added by workers.schedules)."""
        return self.commit(self.new(spec))

    def get(self, schedule_id: str) -> Schedule | None:
        raw = self.r.hget(PREFIX + "s", schedule_id)
        return Schedule.model_validate_json(raw) if raw else None

    def list(self) -> list[Schedule]:
        items = [Schedule.model_validate_json(v) for v in self.r.hvals(PREFIX + "s")]
        return sorted(items, key=lambda s: s.created_at)

    def remove(self, schedule_id: str, also: Writes | None = None) -> bool:
        """Remove the record and, in the same transaction, what ``also`` queues."""
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hdel(PREFIX + "s", schedule_id)
            if also is not None:
                also(pipe)
            return bool(pipe.execute()[0])

    def following(self, policy_name: str) -> list[Schedule]:
        return [s for s in self.list() if s.follows_latest and s.policy == f"{policy_name}@latest"]

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
        with self.r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(PREFIX + "s")
                    raw = pipe.hget(PREFIX + "s", schedule_id)
                    if not raw:
                        pipe.unwatch()
                        return
                    data: dict[str, Any] = json.loads(raw)
                    data.update(
                        last_fired_at=iso(utcnow()),
                        last_run_id=run_id,
                        runs=data.get("runs", 0) + 1,
                    )
                    pipe.multi()
                    pipe.hset(PREFIX + "s", schedule_id, json.dumps(data))
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue
