"""Whether a batch's holder still runs, decided on a clock the test moves (no services)."""

from __future__ import annotations

from groundswell.shared.runs.liveness import (
    LISTING_GRACE_SECONDS,
    MIN_STALE_SECONDS,
    Holder,
    Running,
    holder_alive,
)

BEGAN = 1_000.0  # when the holder's delivery began (its begin), on the test's clock


def _holder(node: str = "w1@host") -> Holder:
    return Holder("message-1", node, BEGAN)


def test_a_holder_its_worker_lists_is_running_however_late_its_renewals_are():
    # Its lease (say 1.5 s) ran out long ago; its worker's parent still lists it.
    running = Running(at=BEGAN + 600, every=0.5, tokens=frozenset({"message-1", "message-2"}))
    assert holder_alive(_holder(), running, now=BEGAN + 600)
    # Its parent is late too (a busy machine): a few seconds are not a death.
    assert holder_alive(_holder(), running, now=BEGAN + 600 + MIN_STALE_SECONDS)


def test_a_holder_its_worker_no_longer_lists_is_gone():
    # The child was killed, hit its hard time limit, or ended without recording.
    running = Running(at=BEGAN + 60, tokens=frozenset({"message-2"}))
    assert not holder_alive(_holder(), running, now=BEGAN + 61)


def test_a_worker_that_stopped_announcing_runs_nothing():
    # Three announcements missed (and at least MIN_STALE_SECONDS): the worker is gone.
    for every, stale in ((10, 30), (20, 60), (1, MIN_STALE_SECONDS)):
        running = Running(at=BEGAN + 60, every=every, tokens=frozenset({"message-1"}))
        assert holder_alive(_holder(), running, now=BEGAN + 60 + stale), every
        assert not holder_alive(_holder(), running, now=BEGAN + 60 + stale + 0.1), every


def test_a_delivery_that_just_began_may_not_be_listed_yet():
    # The pool reports a start asynchronously: a record made right after the begin, or
    # before it, cannot be expected to list the delivery; a later one must.
    for at in (BEGAN - 5, BEGAN, BEGAN + LISTING_GRACE_SECONDS - 0.1):
        assert holder_alive(_holder(), Running(at=at), now=at + 1), at
    late = Running(at=BEGAN + LISTING_GRACE_SECONDS)
    assert not holder_alive(_holder(), late, now=late.at + 1)


def test_unknown_means_the_lease_decides():
    listed = Running(at=BEGAN + 10, tokens=frozenset({"message-1"}))
    assert not holder_alive(_holder(node=""), listed, now=BEGAN + 10)  # an older worker
    assert not holder_alive(_holder(), None, now=BEGAN + 10)  # no record (or it expired)


def test_the_record_is_json_and_a_bad_one_says_nothing():
    record = Running(at=12.5, every=2, tokens=frozenset({"a", "b"}))
    assert Running.loads(record.dumps()) == record
    for raw in (None, "", "not json", '{"tokens": ["a"]}', '{"at": "soon"}'):
        assert Running.loads(raw) is None, raw
