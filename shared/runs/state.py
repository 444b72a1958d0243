"""Run coordination state in Redis: small, bounded, and rebuildable from storage.

The unit of accounting is the **batch**. While a run goes, Redis holds per run a hash of
numbers, the summed counters, and only the batches planned but not yet recorded
(``pending``: at most the planning window, see :mod:`shared.runs.service`), with their
leases and delivery counts. Nothing here grows with the size of a run; a finished run
keeps its record and a few numbers, and even those can be dropped, since storage holds
the run's record, index and summary. docs/run-bookkeeping.md explains the design.

Every transition is one Lua script, so each is atomic and costs one round trip:

- ``commit_plan``: add a planning step's batches (compare-and-set on the step number, so a
  duplicate planner changes nothing); a batch that waits for a ``read`` batch is *held*:
  pending (so it counts toward the run and the window) but without a lease, so it is neither
  sent nor resent until its read batch is recorded;
- ``begin``: take the lease of a pending batch and count the delivery;
- ``record``: remove the batch from ``pending`` and, only if it was there, add its counters:
  exactly once, however often the batch is delivered; recording a read batch releases the
  batches it holds (they get a queued lease; the caller sends them);
- ``split``: replace a pending batch by its two halves (a delivery of it died);
- ``expired``: the pending batches whose lease ran out (lost messages, dead workers); a
  holder its worker still lists as running keeps its batch (``shared.runs.liveness``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import redis

from groundswell.shared.producers import run_counters
from groundswell.shared.runs import kinds
from groundswell.shared.runs.liveness import Holder, Running, holder_alive
from groundswell.shared.runs.models import RunRecord, listed_at

PREFIX = "gs"
FINISHED_TTL_SECONDS = 7 * 24 * 3600

_COMMIT_PLAN = """
-- KEYS: run, pending, leases, counters, held
-- ARGV: expected step, now, lease until, next seq, units, finished, cursor,
--       counters (JSON, with units.<kind>.planned), batches sent now by kind (JSON),
--       then (batch, spec, held) triples
if redis.call('HEXISTS', KEYS[1], 'record') == 0 then
  return {0, 0}  -- the run is unknown (Redis lost it): reconcile rebuilds it first
end
local step = tonumber(redis.call('HGET', KEYS[1], 'plan_step') or '0')
if step ~= tonumber(ARGV[1]) then
  return {0, redis.call('HLEN', KEYS[2])}
end
local n = 0
for i = 10, #ARGV, 3 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  if ARGV[i + 2] == '1' then
    redis.call('SADD', KEYS[5], ARGV[i])  -- no lease: sent when its read batch is recorded
  else
    redis.call('ZADD', KEYS[3], ARGV[3], ARGV[i])
  end
  n = n + 1
end
for name, value in pairs(cjson.decode(ARGV[8])) do
  redis.call('HINCRBY', KEYS[4], name, value)
end
for kind, value in pairs(cjson.decode(ARGV[9])) do
  redis.call('HINCRBY', KEYS[1], 'sent.' .. kind, value)
end
redis.call('HSET', KEYS[1], 'plan_step', step + 1, 'next_seq', ARGV[4], 'plan_cursor', ARGV[7],
           'updated_at', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'units_planned', ARGV[5])
redis.call('HINCRBY', KEYS[1], 'batches_planned', n)
if ARGV[6] == '1' then
  redis.call('HSET', KEYS[1], 'plan_done', 1)
end
return {1, redis.call('HLEN', KEYS[2])}
"""

_PLAN_WAIT = """
-- KEYS: run, pending; ARGV: window, resume at
-- Pause planning while the window is full; the record that drains it resumes planning.
if redis.call('HEXISTS', KEYS[1], 'record') == 0 then
  return 1
end
if redis.call('HLEN', KEYS[2]) < tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'plan_waiting', 1, 'plan_resume_at', ARGV[2])
return 1
"""

_BEGIN = """
-- KEYS: run, pending, leases, attempts
-- ARGV: batch, token, now, lease until, node, the holder the caller found not running
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {'gone'}
end
if state == 'succeeded' or state == 'partially_failed' or state == 'failed'
   or state == 'cancelled' then
  return {'stop'}
end
local spec = redis.call('HGET', KEYS[2], ARGV[1])
if not spec then
  return {'done'}
end
local owner = redis.call('HGET', KEYS[4], ARGV[1] .. '|owner')
local lease = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[1]) or '0')
if owner and owner ~= ARGV[2] then
  if lease > tonumber(ARGV[3]) then
    return {'busy'}
  end
  if owner ~= ARGV[6] then
    -- Its lease ran out, but it may still run (a late renewal): the caller asks its node.
    local holder = redis.call('HMGET', KEYS[4], ARGV[1] .. '|node', ARGV[1] .. '|since')
    return {'ask', owner, holder[1] or '', holder[2] or '0'}
  end
end
local n = redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
redis.call('HSET', KEYS[4], ARGV[1] .. '|owner', ARGV[2], ARGV[1] .. '|node', ARGV[5],
           ARGV[1] .. '|since', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return {'run', n, spec, redis.call('HGET', KEYS[4], ARGV[1] .. '|why') or ''}
"""

_RENEW = """
-- KEYS: leases, attempts; ARGV: batch, token, until
if redis.call('HGET', KEYS[2], ARGV[1] .. '|owner') ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
return 1
"""

_RELEASE = """
-- KEYS: leases, attempts; ARGV: batch, token, lease until, why, uncount
-- A delivery that ends without recording: a retry (uncount 1: it did not die) or a failure.
if redis.call('HGET', KEYS[2], ARGV[1] .. '|owner') ~= ARGV[2] then
  return 0
end
if ARGV[5] == '1' then
  redis.call('HINCRBY', KEYS[2], ARGV[1], -1)
end
redis.call('HDEL', KEYS[2], ARGV[1] .. '|owner')
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1] .. '|why', ARGV[4])
end
redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
return 1
"""

_SPLIT = """
-- KEYS: run, pending, leases, attempts
-- ARGV: batch, token, lease until, kind, then (child, spec) pairs
if redis.call('HGET', KEYS[4], ARGV[1] .. '|owner') ~= ARGV[2] then
  return 0
end
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1], ARGV[1] .. '|owner', ARGV[1] .. '|why',
           ARGV[1] .. '|node', ARGV[1] .. '|since')
local n = 0
for i = 5, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[i])
  n = n + 1
end
redis.call('HINCRBY', KEYS[1], 'batches_planned', n - 1)
redis.call('HINCRBY', KEYS[1], 'sent.' .. ARGV[4], n - 1)
return 1
"""

_RECORD = """
-- KEYS: run, pending, leases, attempts, counters, held
-- ARGV: batch, units, failed units, now, lease until, units planned now, then (counter,
--       increment) pairs
local spec = redis.call('HGET', KEYS[2], ARGV[1])
if not spec then
  return {0, redis.call('HLEN', KEYS[2]), 0, 0}
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local body = cjson.decode(spec)
-- sent.<kind> - recorded.<kind> is the run's outstanding work per queue (the scaling
-- signal): a held batch was never sent, so its record is not counted either.
if redis.call('SREM', KEYS[6], ARGV[1]) == 0 then
  redis.call('HINCRBY', KEYS[1], 'recorded.' .. body['kind'], 1)
end
redis.call('HDEL', KEYS[4], ARGV[1], ARGV[1] .. '|owner', ARGV[1] .. '|why',
           ARGV[1] .. '|node', ARGV[1] .. '|since')
-- A read batch releases the batches that wait for it (each once: a half of a split read
-- batch finds them released by the other half).
local released = {}
local held = body['then']
if type(held) == 'table' then
  for _, b in ipairs(held) do
    if redis.call('SREM', KEYS[6], b) == 1 then
      local bspec = redis.call('HGET', KEYS[2], b)
      if bspec then
        redis.call('ZADD', KEYS[3], ARGV[5], b)
        redis.call('HINCRBY', KEYS[1], 'sent.' .. cjson.decode(bspec)['kind'], 1)
        released[#released + 1] = b
        released[#released + 1] = bspec
      end
    end
  end
end
for i = 7, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[5], ARGV[i], ARGV[i + 1])
end
redis.call('HINCRBY', KEYS[1], 'units_planned', ARGV[6])
redis.call('HINCRBY', KEYS[1], 'units_done', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'units_failed', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'batches_done', 1)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[4])
local outstanding = redis.call('HLEN', KEYS[2])
local resume = 0
if redis.call('HGET', KEYS[1], 'plan_waiting') == '1'
   and outstanding <= tonumber(redis.call('HGET', KEYS[1], 'plan_resume_at') or '0') then
  redis.call('HSET', KEYS[1], 'plan_waiting', 0)
  resume = 1
end
local complete = 0
if outstanding == 0 and redis.call('HGET', KEYS[1], 'plan_done') == '1' then
  complete = 1
end
return {1, outstanding, resume, complete, released}
"""

_REVIEW_LATEST = """
-- KEYS: review numbers, their run ids; ARGV: field (corpus and policy version), run id, numbers
-- An older run's numbers never replace a newer run's (run ids sort by time), in one step.
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held and held > ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""

_EXPIRED = """
-- KEYS: pending, leases, attempts; ARGV: now, lease until, limit, kept until, then the
-- holders found still running
-- Pending batches whose lease ran out get a fresh (queued) lease and no owner: the caller
-- sends them again; those whose holder still runs keep it, with a lease until "kept
-- until". Leases of batches no longer pending are dropped.
local running = {}
for i = 5, #ARGV do
  running[ARGV[i]] = true
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local out, kept = {}, {}
for _, batch in ipairs(expired) do
  local spec = redis.call('HGET', KEYS[1], batch)
  local owner = redis.call('HGET', KEYS[3], batch .. '|owner')
  if spec and owner and running[owner] then
    redis.call('ZADD', KEYS[2], ARGV[4], batch)
    kept[#kept + 1] = batch
    kept[#kept + 1] = spec
  elseif spec then
    redis.call('ZADD', KEYS[2], ARGV[2], batch)
    redis.call('HDEL', KEYS[3], batch .. '|owner')
    out[#out + 1] = batch
    out[#out + 1] = spec
  else
    redis.call('ZREM', KEYS[2], batch)
  end
end
return {out, kept}
"""

_LIST_VIEW = """
-- KEYS: the view, then the per-corpus run lists (none: the view is one corpus's list);
-- ARGV: offset, last index, ttl. A team's run list: the union of its corpora's lists, kept
-- a few seconds so that paging through it costs a page, not a union, per request.
if #KEYS > 1 and redis.call('EXISTS', KEYS[1]) == 0 then
  local lists = {}
  for i = 2, #KEYS do lists[#lists + 1] = KEYS[i] end
  redis.call('ZUNIONSTORE', KEYS[1], #lists, unpack(lists))
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return {redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2]), redis.call('ZCARD', KEYS[1])}
"""

# How long a team's merged run list is kept for paging (its name changes with every run
# listed, so a new run shows at once).
LIST_VIEW_SECONDS = 10

_clients: dict[tuple[int, str], redis.Redis] = {}


def corpus_runs_key(corpus: str) -> str:
    """The sorted set of one corpus's runs (by when they were listed)."""
    return f"{PREFIX}:runs:corpus:" + hashlib.sha256(corpus.encode("utf-8")).hexdigest()[:32]


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
class BatchSpec:
    """A planned batch: its kind and documents (what a task needs besides the run).

    ``sources`` names each document's source file where it is not ``documents/<id>.txt``
    (a list when an id has several: an input error of that id). A ``read`` batch lists in
    ``then`` the batches that wait for it; each of those names it in ``after``. ``listing``
    holds each document's files as planning listed them (key -> [size, etag]).
    """

    batch: str
    kind: str
    doc_ids: list[str]
    sources: dict[str, Any] | None = None
    then: list[str] | None = None
    after: str | None = None
    listing: dict[str, dict[str, list[Any]]] | None = None

    def extras(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.sources:
            out["sources"] = self.sources
        if self.then:
            out["then"] = self.then
        if self.after:
            out["after"] = self.after
        if self.listing:
            out["listing"] = self.listing
        return out

    @property
    def held(self) -> bool:
        """Sent only once its read batch is recorded."""
        return self.after is not None

    def dumps(self) -> str:
        body = {"kind": self.kind, "doc_ids": self.doc_ids, **self.extras()}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def loads(cls, batch: str, spec: str) -> BatchSpec:
        data = json.loads(spec)
        return cls.make(batch, data["kind"], data["doc_ids"], data)

    @classmethod
    def make(cls, batch: str, kind: str, doc_ids: list[str], extras: dict[str, Any]) -> BatchSpec:
        return cls(
            batch,
            kind,
            doc_ids,
            extras.get("sources"),
            extras.get("then"),
            extras.get("after"),
            extras.get("listing"),
        )

    def source(self, doc_id: str) -> Any:
        return (self.sources or {}).get(doc_id)


@dataclass(frozen=True)
class Begun:
    """What ``begin`` decided: ``run`` (with the delivery count), or skip (done, busy, stop, gone)."""

    status: str
    attempts: int = 0
    spec: BatchSpec | None = None
    why: str = ""


@dataclass(frozen=True)
class Recorded:
    fresh: bool
    outstanding: int
    resume_planning: bool
    run_complete: bool
    released: tuple[BatchSpec, ...] = ()  # held batches this record released: send them


@dataclass(frozen=True)
class Expired:
    resent: list[BatchSpec]  # their holders are gone: send them again
    kept: list[BatchSpec]  # their holders still run (a late renewal): left to finish


def _specs(flat: list[str]) -> list[BatchSpec]:
    return [BatchSpec.loads(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


@dataclass(frozen=True)
class Progress:
    planned: int
    done: int
    failed: int
    planning_done: bool
    counters: dict[str, int]
    outstanding: int = 0

    @property
    def fraction(self) -> float:
        return self.done / self.planned if self.planned else (1.0 if self.planning_done else 0.0)


@dataclass(frozen=True)
class PlanState:
    step: int
    cursor: dict[str, Any] | None
    next_seq: int
    done: bool
    outstanding: int


class RunStore:
    """Runs and their coordination state."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client
        self._commit_plan = client.register_script(_COMMIT_PLAN)
        self._plan_wait = client.register_script(_PLAN_WAIT)
        self._begin = client.register_script(_BEGIN)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._split = client.register_script(_SPLIT)
        self._record = client.register_script(_RECORD)
        self._expired = client.register_script(_EXPIRED)
        self._review_latest = client.register_script(_REVIEW_LATEST)
        self._list_view = client.register_script(_LIST_VIEW)

    # -- keys ---------------------------------------------------------------------------

    @staticmethod
    def _k(run_id: str, part: str = "") -> str:
        return f"{PREFIX}:run:{run_id}" + (f":{part}" if part else "")

    def _batch_keys(self, run_id: str) -> list[str]:
        return [
            self._k(run_id),
            self._k(run_id, "pending"),
            self._k(run_id, "leases"),
            self._k(run_id, "attempts"),
        ]

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
        self.restore(record)
        return record

    def restore(
        self,
        record: RunRecord,
        fields: dict[str, Any] | None = None,
        counters: dict[str, int] | None = None,
        pending: Iterable[BatchSpec] = (),
        lease_until: float = 0.0,
    ) -> None:
        """Write a run's state (a new run, or one rebuilt from storage after a loss)."""
        pipe = self.r.pipeline()
        key = self._k(record.id)
        pipe.delete(
            key,
            *self._batch_keys(record.id)[1:],
            self._k(record.id, "counters"),
            self._k(record.id, "held"),
        )
        pipe.hset(
            key,
            mapping={
                "record": record.model_dump_json(),
                "state": record.state,
                "updated_at": time.time(),
                "plan_step": 0,
                "plan_done": 0,
                "next_seq": 0,
                "units_planned": 0,
                "units_done": 0,
                "units_failed": 0,
                **(fields or {}),
            },
        )
        if counters and (kept := run_counters(counters)):
            pipe.hset(self._k(record.id, "counters"), mapping=kept)
        for spec in pending:
            pipe.hset(self._k(record.id, "pending"), spec.batch, spec.dumps())
            pipe.zadd(self._k(record.id, "leases"), {spec.batch: lease_until})
            # Every restored batch has a lease, so reconcile sends it: outstanding work.
            pipe.hincrby(key, f"sent.{spec.kind}", 1)
        self._list(pipe, {record.id: (listed_at(record.id, record.created_at), record.corpus)})
        if record.terminal:
            pipe.srem(f"{PREFIX}:active", record.id)
            pipe.expire(key, FINISHED_TTL_SECONDS)
        else:
            pipe.sadd(f"{PREFIX}:active", record.id)
        pipe.execute()

    def known(self, run_id: str) -> bool:
        return bool(self.r.hexists(self._k(run_id), "record"))

    def get(self, run_id: str) -> RunRecord | None:
        raw = self.r.hget(self._k(run_id), "record") if run_id else None
        return RunRecord.model_validate_json(raw) if raw else None

    def update(self, run_id: str, **changes: Any) -> RunRecord | None:
        """Change fields of the run record (read-modify-write under WATCH).

        A run that has ended stays as it ended: a late planner or finalizer cannot move a
        cancelled run back to running.
        """
        key = self._k(run_id)
        with self.r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    raw = pipe.hget(key, "record")
                    if not raw:
                        pipe.unwatch()
                        return None
                    current = RunRecord.model_validate_json(raw)
                    if current.terminal:
                        pipe.unwatch()
                        return current
                    record = current.model_copy(update=changes)
                    pipe.multi()
                    pipe.hset(
                        key, mapping={"record": record.model_dump_json(), "state": record.state}
                    )
                    if record.terminal:
                        pipe.srem(f"{PREFIX}:active", run_id)
                    pipe.execute()
                    return record
                except redis.WatchError:
                    continue

    def list(
        self, offset: int = 0, limit: int = 50, sees: Callable[[str], bool] | None = None
    ) -> tuple[list[str], int]:
        """Run ids, newest first, and how many there are; with ``sees``, of the corpora it
        accepts only (the union of their lists)."""
        if sees is None:
            ids = self.r.zrevrange(f"{PREFIX}:runs", offset, offset + limit - 1)
            return list(ids), int(self.r.zcard(f"{PREFIX}:runs"))
        lists = sorted(corpus_runs_key(c) for c in self.corpora() if sees(c))
        if not lists:
            return [], 0
        keys = lists
        if len(lists) > 1:
            named = f"{self.r.get(f'{PREFIX}:runs:version')}|" + "|".join(lists)
            keys = [f"{PREFIX}:runs:view:" + hashlib.sha256(named.encode()).hexdigest()[:32]]
            keys += lists
        args = [offset, offset + limit - 1, LIST_VIEW_SECONDS]
        ids, total = self._list_view(keys=keys, args=args)
        return list(ids), int(total)

    def corpora(self) -> set[str]:
        """Every corpus with a listed run."""
        return set(self.r.smembers(f"{PREFIX}:corpora"))

    def add_listed(self, runs: dict[str, tuple[float, str]]) -> None:
        """List runs: run id -> (when it was listed, its corpus)."""
        if runs:
            pipe = self.r.pipeline(transaction=False)
            self._list(pipe, runs)
            pipe.execute()

    @staticmethod
    def _list(pipe: Any, runs: dict[str, tuple[float, str]]) -> None:
        pipe.zadd(f"{PREFIX}:runs", {run_id: at for run_id, (at, _) in runs.items()})
        for run_id, (at, corpus) in runs.items():
            pipe.zadd(corpus_runs_key(corpus), {run_id: at})
            pipe.sadd(f"{PREFIX}:corpora", corpus)
        pipe.incr(f"{PREFIX}:runs:version")  # a team's merged list is made again

    def active_run_ids(self) -> list[str]:
        return sorted(self.r.smembers(f"{PREFIX}:active"))

    # -- planning -----------------------------------------------------------------------

    def plan_state(self, run_id: str) -> PlanState:
        pipe = self.r.pipeline(transaction=False)
        pipe.hmget(self._k(run_id), "plan_step", "plan_cursor", "next_seq", "plan_done")
        pipe.hlen(self._k(run_id, "pending"))
        (step, cursor, seq, done), outstanding = pipe.execute()
        return PlanState(
            int(step or 0),
            json.loads(cursor) if cursor else None,
            int(seq or 0),
            done == "1",
            int(outstanding),
        )

    def commit_plan(
        self,
        run_id: str,
        step: int,
        batches: list[BatchSpec],
        *,
        next_seq: int,
        cursor: dict[str, Any],
        finished: bool,
        lease_until: float,
        counters: dict[str, int] | None = None,
    ) -> tuple[bool, int]:
        """Add planning step ``step`` (1-based) if the run is at step - 1. (committed, pending)."""
        # Units are what the index holds: those of the kinds that leave a row each. Every
        # kind's count is in counters (a unit of a kind that leaves a row only when it fails
        # joins the index, and the units, when recorded).
        units: dict[str, int] = {}
        sent: dict[str, int] = {}  # the batches the caller sends now (held ones wait)
        args: list[Any] = []
        for spec in batches:
            units[spec.kind] = units.get(spec.kind, 0) + len(spec.doc_ids)
            if not spec.held:
                sent[spec.kind] = sent.get(spec.kind, 0) + 1
            args += [spec.batch, spec.dumps(), 1 if spec.held else 0]
        counters = dict(counters or {})
        for kind, n in units.items():
            if n:
                counters[f"units.{kind}.planned"] = counters.get(f"units.{kind}.planned", 0) + n
        indexed = sum(n for kind, n in units.items() if kinds.get(kind).rows == "every")
        ok, pending = self._commit_plan(
            keys=[
                *self._batch_keys(run_id)[:3],
                self._k(run_id, "counters"),
                self._k(run_id, "held"),
            ],
            args=[
                step - 1,
                time.time(),
                lease_until,
                next_seq,
                indexed,
                1 if finished else 0,
                json.dumps(cursor),
                json.dumps(counters),
                json.dumps(sent),
                *args,
            ],
        )
        return bool(ok), int(pending)

    def wait_for_window(self, run_id: str, window: int, resume_at: int) -> bool:
        """True (and planning pauses) when ``window`` batches are already pending."""
        keys = self._batch_keys(run_id)[:2]
        return bool(self._plan_wait(keys=keys, args=[window, resume_at]))

    def resume_planning_flag(self, run_id: str) -> None:
        self.r.hset(self._k(run_id), "plan_waiting", 0)

    # -- batches ------------------------------------------------------------------------

    def begin(
        self, run_id: str, batch: str, token: str, lease_seconds: float, node: str = ""
    ) -> Begun:
        """Take a batch's lease for the delivery ``token`` on worker ``node``. An earlier
        holder whose lease ran out keeps the batch while its node lists it as running."""
        not_running = ""
        for _ in range(3):  # a new holder between two calls: ask again, then leave it
            now = time.time()
            out = self._begin(
                keys=self._batch_keys(run_id),
                args=[batch, token, now, now + lease_seconds, node, not_running],
            )
            if out[0] != "ask":
                break
            holder = Holder(out[1], out[2], float(out[3]))
            if self.holders_running([holder], now):
                return Begun("busy")
            not_running = holder.token
        else:
            return Begun("busy")
        if out[0] != "run":
            return Begun(out[0])
        return Begun("run", int(out[1]), BatchSpec.loads(batch, out[2]), out[3])

    def renew(self, run_id: str, batch: str, token: str, lease_seconds: float) -> bool:
        keys = self._batch_keys(run_id)[2:]
        return bool(self._renew(keys=keys, args=[batch, token, time.time() + lease_seconds]))

    def release(
        self, run_id: str, batch: str, token: str, *, lease_until: float, why: str, uncount: bool
    ) -> bool:
        keys = self._batch_keys(run_id)[2:]
        args = [batch, token, lease_until, why[:500], 1 if uncount else 0]
        return bool(self._release(keys=keys, args=args))

    def split(
        self, run_id: str, batch: str, token: str, children: list[BatchSpec], lease_until: float
    ) -> bool:
        args: list[Any] = [batch, token, lease_until, children[0].kind]
        for child in children:
            args += [child.batch, child.dumps()]
        return bool(self._split(keys=self._batch_keys(run_id), args=args))

    def record(
        self,
        run_id: str,
        batch: str,
        units: int,
        failed: int,
        counters: dict[str, int],
        lease_until: float = 0.0,
        unplanned: int = 0,
    ) -> Recorded:
        """Record a batch and add its counters, atomically and exactly once. Held batches
        that waited for it get a lease until ``lease_until`` and are returned, to be sent.
        ``unplanned``: units that become index units only now (failed ledger units), added to
        the planned units as they are done."""
        args: list[Any] = [
            batch,
            units,
            failed,
            time.time(),
            lease_until or time.time() + 3600,
            unplanned,
        ]
        for name, value in run_counters(counters).items():
            if value:
                args += [name, int(value)]
        out = self._record(
            keys=[*self._batch_keys(run_id), self._k(run_id, "counters"), self._k(run_id, "held")],
            args=args,
        )
        fresh, outstanding, resume, complete = out[:4]
        raw = out[4] if len(out) > 4 else []
        released = tuple(_specs(raw))
        return Recorded(fresh == 1, int(outstanding), resume == 1, complete == 1, released)

    def expired(
        self, run_id: str, lease_until: float, kept_until: float, limit: int = 1000
    ) -> Expired:
        """Pending batches whose lease ran out: those whose holder still runs keep it until
        ``kept_until``; the others get a new lease until ``lease_until`` (the caller resends
        them)."""
        now = time.time()
        keys = self._batch_keys(run_id)[1:]
        due = self.r.zrangebyscore(keys[1], "-inf", now, start=0, num=limit)
        if not due:
            return Expired([], [])
        fields = [f"{b}|{part}" for b in due for part in ("owner", "node", "since")]
        values = self.r.hmget(keys[2], fields)
        holders = [
            Holder(owner, node or "", float(since or 0))
            for owner, node, since in zip(*[iter(values)] * 3, strict=True)
            if owner
        ]
        running = self.holders_running(holders, now)
        out, kept = self._expired(
            keys=keys, args=[now, lease_until, limit, kept_until, *sorted(running)]
        )
        return Expired(_specs(out), _specs(kept))

    def pending(self, run_id: str) -> list[BatchSpec]:
        raw = self.r.hgetall(self._k(run_id, "pending"))
        return [BatchSpec.loads(batch, spec) for batch, spec in sorted(raw.items())]

    # -- progress -----------------------------------------------------------------------

    def progress(self, run_id: str) -> Progress | None:
        pipe = self.r.pipeline(transaction=False)
        pipe.hmget(self._k(run_id), "units_planned", "units_done", "units_failed", "plan_done")
        pipe.hgetall(self._k(run_id, "counters"))
        pipe.hlen(self._k(run_id, "pending"))
        (planned, done, failed, plan_done), raw, outstanding = pipe.execute()
        if planned is None:
            return None
        return Progress(
            int(planned),
            int(done or 0),
            int(failed or 0),
            plan_done == "1",
            {k: int(v) for k, v in raw.items()},
            int(outstanding),
        )

    def counters(self, run_id: str) -> dict[str, int]:
        return {k: int(v) for k, v in self.r.hgetall(self._k(run_id, "counters")).items()}

    def touch(self, run_id: str) -> None:
        """The run progressed (``updated_at``: also set when it is created, when a planning
        step is committed and when a batch is recorded)."""
        self.r.hset(self._k(run_id), "updated_at", time.time())

    def nudge(self, run_id: str) -> None:
        """Reconcile sent a stalled run's next step: not progress, but no new nudge for a
        stall interval."""
        self.r.hset(self._k(run_id), "nudged_at", time.time())

    def idle_since(self, run_id: str) -> float:
        """The later of its last progress and its last nudge."""
        updated, nudged = self.r.hmget(self._k(run_id), "updated_at", "nudged_at")
        return max(float(updated or 0), float(nudged or 0))

    def progressed_at(self, run_ids: list[str]) -> list[float]:
        """When each of these runs last progressed, ``updated_at`` (0 for a run Redis does not
        know)."""
        pipe = self.r.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hget(self._k(run_id), "updated_at")
        return [float(value or 0) for value in pipe.execute()]

    def outstanding_batches(self, run_ids: list[str]) -> dict[str, int]:
        """Per batch kind, the batches these runs have sent and not yet recorded: work
        waiting in a queue, reserved by a worker or running, however many messages the
        broker shows (the autoscaler's signal). One read per run, whatever its size."""
        batch_kinds = kinds.names()
        fields = [f"{part}.{kind}" for kind in batch_kinds for part in ("sent", "recorded")]
        pipe = self.r.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hmget(self._k(run_id), fields)
        out = dict.fromkeys(batch_kinds, 0)
        for values in pipe.execute():
            for i, kind in enumerate(batch_kinds):
                sent, recorded = (int(v or 0) for v in values[2 * i : 2 * i + 2])
                out[kind] += max(0, sent - recorded)
        return out

    # -- what the latest runs were --------------------------------------------------------

    def latest_run_of_corpus(self, corpus: str) -> str | None:
        return self.r.hget(f"{PREFIX}:corpus_latest", corpus)

    def set_corpus_latest(self, corpus: str, run_id: str) -> None:
        self.r.hset(f"{PREFIX}:corpus_latest", corpus, run_id)

    def set_policy_latest(
        self, corpus: str, policy_ref: str, run_id: str, rates: dict[str, Any]
    ) -> None:
        """Per corpus and policy version, the rates of the last finished run (the gauges
        read these)."""
        field = json.dumps([corpus, policy_ref])
        self.r.hset(f"{PREFIX}:policy_latest", field, json.dumps({"run_id": run_id, **rates}))

    def policy_latest(self) -> dict[tuple[str, str], dict[str, Any]]:
        """``(corpus, NAME@N)`` -> the rates of its last finished run."""
        return self._per_corpus_policy(f"{PREFIX}:policy_latest")

    def _per_corpus_policy(self, key: str) -> dict[tuple[str, str], dict[str, Any]]:
        """A hash of JSON values by ``[corpus, NAME@N]``, as ``(corpus, NAME@N)`` -> value."""
        out = {}
        for field, value in self.r.hgetall(key).items():
            if field.startswith("["):  # older entries, by policy alone, are left out
                corpus, ref = json.loads(field)
                out[(corpus, ref)] = json.loads(value)
        return out

    # -- review gauges (shared/review/gauges.py) -----------------------------------------

    def mark_reviewed(self, run_id: str) -> None:
        """A run was answered: its review numbers are due for a refresh (a set of run ids,
        each once, emptied by the refreshes)."""
        self.r.sadd(f"{PREFIX}:review_due", run_id)

    def take_reviewed(self, most: int) -> list[str]:
        return list(self.r.spop(f"{PREFIX}:review_due", most) or [])

    def set_review_latest(
        self, corpus: str, policy_ref: str, run_id: str, numbers: dict[str, Any]
    ) -> None:
        """Per corpus and policy version, the review numbers of its newest reviewed run: an
        older run's numbers never replace a newer run's (run ids sort by time)."""
        keys = [f"{PREFIX}:review_latest", f"{PREFIX}:review_latest_run"]
        body = json.dumps({"run_id": run_id, **numbers})
        self._review_latest(keys=keys, args=[json.dumps([corpus, policy_ref]), run_id, body])

    def review_latest(self) -> dict[tuple[str, str], dict[str, Any]]:
        """``(corpus, NAME@N)`` -> the review numbers of its newest reviewed run."""
        return self._per_corpus_policy(f"{PREFIX}:review_latest")

    # -- finishing ----------------------------------------------------------------------

    def claim_finalize(self, run_id: str, ttl: int) -> bool:
        """One finalizer at a time (finalize is idempotent, this just avoids duplicate work)."""
        return bool(self.r.set(self._k(run_id, "finalizing"), os.getpid(), nx=True, ex=ttl))

    def release_finalize(self, run_id: str) -> None:
        self.r.delete(self._k(run_id, "finalizing"))

    def finalizing(self, run_id: str) -> bool:
        return bool(self.r.exists(self._k(run_id, "finalizing")))

    def finish(self, record: RunRecord) -> None:
        """A run ended: keep its record and numbers (a few KB, expiring); drop the rest."""
        pipe = self.r.pipeline()
        key = self._k(record.id)
        pipe.hset(key, mapping={"record": record.model_dump_json(), "state": record.state})
        pipe.delete(
            *self._batch_keys(record.id)[1:],
            self._k(record.id, "counters"),
            self._k(record.id, "held"),
        )
        pipe.srem(f"{PREFIX}:active", record.id)
        pipe.expire(key, FINISHED_TTL_SECONDS)
        pipe.execute()

    # -- the workers, for the planning window -------------------------------------------

    def register_worker(
        self, node: str, slots: int, ttl: int, queues: Iterable[str] | None = None
    ) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.set(f"{PREFIX}:worker:{node}", slots, ex=ttl)
        if queues is not None:
            pipe.set(f"{PREFIX}:consumes:{node}", ",".join(queues), ex=ttl)
        pipe.execute()

    def unregister_worker(self, node: str) -> None:
        self.r.delete(
            f"{PREFIX}:worker:{node}", f"{PREFIX}:running:{node}", f"{PREFIX}:consumes:{node}"
        )

    def announce_running(
        self, node: str, tokens: Iterable[str], every: float, at: float | None = None
    ) -> None:
        """What a worker's parent says its pool executes, every ``every`` seconds (see
        :mod:`shared.runs.liveness`); the key outlives it only while it is not stale."""
        at = time.time() if at is None else at
        record = Running(at=at, every=every, tokens=frozenset(tokens))
        self.r.set(f"{PREFIX}:running:{node}", record.dumps(), ex=math.ceil(record.stale_after))

    def holders_running(self, holders: list[Holder], now: float) -> set[str]:
        """The tokens of ``holders`` that their nodes list as running (one round trip)."""
        nodes = sorted({h.node for h in holders if h.node})
        if not nodes:
            return set()
        raw = self.r.mget([f"{PREFIX}:running:{n}" for n in nodes])
        records = {n: Running.loads(r) for n, r in zip(nodes, raw, strict=True)}
        return {h.token for h in holders if holder_alive(h, records.get(h.node), now)}

    def consumed_queues(self) -> set[str] | None:
        """The queues the live workers consume; None when one of them did not say (a worker
        of an older release, or one announcing right now)."""
        nodes = [key.split(":", 2)[2] for key in self.r.scan_iter(f"{PREFIX}:worker:*", count=1000)]
        if not nodes:
            return set()
        values = self.r.mget([f"{PREFIX}:consumes:{node}" for node in nodes])
        if any(value is None for value in values):
            return None
        return {queue for value in values for queue in value.split(",") if queue}

    # -- waiting for a queue (shared/runs/waiting.py) --------------------------------------

    def pending_kinds(self, run_id: str) -> set[str]:
        """The kinds of the run's pending batches (sent, or held for their read batch)."""
        return {json.loads(spec)["kind"] for spec in self.r.hvals(self._k(run_id, "pending"))}

    def note_waiting(self, run_id: str, queue: str | None, since: str) -> dict[str, str] | None:
        """Keep (or clear) the queue a run waits on: ``since`` is kept from when it was first
        noted, for as long as the run waits on that queue."""
        key = self._k(run_id)
        held, known = self.r.hmget(key, "waiting_for", "record")
        if queue is None or known is None:
            if held:
                self.r.hdel(key, "waiting_for")
            return None
        noted = json.loads(held) if held else None
        if noted is None or noted.get("queue") != queue:
            noted = {"queue": queue, "since": since}
            self.r.hset(key, "waiting_for", json.dumps(noted))
        return noted

    def noted_waiting(self, run_ids: list[str]) -> list[dict[str, str] | None]:
        """The queue each run was last noted waiting on (None: none)."""
        pipe = self.r.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hget(self._k(run_id), "waiting_for")
        return [json.loads(value) if value else None for value in pipe.execute()]

    def worker_slots(self) -> int:
        keys = list(self.r.scan_iter(f"{PREFIX}:worker:*", count=1000))
        values = self.r.mget(keys) if keys else []
        return sum(int(v) for v in values if v)

    # -- after a loss ---------------------------------------------------------------------

    def epoch(self) -> str | None:
        return self.r.get(f"{PREFIX}:epoch")

    def set_epoch(self, value: str) -> None:
        self.r.set(f"{PREFIX}:epoch", value)


class StorageOnly:
    """The run state of a command with no Redis configured: nothing is live, so every run
    is read from storage (its record, summary and index), as after a loss of Redis."""

    r = None

    def get(self, run_id: str) -> RunRecord | None:
        return None

    def progress(self, run_id: str) -> Progress | None:
        return None

    def known(self, run_id: str) -> bool:
        return False

    def update(self, run_id: str, **fields: Any) -> RunRecord | None:
        return None  # the caller writes the record to storage

    def finish(self, record: RunRecord) -> None:
        pass

    def latest_run_of_corpus(self, corpus: str) -> str | None:
        return None
