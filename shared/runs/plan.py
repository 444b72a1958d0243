"""Planning: page through a corpus listing, without reading bodies, into batches of units.

The ``documents/``, ``claims/`` and ``candidates/`` listings are each sorted by key, but
``<id>.txt`` and ``<id>.jsonl`` can sort two ids differently, so the merge does not assume
one order: a document id is final once every listing has passed the key it would have
there. Pending ids stay few (about a page per listing), so memory does not grow with the
corpus, and the cursor (per listing, the last key whose id was emitted) makes planning
resumable; re-listing a little after a crash is harmless because planned units are a set.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from shared.corpus import CANDIDATES, CLAIMS, DOCUMENTS, SUFFIX, doc_id_of
from shared.runs.units import ADMIT, VERIFY, unit_key
from shared.storage import ObjectInfo, ObjectStore

STREAMS = (DOCUMENTS, CLAIMS, CANDIDATES)


@dataclass(slots=True)
class PlannedUnit:
    kind: str
    doc_id: str
    weight: int  # bytes the unit reads: document plus claims or candidates

    @property
    def key(self) -> str:
        return unit_key(self.kind, self.doc_id)


@dataclass(slots=True)
class _Stream:
    prefix: str
    pages: Iterator[list[ObjectInfo]]
    last_key: bytes | None  # the last key read (or the resume point)
    exhausted: bool = False
    read: deque[tuple[str, str]] = field(default_factory=deque)  # (key, doc_id) not yet emitted
    safe_after: str | None = None

    def passed(self, doc_id: str) -> bool:
        if self.exhausted:
            return True
        if self.last_key is None:
            return False
        return (self.prefix + doc_id + SUFFIX[self.prefix]).encode() <= self.last_key

    def position(self) -> bytes:
        """How far this listing has read, comparable across listings (``<id><suffix>``).

        It only grows as the listing advances, so always reading the listing with the
        smallest position never starves one of them.
        """
        return self.last_key[len(self.prefix) :] if self.last_key is not None else b""


class CorpusPlanner:
    """Emits units in listing order; ``cursor()`` tells where to resume."""

    def __init__(
        self, store: ObjectStore, cursor: dict[str, Any] | None = None, page_size: int = 1000
    ) -> None:
        after = (cursor or {}).get("after", {})
        finished = set((cursor or {}).get("finished", ()))
        self.streams = []
        for prefix in STREAMS:
            start = after.get(prefix)
            stream = _Stream(
                prefix,
                store.list_pages(prefix, start_after=start, page_size=page_size),
                start.encode() if start else None,
                exhausted=prefix in finished,
            )
            stream.safe_after = start
            self.streams.append(stream)
        self.pending: dict[str, dict[str, int]] = {}
        # Emitted ids still in some listing's read queue, with how many entries remain.
        self.emitted: dict[str, int] = {}
        self.documents = 0

    @property
    def finished(self) -> bool:
        return all(s.exhausted for s in self.streams) and not self.pending

    def cursor(self) -> dict[str, Any]:
        return {
            "after": {s.prefix: s.safe_after for s in self.streams if s.safe_after},
            "finished": [s.prefix for s in self.streams if s.exhausted and not s.read],
        }

    def _pull(self) -> bool:
        """Read one more page from the listing that is furthest behind."""
        live = [s for s in self.streams if not s.exhausted]
        if not live:
            return False
        stream = min(live, key=lambda s: (s.last_key is not None, s.position()))
        page = next(stream.pages, None)
        if page is None:
            stream.exhausted = True
            return True
        for info in page:
            stream.last_key = info.key.encode()
            doc_id = doc_id_of(info.key, stream.prefix)
            if doc_id is None:
                continue  # not an input of this layout (e.g. a stray file)
            stream.read.append((info.key, doc_id))
            self.pending.setdefault(doc_id, {})[stream.prefix] = info.size
        return True

    def _emit_final(self) -> list[PlannedUnit]:
        units: list[PlannedUnit] = []
        for doc_id in [d for d in self.pending if all(s.passed(d) for s in self.streams)]:
            seen = self.pending.pop(doc_id)
            self.emitted[doc_id] = len(seen)
            doc_size = seen.get(DOCUMENTS, 0)
            if DOCUMENTS in seen:
                self.documents += 1
            if CLAIMS in seen:
                units.append(PlannedUnit(VERIFY, doc_id, doc_size + seen[CLAIMS]))
            if CANDIDATES in seen:
                units.append(PlannedUnit(ADMIT, doc_id, doc_size + seen[CANDIDATES]))
        for stream in self.streams:
            while stream.read and stream.read[0][1] in self.emitted:
                key, doc_id = stream.read.popleft()
                stream.safe_after = key
                self.emitted[doc_id] -= 1
                if not self.emitted[doc_id]:
                    del self.emitted[doc_id]
        return units

    def step(self, pages: int) -> list[PlannedUnit]:
        """Read up to ``pages`` listing pages; return the units that became final."""
        units: list[PlannedUnit] = []
        for _ in range(max(pages, len(self.streams))):
            if not self._pull():
                break
            units += self._emit_final()
        if all(s.exhausted for s in self.streams):
            units += self._emit_final()
        return units

    def __iter__(self) -> Iterator[PlannedUnit]:
        while not self.finished:
            yield from self.step(1)


def batches(
    units: list[PlannedUnit], max_bytes: int, max_units: int
) -> Iterator[tuple[str, list[str]]]:
    """Group units of one kind into ``(kind, doc_ids)`` batches under a byte budget.

    A unit larger than the budget gets a batch of its own; small documents share one, so
    per-task overhead stays small.
    """
    open_batches: dict[str, tuple[list[str], int]] = {}
    for unit in units:
        ids, size = open_batches.get(unit.kind, ([], 0))
        if ids and (size + unit.weight > max_bytes or len(ids) >= max_units):
            yield unit.kind, ids
            ids, size = [], 0
        ids.append(unit.doc_id)
        open_batches[unit.kind] = (ids, size + unit.weight)
    for kind, (ids, _) in open_batches.items():
        if ids:
            yield kind, ids


Enqueue = Callable[[str, list[Any]], None]
