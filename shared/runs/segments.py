"""Segments: what one batch produced, written once to storage before it is recorded.

A batch task writes its units' index rows and their summed counters as one object,
create-once: a second delivery that finds it adopts it, so what Redis adds up is always
what storage holds. Finalize, rebuilding a run after a loss of Redis, and the live
receipts pages read segments through :func:`covering_segments`, which picks for each
planned batch one set of segments that covers its units exactly once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groundswell.shared.runs.layout import batch_of, segment_key, segment_prefix
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.runs.state import BatchSpec
    from groundswell.shared.runs.units import UnitResult

SEGMENT_FORMAT = 1


class SegmentError(ValueError):
    """A stored segment that does not parse."""


@dataclass
class Segment:
    batch: str
    kind: str
    rows: list[dict[str, Any]]
    counters: dict[str, int] = field(default_factory=dict)
    # The counters of the units computed by this batch rather than found in the cache: what
    # the metrics count (None in segments written before it existed: all of ``counters``).
    fresh: dict[str, int] | None = None

    @property
    def units(self) -> int:
        return len(self.rows)

    @property
    def failed(self) -> int:
        return sum(1 for row in self.rows if row.get("status") == "failed")

    def dumps(self) -> bytes:
        return json.dumps(
            {
                "format": SEGMENT_FORMAT,
                "batch": self.batch,
                "kind": self.kind,
                "counters": self.counters,
                "rows": self.rows,
                **({"fresh": self.fresh} if self.fresh is not None else {}),
            },
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")

    @classmethod
    def loads(cls, data: bytes, key: str) -> Segment:
        try:
            body = json.loads(data)
            return cls(
                body["batch"], body["kind"], body["rows"], body["counters"], body.get("fresh")
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SegmentError(f"{key}: not a segment ({exc})") from None


def sum_counters(parts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for part in parts:
        total.update(part)
    return {k: v for k, v in total.items() if v}


def unit_segment(spec: BatchSpec, results: list[UnitResult]) -> Segment:
    """The segment of a batch whose units each leave a row: the rows, the summed counters,
    and those of the units computed now (what the metrics count)."""
    from groundswell.shared.metrics import computed_now

    rows = [r.row() for r in results]
    counters = [r.counters() for r in results]
    fresh = sum_counters(c for c, row in zip(counters, rows, strict=True) if computed_now(row))
    return Segment(spec.batch, spec.kind, rows, sum_counters(counters), fresh)


def write_segment(store: ObjectStore, run_id: str, segment: Segment) -> Segment:
    """Write once; when another delivery wrote it first, return what it wrote."""
    key = segment_key(run_id, segment.batch)
    if store.put(key, segment.dumps(), create_only=True):
        return segment
    stored = read_segment(store, run_id, segment.batch)
    if stored is None:  # deleted in between: a finished run's cleanup; ours is as good
        store.put(key, segment.dumps())
        return segment
    return stored


def read_segment(store: ObjectStore, run_id: str, batch: str) -> Segment | None:
    key = segment_key(run_id, batch)
    try:
        data = store.get(key)
    except KeyError:
        return None
    return Segment.loads(data, key)


def cover(top: str, present: set[str]) -> list[str]:
    """The batches whose segments stand for ``top``: itself if present, else its halves'.

    A batch is split only while it is pending, and a pending batch is never recorded, so
    when both a batch and its descendants have segments, one of the two was written by a
    delivery that never got recorded; either is a complete result for the same units.
    Preferring the parent keeps the choice the same for every reader.
    """
    if top in present:
        return [top]
    out: list[str] = []
    for child in (f"{top}.0", f"{top}.1"):
        if any(b == child or b.startswith(child + ".") for b in present):
            out += cover(child, present)
    return out


@dataclass(frozen=True)
class Group:
    """The segments of one top-level batch; ``last_key`` is where a listing resumes after it."""

    top: str
    batches: list[str]
    last_key: str


def covering_segments(
    store: ObjectStore,
    run_id: str,
    *,
    start_after: str | None = None,
    snapshot: str | None = None,
    page_size: int = 1000,
) -> Iterator[Group]:
    """Walk the segment listing once, yielding each top-level batch's covering segments.

    Descendants list just before their parent (``7.0``, ``7.1``, ``7``), so a group is
    complete when the listing moves on to another top-level id.
    """
    prefix = segment_prefix(run_id)
    top: str | None = None
    present: set[str] = set()
    last_key = ""
    for page in store.list_pages(
        prefix, start_after=start_after, page_size=page_size, snapshot=snapshot
    ):
        for info in page:
            if not info.key.endswith(".json"):
                continue
            batch = batch_of(info.key)
            this_top = batch.split(".", 1)[0]
            if top is not None and this_top != top:
                yield Group(top, cover(top, present), last_key)
                present = set()
            top = this_top
            present.add(batch)
            last_key = info.key
    if top is not None:
        yield Group(top, cover(top, present), last_key)
