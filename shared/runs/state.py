"""Run coordination state in Redis: planned units, completions, counters.

Object storage is the source of truth; this state can be rebuilt from it. The one
invariant that matters is **exactly once per unit**: a single Lua script adds the unit to
the run's done hash and, only if it was new, adds the unit's counters to the run's counters.
A redelivered or duplicated task therefore changes nothing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import redis

from shared.runs.models import RunRecord

PREFIX = "gs"
# Large per-unit structures are dropped this long after a run ends; counters and the run stay.
FINISHED_TTL_SECONDS = 7 * 24 * 3600

_RECORD_LUA = """
-- KEYS: done hash, counters hash, run hash, planned set
-- ARGV: unit, entry json, now, then (counter, increment) pairs
if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 0 then
  return {-1, 0, 0, 0}
end
local fresh = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
if fresh == 1 then
  for i = 4, #ARGV, 2 do
    redis.call('HINCRBY', KEYS[2], ARGV[i], tonumber(ARGV[i + 1]))
  end
  redis.call('HSET', KEYS[3], 'updated_at', ARGV[3])
end
local planning_done = redis.call('HGET', KEYS[3], 'planning_done') or '0'
return {fresh, redis.call('HLEN', KEYS[1]), redis.call('SCARD', KEYS[4]), tonumber(planning_done)}
"""

_PLAN_LUA = """
-- KEYS: planned set, counters hash, run hash; ARGV: now, then units ("<kind>/<doc_id>")
-- Returns 1/0 per unit: 1 when newly planned (only those are enqueued).
local out = {}
for i = 2, #ARGV do
  local fresh = redis.call('SADD', KEYS[1], ARGV[i])
  if fresh == 1 then
    local kind = string.match(ARGV[i], '^([^/]+)/')
    redis.call('HINCRBY', KEYS[2], 'units.' .. kind .. '.planned', 1)
  end
  out[#out + 1] = fresh
end
redis.call('HSET', KEYS[3], 'updated_at', ARGV[1])
return out
"""

_clients: dict[tuple[int, str], redis.Redis] = {}


def redis_client(url: str) -> redis.Redis:
    """One client per process and URL (made after fork, like every connection pool)."""
    key = (os.getpid(), url)
    client = _clients.get(key)
    if client is None:
        client = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=30,
            socket_connect_timeout=5,
            health_check_interval=30,
            retry_on_timeout=True,
        )
        _clients[key] = client
    return client


@dataclass(frozen=True)
class Recorded:
    """What recording a unit did: ``fresh`` is False for a duplicate delivery."""

    fresh: bool
    done: int
    planned: int
    planning_done: bool

    @property
    def run_complete(self) -> bool:
        return self.planning_done and self.done >= self.planned


@dataclass(frozen=True)
class Progress:
    planned: int
    done: int
    failed: int
    planning_done: bool
    counters: dict[str, int]

    @property
    def fraction(self) -> float:
        return self.done / self.planned if self.planned else (1.0 if self.planning_done else 0.0)


class RunStore:
    """Runs and their coordination state."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._record = client.register_script(_RECORD_LUA)
        self._plan = client.register_script(_PLAN_LUA)

    # -- keys ---------------------------------------------------------------------------

    @staticmethod
    def _k(run_id: str, part: str = "") -> str:
        return f"{PREFIX}:run:{run_id}" + (f":{part}" if part else "")

    # -- runs ---------------------------------------------------------------------------

    def create(self, record: RunRecord, idempotency_key_sha256: str | None = None) -> RunRecord:
        """Store a new run; with an idempotency key already used, return that run instead."""
        if idempotency_key_sha256:
            idem = f"{PREFIX}:idem:{idempotency_key_sha256}"
            if not self.r.set(idem, record.id, nx=True, ex=24 * 3600):
                existing = self.get(self.r.get(idem) or "")
                if existing is not None:
                    return existing
                self.r.set(idem, record.id, ex=24 * 3600)
        pipe = self.r.pipeline()
        pipe.hset(
            self._k(record.id),
            mapping={
                "record": record.model_dump_json(),
                "updated_at": time.time(),
                "planning_done": 0,
            },
        )
        pipe.zadd(f"{PREFIX}:runs", {record.id: time.time()})
        pipe.execute()
        return record

    def get(self, run_id: str) -> RunRecord | None:
        raw = self.r.hget(self._k(run_id), "record") if run_id else None
        return RunRecord.model_validate_json(raw) if raw else None

    def save(self, record: RunRecord) -> None:
        self.r.hset(self._k(record.id), mapping={"record": record.model_dump_json()})

    def update(self, run_id: str, **changes: Any) -> RunRecord | None:
        """Change fields of the run record (read-modify-write under WATCH)."""
        key = self._k(run_id)
        with self.r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    raw = pipe.hget(key, "record")
                    if not raw:
                        pipe.unwatch()
                        return None
                    record = RunRecord.model_validate_json(raw).model_copy(update=changes)
                    pipe.multi()
                    pipe.hset(key, "record", record.model_dump_json())
                    pipe.execute()
                    return record
                except redis.WatchError:
                    continue

    def list(self, offset: int = 0, limit: int = 50) -> tuple[list[RunRecord], int]:
        """Newest first."""
        ids = self.r.zrevrange(f"{PREFIX}:runs", offset, offset + limit - 1)
        total = self.r.zcard(f"{PREFIX}:runs")
        pipe = self.r.pipeline()
        for run_id in ids:
            pipe.hget(self._k(run_id), "record")
        records = [RunRecord.model_validate_json(raw) for raw in pipe.execute() if raw]
        return records, total

    def active_run_ids(self) -> list[str]:
        return [
            run_id
            for run_id in self.r.zrevrange(f"{PREFIX}:runs", 0, 999)
            if (rec := self.get(run_id)) is not None and not rec.terminal
        ]

    # -- planning -----------------------------------------------------------------------

    def add_planned(self, run_id: str, units: list[str]) -> list[str]:
        """Add units to the plan; return those that were new (only they get enqueued)."""
        if not units:
            return []
        added = self._plan(
            keys=[self._k(run_id, "planned"), self._k(run_id, "counters"), self._k(run_id)],
            args=[time.time(), *units],
        )
        return [unit for unit, new in zip(units, added, strict=True) if new]

    def plan_cursor(self, run_id: str) -> dict[str, Any] | None:
        raw = self.r.hget(self._k(run_id), "plan_cursor")
        return json.loads(raw) if raw else None

    def save_plan_cursor(self, run_id: str, cursor: dict[str, Any]) -> None:
        self.r.hset(
            self._k(run_id), mapping={"plan_cursor": json.dumps(cursor), "updated_at": time.time()}
        )

    def finish_planning(self, run_id: str) -> Progress:
        self.r.hset(self._k(run_id), mapping={"planning_done": 1, "updated_at": time.time()})
        return self.progress(run_id)

    # -- units --------------------------------------------------------------------------

    def is_done(self, run_id: str, unit: str) -> bool:
        return bool(self.r.hexists(self._k(run_id, "done"), unit))

    def done_among(self, run_id: str, units: list[str]) -> set[str]:
        if not units:
            return set()
        values = self.r.hmget(self._k(run_id, "done"), units)
        return {unit for unit, value in zip(units, values, strict=True) if value is not None}

    def attempt(self, run_id: str, unit: str) -> int:
        """Count one more attempt at a unit (the redelivery cap reads this)."""
        key = self._k(run_id, "attempts")
        pipe = self.r.pipeline(transaction=False)
        pipe.hincrby(key, unit, 1)
        pipe.expire(key, FINISHED_TTL_SECONDS)
        return int(pipe.execute()[0])

    def record(
        self, run_id: str, unit: str, entry: dict[str, Any], counters: dict[str, int]
    ) -> Recorded:
        """Mark a unit done and add its counters, atomically and exactly once."""
        args: list[Any] = [unit, json.dumps(entry, separators=(",", ":")), time.time()]
        for name, value in counters.items():
            if value:
                args += [name, int(value)]
        fresh, done, planned, planning_done = self._record(
            keys=[
                self._k(run_id, "done"),
                self._k(run_id, "counters"),
                self._k(run_id),
                self._k(run_id, "planned"),
            ],
            args=args,
        )
        return Recorded(fresh == 1, int(done), int(planned), bool(planning_done))

    def progress(self, run_id: str) -> Progress:
        pipe = self.r.pipeline()
        pipe.scard(self._k(run_id, "planned"))
        pipe.hlen(self._k(run_id, "done"))
        pipe.hget(self._k(run_id), "planning_done")
        pipe.hgetall(self._k(run_id, "counters"))
        planned, done, planning_done, raw = pipe.execute()
        counters = {k: int(v) for k, v in raw.items()}
        failed = sum(
            v for k, v in counters.items() if k.startswith("units.") and k.endswith(".failed")
        )
        return Progress(int(planned), int(done), failed, planning_done == "1", counters)

    def updated_at(self, run_id: str) -> float:
        return float(self.r.hget(self._k(run_id), "updated_at") or 0)

    def touch(self, run_id: str) -> None:
        self.r.hset(self._k(run_id), "updated_at", time.time())

    def pending_units(self, run_id: str, batch: int = 1000) -> Iterator[list[str]]:
        """Planned units not yet done, in chunks."""
        chunk: list[str] = []
        for unit in self.r.sscan_iter(self._k(run_id, "planned"), count=batch):
            chunk.append(unit)
            if len(chunk) >= batch:
                done = self.done_among(run_id, chunk)
                yield [u for u in chunk if u not in done]
                chunk = []
        if chunk:
            done = self.done_among(run_id, chunk)
            yield [u for u in chunk if u not in done]

    def done_entry(self, run_id: str, unit: str) -> dict[str, Any] | None:
        raw = self.r.hget(self._k(run_id, "done"), unit)
        return json.loads(raw) if raw else None

    def done_entries(self, run_id: str) -> Iterable[tuple[str, dict[str, Any]]]:
        for unit, raw in self.r.hscan_iter(self._k(run_id, "done"), count=1000):
            yield unit, json.loads(raw)

    def counters(self, run_id: str) -> dict[str, int]:
        return {k: int(v) for k, v in self.r.hgetall(self._k(run_id, "counters")).items()}

    # -- what the latest runs were --------------------------------------------------------

    def latest_run_of_corpus(self, corpus: str) -> str | None:
        return self.r.hget(f"{PREFIX}:corpus_latest", corpus)

    def set_latest(self, corpus: str, run_id: str, policy_ref: str, rates: dict[str, Any]) -> None:
        """The last finished run of a corpus, and per policy version the rates of its last run."""
        pipe = self.r.pipeline()
        pipe.hset(f"{PREFIX}:corpus_latest", corpus, run_id)
        pipe.hset(f"{PREFIX}:policy_latest", policy_ref, json.dumps({"run_id": run_id, **rates}))
        pipe.execute()

    def policy_latest(self) -> dict[str, dict[str, Any]]:
        return {k: json.loads(v) for k, v in self.r.hgetall(f"{PREFIX}:policy_latest").items()}

    # -- finishing ----------------------------------------------------------------------

    def claim_finalize(self, run_id: str, ttl: int) -> bool:
        """One finalizer at a time (finalize is idempotent, this just avoids duplicate work)."""
        return bool(self.r.set(self._k(run_id, "finalizing"), os.getpid(), nx=True, ex=ttl))

    def release_finalize(self, run_id: str) -> None:
        self.r.delete(self._k(run_id, "finalizing"))

    def expire_unit_state(self, run_id: str) -> None:
        pipe = self.r.pipeline()
        for part in ("planned", "done", "attempts"):
            pipe.expire(self._k(run_id, part), FINISHED_TTL_SECONDS)
        pipe.execute()
