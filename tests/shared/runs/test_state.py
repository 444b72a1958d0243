"""Batch accounting on a real Redis: exactly once, leases, splits and the redelivery cap."""

from __future__ import annotations

import json
import time

import pytest

from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs.layout import segment_key
from groundswell.shared.runs.liveness import LISTING_GRACE_SECONDS, MIN_STALE_SECONDS
from groundswell.shared.runs.models import RunRecord
from groundswell.shared.runs.service import RunService
from groundswell.shared.runs.state import BatchSpec, RunStore, redis_client
from groundswell.shared.settings import Settings
from groundswell.shared.storage import open_store

pytestmark = pytest.mark.integration


@pytest.fixture
def runs(service_settings) -> RunStore:
    return RunStore(redis_client(str(service_settings["broker_url"])))


def _record(run_id: str = "r1", **changes) -> RunRecord:
    record = RunRecord(
        id=run_id,
        corpus="/c",
        output="/o",
        policy={"ref": "default@1"},
        engines={},
        created_at="now",
    )
    return record.model_copy(update=changes)


def _plan(runs: RunStore, run_id: str, step: int, batches: list[BatchSpec], finished=False):
    return runs.commit_plan(
        run_id,
        step,
        batches,
        next_seq=step * 10,
        cursor={"after": {}},
        finished=finished,
        lease_until=time.time() + 3600,
    )


def _expired(runs: RunStore, run_id: str) -> list[BatchSpec]:
    """What reconcile sends again: the expired batches whose holder is gone."""
    return runs.expired(run_id, time.time() + 60, kept_until=time.time() + 30).resent


def test_a_batch_counts_once_however_often_it_is_recorded(runs):
    runs.create(_record())
    a, b = BatchSpec("0000000000", "verify", ["x", "y"]), BatchSpec("0000000001", "admit", ["x"])
    assert _plan(runs, "r1", 1, [a, b]) == (True, 2)
    assert _plan(runs, "r1", 1, [a, b]) == (False, 2)  # a second planner of step 1 adds nothing
    first = runs.record("r1", a.batch, 2, 0, {"claims": 3, "units.verify.computed": 2})
    again = runs.record("r1", a.batch, 2, 0, {"claims": 3, "units.verify.computed": 2})
    assert first.fresh and not again.fresh
    assert not runs.record("r1", "0000000099", 5, 0, {"claims": 100}).fresh  # never planned
    assert runs.counters("r1") == {
        "claims": 3,
        "units.verify.computed": 2,
        "units.verify.planned": 2,
        "units.admit.planned": 1,
    }
    assert not first.run_complete  # planning is not finished
    assert _plan(runs, "r1", 2, [], finished=True) == (True, 1)
    last = runs.record("r1", b.batch, 1, 1, {"units.admit.failed": 1})
    assert last.fresh and last.run_complete and last.outstanding == 0
    progress = runs.progress("r1")
    assert (progress.planned, progress.done, progress.failed) == (3, 3, 1)
    assert progress.planning_done


def test_idempotency_key_returns_the_first_run(runs):
    first = runs.create(_record("r1"), "k" * 64)
    second = runs.create(_record("r2"), "k" * 64)
    assert first.id == second.id == "r1"
    assert runs.get("r2") is None


def test_a_live_lease_turns_a_duplicate_delivery_away_and_an_expired_one_is_resent(runs):
    runs.create(_record())
    a, b = BatchSpec("0000000000", "verify", ["x"]), BatchSpec("0000000001", "verify", ["y"])
    _plan(runs, "r1", 1, [a, b])
    begun = runs.begin("r1", a.batch, "delivery-1", lease_seconds=0.3)
    assert begun.status == "run" and begun.attempts == 1 and begun.spec == a
    assert runs.begin("r1", a.batch, "delivery-2", lease_seconds=30).status == "busy"
    # Only the batch whose lease ran out is sent again; b still waits in its queue.
    time.sleep(0.4)
    assert [s.batch for s in _expired(runs, "r1")] == [a.batch]
    assert _expired(runs, "r1") == []  # it got a new lease
    again = runs.begin("r1", a.batch, "delivery-2", lease_seconds=30)
    assert again.status == "run" and again.attempts == 2  # the first delivery died
    runs.record("r1", a.batch, 1, 0, {})
    assert runs.begin("r1", a.batch, "delivery-3", lease_seconds=30).status == "done"
    runs.update("r1", state="cancelled")
    assert runs.begin("r1", b.batch, "delivery-4", lease_seconds=30).status == "stop"


def test_a_retry_gives_its_lease_back_without_counting_a_death(runs):
    runs.create(_record())
    a = BatchSpec("0000000000", "verify", ["x"])
    _plan(runs, "r1", 1, [a])
    assert runs.begin("r1", a.batch, "m1", 30).attempts == 1
    runs.release("r1", a.batch, "m1", lease_until=time.time() + 60, why="", uncount=True)
    assert runs.begin("r1", a.batch, "m1", 30).attempts == 1  # the retry, not a redelivery
    runs.release("r1", a.batch, "m1", lease_until=0, why="ValueError: boom", uncount=False)
    assert [s.batch for s in _expired(runs, "r1")] == [a.batch]
    begun = runs.begin("r1", a.batch, "m2", 30)
    assert begun.attempts == 2 and begun.why == "ValueError: boom"


def test_planning_pauses_at_the_window_and_the_draining_record_resumes_it(runs):
    runs.create(_record())
    batches = [BatchSpec(f"000000000{i}", "verify", [f"d{i}"]) for i in range(4)]
    _plan(runs, "r1", 1, batches)
    assert not runs.wait_for_window("r1", window=5, resume_at=2)  # room left: go on
    assert runs.wait_for_window("r1", window=4, resume_at=2)  # full: pause
    assert not runs.record("r1", batches[0].batch, 1, 0, {}).resume_planning  # 3 pending
    assert runs.record("r1", batches[1].batch, 1, 0, {}).resume_planning  # 2: resume, once
    assert not runs.record("r1", batches[2].batch, 1, 0, {}).resume_planning


def test_outstanding_batches_follow_sends_and_records_per_kind(runs):
    """The autoscaler's signal (groundswell_pending_batches): batches sent and not yet
    recorded, per kind: a held batch counts once its read batch releases it, a split's
    halves replace it, a resend or a duplicate record changes nothing, a rebuilt run counts
    what reconcile will send."""
    runs.create(_record())
    read = BatchSpec("0000000000", "read", ["p"], then=["0000000002"])
    verify = BatchSpec("0000000001", "verify", ["x", "y"])
    held = BatchSpec("0000000002", "admit", ["p"], after=read.batch)
    admit = BatchSpec("0000000003", "admit", ["z"])
    _plan(runs, "r1", 1, [read, verify, held, admit])
    assert runs.outstanding_batches(["r1"]) == {"read": 1, "verify": 1, "admit": 1, "ledger": 0}
    released = runs.record("r1", read.batch, 0, 0, {}).released
    assert [s.batch for s in released] == [held.batch]
    assert runs.outstanding_batches(["r1"]) == {"read": 0, "verify": 1, "admit": 2, "ledger": 0}
    runs.begin("r1", verify.batch, "m1", 30)
    halves = [BatchSpec("0000000001a", "verify", ["x"]), BatchSpec("0000000001b", "verify", ["y"])]
    assert runs.split("r1", verify.batch, "m1", halves, time.time() + 60)
    assert runs.outstanding_batches(["r1"])["verify"] == 2
    runs.r.zadd("gs:run:r1:leases", {admit.batch: 0})  # its message was lost: sent again
    assert [s.batch for s in _expired(runs, "r1")] == [admit.batch]
    assert runs.outstanding_batches(["r1"])["admit"] == 2
    for _ in range(2):
        runs.record("r1", admit.batch, 1, 0, {})
    assert runs.outstanding_batches(["r1"]) == {"read": 0, "verify": 2, "admit": 1, "ledger": 0}
    # Rebuilt from storage: every pending batch gets an expired lease, reconcile sends it.
    runs.restore(_record("r2"), pending=[admit, verify])
    assert runs.outstanding_batches(["r1", "r2", "unknown"]) == {
        "read": 0,
        "verify": 3,
        "admit": 2,
        "ledger": 0,
    }


def test_a_unit_that_keeps_killing_its_worker_is_isolated_by_splits_and_given_up(
    runs, service_settings, tmp_path
):
    """Deliveries that die are simulated by a begin that never records; each later delivery
    of a batch of several units splits it, until the poisonous unit is alone."""
    corpus = open_store(str(tmp_path / "corpus"))
    docs = ["a", "b", "c", "poison"]
    for doc in docs:
        corpus.put(f"documents/{doc}.txt", f"Document {doc} says hello.".encode())
        corpus.put(f"claims/{doc}.jsonl", json.dumps({"id": "1", "claim": "says hello"}).encode())
    settings = Settings(**{**service_settings, "max_redeliveries": 2})
    sent: list[tuple[str, list]] = []
    service = RunService(settings, runs, lambda kind, args: sent.append((kind, args)))
    output = tmp_path / "out"
    PolicyRegistry(open_store(str(output))).ensure_builtins()
    runs.create(_record("r9", corpus=str(tmp_path / "corpus"), output=str(output)))
    _plan(runs, "r9", 1, [BatchSpec("0000000000", "verify", docs)], finished=True)

    def die(batch: str) -> None:
        token = f"dead-{time.monotonic()}"
        assert runs.begin("r9", batch, token, 30).status == "run"
        # It ends without recording, and its lease runs out (what a SIGKILL leaves).
        runs.release("r9", batch, token, lease_until=0, why="", uncount=False)
        assert batch in [s.batch for s in _expired(runs, "r9")]

    def deliver(batch: str) -> str:
        return service.execute("r9", batch, f"live-{time.monotonic()}")

    poisoned = "0000000000"
    while len(next(s for s in runs.pending("r9") if s.batch == poisoned).doc_ids) > 1:
        die(poisoned)
        assert deliver(poisoned) == "split"
        pending = {s.batch: s for s in runs.pending("r9")}
        halves = [poisoned + ".0", poisoned + ".1"]
        assert [args for kind, args in sent[-2:]] == [["r9", h] for h in halves]
        poisoned = next(h for h in halves if "poison" in pending[h].doc_ids)
        healthy = next(h for h in halves if h != poisoned)
        assert deliver(healthy) == "computed"  # the other half is not held back
    assert poisoned == "0000000000.1.1"
    for _ in range(3):
        die(poisoned)
    assert deliver(poisoned) == "gave up"
    progress = runs.progress("r9")
    assert (progress.planned, progress.done, progress.failed) == (4, 4, 1)
    assert sent[-1] == ("finalize", ["r9"])
    segment = json.loads((output / segment_key("r9", "0000000000.1.1")).read_text())
    (row,) = segment["rows"]
    (error,) = row["errors"]
    assert error["file"] == "claims/poison.jsonl"
    assert error["message"].startswith("gave up after 3 deliveries that did not finish: the worker")


def test_a_batch_costs_two_run_state_round_trips(runs, service_settings, tmp_path):
    corpus = open_store(str(tmp_path / "corpus"))
    for doc in ("a", "b", "c"):
        corpus.put(f"documents/{doc}.txt", f"Document {doc} says hello.".encode())
        corpus.put(f"claims/{doc}.jsonl", json.dumps({"id": "1", "claim": "says hello"}).encode())
    output = tmp_path / "out"
    PolicyRegistry(open_store(str(output))).ensure_builtins()
    service = RunService(Settings(**service_settings), runs, lambda kind, args: None)
    runs.create(_record("rt", corpus=str(tmp_path / "corpus"), output=str(output)))
    batches = [BatchSpec(f"000000000{i}", "verify", [d]) for i, d in enumerate("abc")]
    _plan(runs, "rt", 1, batches, finished=True)
    assert service.execute("rt", batches[0].batch, "t0") == "computed"  # warms the context
    calls: list[str] = []
    client = runs.r
    original = client.execute_command

    def counting(*args, **kwargs):
        calls.append(str(args[0]))
        return original(*args, **kwargs)

    client.execute_command = counting  # type: ignore[method-assign]
    try:
        assert service.execute("rt", batches[1].batch, "t1") == "computed"
    finally:
        client.execute_command = original  # type: ignore[method-assign]
    assert calls == ["EVALSHA", "EVALSHA"], calls  # begin, record


def test_run_ids_made_in_one_second_sort_in_the_order_they_were_made():
    from datetime import UTC, datetime

    from groundswell.shared.runs.models import new_run_id

    times = [datetime(2026, 11, 30, 14, 0, 0, ms * 1000, tzinfo=UTC) for ms in (5, 17, 250, 999)]
    for _ in range(50):  # whatever the random part
        ids = [new_run_id(t) for t in times]
        assert sorted(ids) == ids


def test_a_run_is_listed_at_the_time_of_its_id() -> None:
    from datetime import UTC, datetime, timedelta

    from groundswell.shared.runs.models import listed_at, new_run_id

    t = datetime(2026, 11, 30, 17, 43, 29, 999_000, tzinfo=UTC)
    a, b = new_run_id(t), new_run_id(t + timedelta(milliseconds=2))
    # Whatever the records' creation times say, the list keeps the ids' order.
    assert listed_at(b, "2026-11-30T17:43:29Z") > listed_at(a, "2026-11-30T17:43:31Z")
    assert listed_at(a, None) == t.timestamp()
    assert (
        listed_at("legacy", "2026-11-30T17:43:29Z")
        == datetime(2026, 11, 30, 17, 43, 29, tzinfo=UTC).timestamp()
    )


def test_an_expired_lease_stays_with_a_holder_its_worker_still_runs(runs):
    """A late renewal: the lease ran out, but the holder's worker lists it as running, so
    reconcile keeps it and a second delivery is turned away; once the worker no longer lists
    it, the batch is sent again and the next delivery counts."""
    runs.create(_record())
    a = BatchSpec("0000000000", "verify", ["x"])
    _plan(runs, "r1", 1, [a])
    assert runs.begin("r1", a.batch, "m1", lease_seconds=0.2, node="w1@host").status == "run"
    runs.announce_running("w1@host", ["m1"], every=1)
    time.sleep(0.3)  # its renewals are late: the lease ran out
    expired = runs.expired("r1", time.time() + 60, kept_until=time.time() + 0.2)
    assert expired.resent == [] and [s.batch for s in expired.kept] == [a.batch]
    time.sleep(0.3)  # late again; a second delivery (a redelivered message) comes
    assert runs.begin("r1", a.batch, "m2", lease_seconds=30, node="w2@host").status == "busy"
    # The holder is gone (killed): a later record of its worker lists another delivery.
    runs.announce_running("w1@host", ["m7"], every=1, at=time.time() + LISTING_GRACE_SECONDS)
    assert [s.batch for s in _expired(runs, "r1")] == [a.batch]
    again = runs.begin("r1", a.batch, "m2", lease_seconds=30, node="w2@host")
    assert again.status == "run" and again.attempts == 2


def test_a_new_delivery_takes_over_from_a_holder_whose_worker_is_gone(runs):
    runs.create(_record())
    a = BatchSpec("0000000000", "verify", ["x"])
    _plan(runs, "r1", 1, [a])
    runs.begin("r1", a.batch, "m1", lease_seconds=0.2, node="w1@host")
    stopped = time.time() - MIN_STALE_SECONDS - 1
    runs.announce_running("w1@host", ["m1"], every=1, at=stopped)  # it stopped announcing
    time.sleep(0.3)
    begun = runs.begin("r1", a.batch, "m2", lease_seconds=30, node="w2@host")
    assert begun.status == "run" and begun.attempts == 2
