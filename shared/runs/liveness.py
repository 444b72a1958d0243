"""Is the delivery that holds a batch still running? Asked before a lease is taken back.

A lease is renewed from a thread of the process that computes the batch; on a loaded
machine that thread can be late, and an expired lease alone would send the batch again,
count a delivery and, at the redelivery cap, give a valid unit up. So before ``reconcile``
resends a batch, or a new delivery takes it over, the holder is looked up in what its
worker's parent process announces (``gs:running:<node>``, refreshed every third of a lease
by ``workers/registry.py``): the message ids its pool is executing, and when it said so.

The parent process does no computing, so its announcement is timely when a busy child's
renewals are not; it drops a delivery as soon as the child ends it (done, failed, killed,
over its hard time limit), and the whole record goes stale when the worker dies.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

# A worker's record is stale, the worker stopped, after three of its announcements were
# missed, and never sooner than this: a parent process late by a few seconds is not dead.
MIN_STALE_SECONDS = 10.0
# A delivery may begin a little before its parent lists it (the pool reports the start
# asynchronously): a record made less than this after the delivery began may lack it.
LISTING_GRACE_SECONDS = 5.0


class Running(BaseModel):
    """What a worker's parent process announces: the deliveries its pool runs, and when."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    at: float
    every: float = 10.0  # how often the worker announces
    tokens: frozenset[str] = frozenset()

    @property
    def stale_after(self) -> float:
        return max(3 * self.every, MIN_STALE_SECONDS)

    def dumps(self) -> str:
        return self.model_dump_json()

    @classmethod
    def loads(cls, raw: str | None) -> Running | None:
        if not raw:
            return None
        try:
            return cls.model_validate_json(raw)
        except ValueError:  # a record this version cannot read says nothing about liveness
            return None


@dataclass(frozen=True)
class Holder:
    """The delivery that holds a batch's lease: its message id, its node, when it began."""

    token: str
    node: str
    since: float


def holder_alive(holder: Holder, running: Running | None, now: float) -> bool:
    """Whether ``holder`` is still running, from its node's record as read at ``now``.

    Unknown means no: a holder with no node (a worker of an earlier version), a node with
    no record or a stale one leaves the decision to the lease, as before.
    """
    if not holder.node or running is None or now - running.at > running.stale_after:
        return False
    if holder.token in running.tokens:
        return True
    return running.at < holder.since + LISTING_GRACE_SECONDS
