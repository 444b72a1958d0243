"""Planning: page through a corpus listing, without reading bodies, into batches of units.

The ``documents/``, ``claims/`` and ``candidates/`` listings are each sorted by key, but
``<id>.txt`` and ``<id>.jsonl`` can sort two ids differently, so the merge does not assume
one order: a document id is final once every listing has passed the key it would have
there. Pending ids stay few (about a page per listing), so memory does not grow with the
corpus, and the cursor (per listing, the last key whose id was emitted, plus the ids
emitted ahead of it) makes planning resumable with every unit planned exactly once.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundswell.shared.corpus import (
    CANDIDATES,
    CLAIMS,
    DOCUMENTS,
    LABELS,
    LAST_DOCUMENT_SUFFIX,
    SCHEMA_KEY,
    SUFFIX,
    InputError,
    InputFileError,
    ListedDocument,
    RecordSource,
    doc_id_of,
    document_key,
    source_format,
)
from groundswell.shared.runs import kinds
from groundswell.shared.runs.index import remember
from groundswell.shared.runs.layout import batch_id, plan_key
from groundswell.shared.runs.models import iso, utcnow
from groundswell.shared.runs.state import BatchSpec
from groundswell.shared.runs.units import unit_key
from groundswell.shared.storage import ObjectInfo, ObjectStore, StorageRefused, drop_snapshot
from groundswell.shared.words import counted

if TYPE_CHECKING:
    from groundswell.shared.runs.kinds import Kind
    from groundswell.shared.runs.service import RunService


def streams() -> tuple[str, ...]:
    """The listings planning pages: ``documents/``, each kind's (``claims/``, ...), and
    ``labels/``: a unit's listing entries then say whether its document has labels, so an
    unchanged unit is reused without asking for its labels file."""
    listed = (k.listing for k in kinds.all_kinds() if k.listing)
    return tuple(dict.fromkeys((DOCUMENTS, *listed, LABELS)))


@dataclass(slots=True)
class PlannedUnit:
    kind: str
    doc_id: str
    weight: int  # bytes the unit reads: document plus claims or candidates
    # The source file when it is not documents/<id>.txt; a list when the id has several.
    source: str | list[str] | None = None
    # The document's files as listed, key -> [size, etag]: a rerun compares them with the
    # previous run's row to reuse a unit without reading its inputs.
    listing: dict[str, list[Any]] | None = None

    @property
    def key(self) -> str:
        return unit_key(self.kind, self.doc_id)


@dataclass(slots=True)
class _Stream:
    prefix: str
    pages: Iterator[list[ObjectInfo]]
    last_key: bytes | None  # the last key read (or the resume point)
    exhausted: bool = False
    # (key, doc_id) not yet passed by the cursor; doc_id None for a key outside the layout
    read: deque[tuple[str, str | None]] = field(default_factory=deque)
    safe_after: str | None = None

    def passed(self, doc_id: str) -> bool:
        if self.exhausted:
            return True
        if self.last_key is None:
            return False
        suffix = LAST_DOCUMENT_SUFFIX if self.prefix == DOCUMENTS else SUFFIX[self.prefix]
        return (self.prefix + doc_id + suffix).encode() <= self.last_key

    def position(self) -> bytes:
        """How far this listing has read, comparable across listings (``<id><suffix>``).

        It only grows as the listing advances, so always reading the listing with the
        smallest position never starves one of them.
        """
        return self.last_key[len(self.prefix) :] if self.last_key is not None else b""


Take = Callable[[list["PlannedUnit"]], bool]


class CorpusPlanner:
    """Emits units in listing order; ``cursor()`` tells where to resume."""

    def __init__(
        self,
        store: ObjectStore,
        cursor: dict[str, Any] | None = None,
        page_size: int = 1000,
        snapshot: str | None = None,
    ) -> None:
        after = (cursor or {}).get("after", {})
        finished = set((cursor or {}).get("finished", ()))
        self.streams = []
        for prefix in streams():
            start = after.get(prefix)
            stream = _Stream(
                prefix,
                store.list_pages(prefix, start_after=start, page_size=page_size, snapshot=snapshot),
                start.encode() if start else None,
                exhausted=prefix in finished,
            )
            stream.safe_after = start
            self.streams.append(stream)
        self.pending: dict[str, dict[str, int]] = {}
        # Emitted ids still in some listing's read queue, with how many entries remain.
        self.emitted: dict[str, int] = {}
        # Emitted by an earlier step but not yet passed by every listing's cursor (listings
        # can order two ids differently): re-read now, and not emitted twice.
        self.skip: set[str] = set((cursor or {}).get("emitted", ()))
        self.documents = 0
        self.listed = 0  # keys the cursor passed (each once, across resumes)
        # Inputs that make no unit, counted once each as the cursor passes them.
        self.ignored = {"ignored.files": 0, "ignored.documents_without_units": 0}
        # Documents by format (``documents.format.pdf``), counted once each like ``ignored``.
        self.formats: dict[str, int] = {}
        self.sources: dict[str, list[str]] = {}  # source keys of the pending ids
        self.entries: dict[str, dict[str, list[Any]]] = {}  # listing entries of the pending ids
        self.planning = planning_kinds()

    def counters(self) -> dict[str, int]:
        """What planning counts: inputs that made no unit, documents by format."""
        return {k: v for k, v in {**self.ignored, **self.formats}.items() if v}

    def new_step(self) -> None:
        """Count from zero again: a planner kept for the next step counts each step's own."""
        self.listed = 0
        self.ignored = dict.fromkeys(self.ignored, 0)
        self.formats = {}

    @property
    def finished(self) -> bool:
        return all(s.exhausted for s in self.streams) and not self.pending

    def cursor(self) -> dict[str, Any]:
        return {
            "emitted": sorted(self.emitted),
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
            if doc_id is None:  # not an input of the layout (another suffix, a subfolder)
                stream.read.append((info.key, None))
                continue
            stream.read.append((info.key, doc_id))
            self.pending.setdefault(doc_id, {})[stream.prefix] = info.size
            self.entries.setdefault(doc_id, {})[info.key] = [info.size, info.etag]
            if stream.prefix == DOCUMENTS:
                self.sources.setdefault(doc_id, []).append(info.key)
        return True

    def _emit_final(self, take: Take | None) -> tuple[list[PlannedUnit], bool]:
        """Emit the documents every listing has passed, in id order; stop where ``take``
        refuses one (it stays pending, so the cursor does not pass it)."""
        units: list[PlannedUnit] = []
        stopped = False
        for doc_id in sorted(d for d in self.pending if all(s.passed(d) for s in self.streams)):
            seen = self.pending[doc_id]
            keys = self.sources.get(doc_id, [])
            entries = len(seen) + max(0, len(keys) - 1)  # read-queue entries of this id
            if doc_id in self.skip:
                self.skip.discard(doc_id)
                del self.pending[doc_id]
                self.sources.pop(doc_id, None)
                self.entries.pop(doc_id, None)
                self.emitted[doc_id] = entries
                continue
            source: str | list[str] | None = None
            if len(keys) > 1:
                source = sorted(keys)  # two sources for one id: its units fail, unread
            elif keys and keys[0] != document_key(doc_id):
                source = keys[0]
            mine = self._units(doc_id, seen, source)
            if take is not None and not take(mine):
                stopped = True
                break
            del self.pending[doc_id]
            self.sources.pop(doc_id, None)
            self.entries.pop(doc_id, None)
            self.emitted[doc_id] = entries
            if DOCUMENTS in seen:
                self.documents += 1
                fmt = "conflict" if len(keys) > 1 else source_format(keys[0]) if keys else None
                name = f"documents.format.{fmt}"
                self.formats[name] = self.formats.get(name, 0) + 1
                if not mine:
                    self.ignored["ignored.documents_without_units"] += 1
            units += mine
        for stream in self.streams:
            while stream.read and (stream.read[0][1] is None or stream.read[0][1] in self.emitted):
                key, doc_id = stream.read.popleft()
                stream.safe_after = key
                self.listed += 1
                if doc_id is None:
                    self.ignored["ignored.files"] += 1
                    continue
                self.emitted[doc_id] -= 1
                if not self.emitted[doc_id]:
                    del self.emitted[doc_id]
        return units, stopped

    def _units(self, doc_id: str, seen: dict[str, int], source: Any) -> list[PlannedUnit]:
        return document_units(self.planning, doc_id, seen, source, self.entries.get(doc_id))

    def step(self, pages: int, take: Take | None = None) -> list[PlannedUnit]:
        """Read up to ``pages`` listing pages; return the units that became final.

        ``take`` is offered each document's units in order and returns False to end the
        step before that document (planning's window is full).
        """
        # What the last step's full window refused first (a planner kept across steps).
        units, stopped = self._emit_final(take)
        if stopped:
            return units
        listed, pulls = self.listed, 0
        # At least ``pages`` pulls, and on until the cursor moves: a step that passed nothing
        # would be repeated as is by the next one (a document id is final only once every
        # listing is past ``<id>.xml``, which may take one more page than its last source).
        while pulls < max(pages, len(self.streams)) or (self.listed == listed and not units):
            pulls += 1
            if not self._pull():
                break
            more, stopped = self._emit_final(take)
            units += more
            if stopped:
                return units
        if all(s.exhausted for s in self.streams):
            units += self._emit_final(take)[0]
        return units

    def __iter__(self) -> Iterator[PlannedUnit]:
        while not self.finished:
            yield from self.step(1)


def planning_kinds() -> list[Kind]:
    """The kinds planned from a corpus's documents, a reading kind last (it plans for the
    others)."""
    planning = [k for k in kinds.all_kinds() if k.plan is not None and k.follow is None]
    return sorted(planning, key=lambda k: k.reading)


def document_units(
    planning: list[Kind],
    doc_id: str,
    seen: dict[str, int],
    source: Any,
    entries: dict[str, list[Any]] | None,
) -> list[PlannedUnit]:
    """A document's units, one per kind whose planning rule makes one; a reading kind's
    first (it plans for the others, and they wait for it)."""
    mine: list[PlannedUnit] = []
    listed = kinds.Listed(doc_id, seen, source, mine)
    for kind in planning:
        assert kind.plan is not None
        weight = kind.plan(listed)
        if weight is not None:
            unit = PlannedUnit(kind.name, doc_id, weight, source, entries)
            mine.insert(0, unit) if kind.reading else mine.append(unit)
    return mine


class SourcePlanner:
    """Emits the units of a :class:`RecordSource`'s documents (a producer's files read in
    place), in its order, with :class:`CorpusPlanner`'s interface: the source pages its
    documents from a cursor of its own, so planning holds a page at a time."""

    def __init__(self, source: RecordSource, cursor: dict[str, Any] | None = None) -> None:
        self._at = (cursor or {}).get("source")
        self.pages = source.listed_documents(self._at)
        self.finished = bool((cursor or {}).get("finished"))
        self.held: list[ListedDocument] = []  # the rest of a page a full window refused
        self.documents = self.listed = 0
        self.formats: dict[str, int] = {}
        self.planning = planning_kinds()

    def counters(self) -> dict[str, int]:
        return {k: v for k, v in self.formats.items() if v}

    def new_step(self) -> None:
        self.listed, self.formats = 0, {}

    def cursor(self) -> dict[str, Any]:
        return {"source": self._at, **({"finished": True} if self.finished else {})}

    def step(self, pages: int, take: Take | None = None) -> list[PlannedUnit]:
        units: list[PlannedUnit] = []
        read = 0
        while read < pages and not self.finished:
            page = self.held or next(self.pages, None)
            self.held = []
            if page is None:
                self.finished = True
                break
            read += 1 if page else 0
            for i, doc in enumerate(page):
                # Its source file when it is not text (a PDF sent to the provider): read first.
                source = next(
                    (k for k in doc.entries if k.startswith(DOCUMENTS)), document_key(doc.doc_id)
                )
                given = None if source == document_key(doc.doc_id) else source
                mine = document_units(self.planning, doc.doc_id, doc.seen, given, doc.entries)
                if take is not None and not take(mine):
                    self.held = page[i:]
                    return units
                self._at = doc.after
                self.documents += 1
                self.listed += len(doc.entries)
                name = f"documents.format.{source_format(source)}"
                self.formats[name] = self.formats.get(name, 0) + 1
                units += mine
        return units

    def __iter__(self) -> Iterator[PlannedUnit]:
        while not self.finished:
            yield from self.step(1)


# The planner of each run's last step planned in this process, by run id: the next step,
# when it resumes from that step's cursor here, reads on from the listing pages already
# fetched instead of listing again from the cursor (LIST requests = listing pages). A step
# run elsewhere (another worker) lists from its cursor as before. A few runs at most.
_KEPT: OrderedDict[str, tuple[int, CorpusPlanner | SourcePlanner]] = OrderedDict()
KEPT_PLANNERS = 8


def kept_planner(
    run_id: str, step: int, cursor: dict[str, Any]
) -> CorpusPlanner | SourcePlanner | None:
    """The planner that planned ``step`` of the run here, if its cursor is the committed one."""
    kept = _KEPT.pop(run_id, None)
    if kept is None or kept[0] != step or kept[1].cursor() != cursor:
        return None
    kept[1].new_step()
    return kept[1]


def keep_planner(run_id: str, step: int, planner: CorpusPlanner | SourcePlanner) -> None:
    remember(_KEPT, run_id, (step, planner), KEPT_PLANNERS)


# The corpus of each run planned in this process, by run id, as its first step here opened
# it: its corpus.yaml is read once per process, as a run's units read it (one context per
# process), not once per planning step.
_CORPORA: OrderedDict[str, ObjectStore] = OrderedDict()


def planning_corpus(service: RunService, record: Any) -> ObjectStore:
    """The run's corpus (InputFileError: a bad corpus.yaml, not kept)."""
    corpus = _CORPORA.get(record.id)
    if corpus is None:
        corpus = service.corpus_store(record)
    remember(_CORPORA, record.id, corpus, KEPT_PLANNERS)
    return corpus


def corpus_planner(
    corpus: ObjectStore, cursor: dict[str, Any] | None, page_size: int, snapshot: str | None
) -> CorpusPlanner | SourcePlanner:
    """The planner of a corpus: its source's when it is one, else its layout's listings."""
    if isinstance(corpus, RecordSource):
        return SourcePlanner(corpus, cursor)
    return CorpusPlanner(corpus, cursor, page_size, snapshot)


class Batcher:
    """Groups units of one kind into ``(kind, doc_ids)`` batches under a byte budget.

    A unit larger than the budget gets a batch of its own; small documents share one, so
    per-task overhead stays small.
    """

    def __init__(self, max_bytes: int, max_units: int) -> None:
        self.max_bytes, self.max_units = max_bytes, max_units
        self.closed: list[tuple[str, list[str]]] = []
        self.open: dict[str, tuple[list[str], int]] = {}
        self.units: list[PlannedUnit] = []

    def add(self, unit: PlannedUnit) -> None:
        self.units.append(unit)
        ids, size = self.open.get(unit.kind, ([], 0))
        if ids and (size + unit.weight > self.max_bytes or len(ids) >= self.max_units):
            self.closed.append((unit.kind, ids))
            ids, size = [], 0
        ids.append(unit.doc_id)
        self.open[unit.kind] = (ids, size + unit.weight)

    @property
    def count(self) -> int:
        return len(self.closed) + sum(1 for ids, _ in self.open.values() if ids)

    def finish(self, spread: int = 0) -> list[tuple[str, list[str]]]:
        """The batches. With ``spread`` (the last step of a run), each kind's units are cut
        again into at least ``spread`` batches of even size, so that the workers finish
        together instead of one of them running a long batch alone at the end."""
        out = self.closed + [(kind, ids) for kind, (ids, _) in self.open.items() if ids]
        units, self.closed, self.open, self.units = self.units, [], {}, []
        if spread <= 1:
            return out
        even: list[tuple[str, list[str]]] = []
        for kind in dict.fromkeys(u.kind for u in units):
            mine = [u for u in units if u.kind == kind]
            count = max(sum(1 for k, _ in out if k == kind), min(len(mine), spread))
            cap = min(self.max_units, -(-len(mine) // count))
            even += batches(mine, self.max_bytes, cap)
        return even


def batches(
    units: list[PlannedUnit], max_bytes: int, max_units: int
) -> Iterator[tuple[str, list[str]]]:
    """``units`` as batches (see :class:`Batcher`)."""
    batcher = Batcher(max_bytes, max_units)
    for unit in units:
        batcher.add(unit)
    yield from batcher.finish()


class StepBatcher:
    """The batches of one planning step, reading batches and the batches that wait for them.

    Units of text documents are batched as :class:`Batcher` does. A document read from
    another format has a unit of the reading kind (``read``): those are batched on their own
    (by source bytes), and each reading batch gets one batch of exactly its documents for
    each kind that waits for a reading, held until it is recorded, so a held batch never
    waits for two reading batches. Each kind in ``followers`` (on in this run: ``ledger``)
    adds, behind the batches it follows, a batch of their documents held until they are
    recorded.
    """

    def __init__(self, max_bytes: int, max_units: int, followers: list[Kind] | None = None) -> None:
        self.followers = followers or []
        self.plain = Batcher(max_bytes, max_units)
        self.reads = Batcher(max_bytes, max_units)
        self.waiting: dict[str, set[str]] = {}  # doc_id -> kinds that wait for its reading
        self.sources: dict[str, Any] = {}
        self.listing: dict[str, dict[str, list[Any]]] = {}
        reading = kinds.reading_kind()
        self.reading = reading.name if reading is not None else None
        self.waiters = [k.name for k in kinds.all_kinds() if k.waits_for_reading]

    def add(self, unit: PlannedUnit) -> None:
        if unit.source is not None:
            self.sources[unit.doc_id] = unit.source
        if unit.listing:
            self.listing[unit.doc_id] = unit.listing
        if unit.kind == self.reading:
            self.reads.add(unit)
            self.waiting[unit.doc_id] = set()
        elif unit.doc_id in self.waiting:
            self.waiting[unit.doc_id].add(unit.kind)
        else:
            self.plain.add(unit)

    @property
    def count(self) -> int:
        """Batches so far, counting each reading batch with those it holds (and each batch
        with its followers' batches)."""
        count = self.plain.count + (1 + len(self.waiters)) * self.reads.count
        return (1 + len(self.followers)) * count

    def _spec(self, batch: str, kind: str, ids: list[str], **extra: Any) -> BatchSpec:
        sources = {d: self.sources[d] for d in ids if d in self.sources}
        listing = {d: self.listing[d] for d in ids if d in self.listing}
        return BatchSpec(batch, kind, ids, sources or None, listing=listing or None, **extra)

    def finish(self, seq: int, spread: int = 0) -> tuple[list[BatchSpec], int]:
        """The step's batches numbered from ``seq``, and the next number."""
        specs: list[BatchSpec] = []
        plain = [self._spec("", kind, ids) for kind, ids in self.plain.finish(spread)]
        seq = self._hold_followers(plain, seq, specs, numbered=False)
        for _, ids in self.reads.finish(spread):
            read = batch_id(seq)
            seq += 1
            held = []
            for kind in self.waiters:
                mine = [d for d in ids if kind in self.waiting[d]]
                if mine:
                    held.append(self._spec(batch_id(seq), kind, mine, after=read))
                    seq += 1
            assert self.reading is not None
            then = [h.batch for h in held] or None
            specs.append(self._spec(read, self.reading, ids, then=then))
            seq = self._hold_followers(held, seq, specs, numbered=True)
        self.waiting, self.sources, self.listing = {}, {}, {}
        return specs, seq

    def _hold_followers(
        self, group: list[BatchSpec], seq: int, specs: list[BatchSpec], numbered: bool
    ) -> int:
        """Append ``group``'s batches (numbered here unless ``numbered``), each followed by
        the batches it holds for the followers, numbered from ``seq``; the next number."""
        holds: list[list[tuple[str, list[str]]]] = [[] for _ in group]
        for kind in self.followers:
            assert kind.follow is not None
            for mine, ids in zip(holds, kind.follow(group), strict=True):
                if ids:
                    mine.append((kind.name, ids))
        for spec, mine in zip(group, holds, strict=True):
            if not numbered:
                spec = replace(spec, batch=batch_id(seq))
                seq += 1
            if not mine:
                specs.append(spec)
                continue
            numbers = [batch_id(seq + i) for i in range(len(mine))]
            specs.append(replace(spec, then=[*(spec.then or []), *numbers]))
            for number, (kind, ids) in zip(numbers, mine, strict=True):
                specs.append(self._spec(number, kind, ids, after=spec.batch))
            seq += len(mine)
        return seq


def step_batches(
    units: list[PlannedUnit],
    max_bytes: int,
    max_units: int,
    seq: int = 0,
    followers: list[Kind] | None = None,
) -> list[BatchSpec]:
    """``units`` as numbered batches (see :class:`StepBatcher`)."""
    batcher = StepBatcher(max_bytes, max_units, followers)
    for unit in units:
        batcher.add(unit)
    return batcher.finish(seq)[0]


# -- planning a run, step by step ------------------------------------------------------------

LAYOUT = (
    "documents/<id>.txt, with claims/<id>.jsonl (quotations to verify) and/or "
    "candidates/<id>.json (facts to admit), and schema.json for admission"
)


SURVEY_KEYS = 500  # keys of a corpus that planned nothing read to say what it holds
SHOWN_FILES = 5
_EXPECTED = {
    DOCUMENTS: "documents/<id>.txt (or .pdf, .html, .xml)",
    CLAIMS: "claims/<id>.jsonl",
    CANDIDATES: "candidates/<id>.json",
    LABELS: "labels/<id>.json",
}


def survey(corpus: ObjectStore) -> tuple[list[str], list[str]]:
    """The first keys of a corpus that planned nothing (one listing page), and what each
    common mistake among them should have been: a folder named almost as the layout's
    (``document/``), a file of the wrong kind in a layout folder (``claims/<id>.json``),
    files at the top level (a flat folder)."""
    import difflib

    from groundswell.shared.storage import StorageError

    try:
        keys = [info.key for info in next(corpus.list_pages("", page_size=SURVEY_KEYS), [])]
    except (StorageError, StorageRefused, OSError):
        return [], []
    hints = []
    folders = [prefix.rstrip("/") for prefix in _EXPECTED]
    for folder in sorted({k.split("/", 1)[0] for k in keys if "/" in k} - set(folders)):
        close = difflib.get_close_matches(folder, folders, n=1, cutoff=0.6)
        if close:
            hints.append(f"{folder}/ is not {close[0]}/")
    for prefix, expected in _EXPECTED.items():
        wrong = [k for k in keys if k.startswith(prefix) and doc_id_of(k, prefix) is None]
        if wrong:
            more = f" ({counted(len(wrong), 'such file')})" if len(wrong) > 1 else ""
            hints.append(f"{wrong[0]}{more} is not {expected}")
    flat = [k for k in keys if "/" not in k and k != SCHEMA_KEY]
    if flat:
        hints.append(
            f"{counted(len(flat), 'file')} at the top level ({flat[0]}, ...) belong in "
            "documents/, claims/ and candidates/"
        )
    return keys, hints


def nothing_to_do(
    record: Any, counters: dict[str, int], corpus: ObjectStore | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """Why a run planned no unit, in words that say what was found and what the layout
    must be (a local folder that does not exist is said to be missing)."""
    if "://" not in record.corpus and not Path(record.corpus).is_dir():
        message = f"corpus folder {record.corpus} does not exist"
        return message, [InputError(record.corpus, message).as_dict()]
    docs = counters.get("ignored.documents_without_units", 0)
    stray = counters.get("ignored.files", 0)
    keys, hints = survey(corpus) if corpus is not None else ([], [])
    found = []
    if docs:
        found.append(f"{counted(docs, 'document')} without claims or candidates")
    if stray:
        found.append(f"{counted(stray, 'file')} outside the layout")
    seen = f"found {' and '.join(found)}" if found else "found no files at all"
    if keys:
        listed = ", ".join(keys[:SHOWN_FILES]) + (", ..." if len(keys) > SHOWN_FILES else "")
        many = f"{len(keys)}+" if len(keys) >= SURVEY_KEYS else str(len(keys))
        seen = f"found {many} {'file' if len(keys) == 1 else 'files'} ({listed})" + (
            f": {', '.join(found)}" if found else ""
        )
    message = f"nothing to do in {record.corpus}: {seen}; " + "".join(f"{h}; " for h in hints)
    message += f"a corpus holds {LAYOUT}"
    return message, [InputError(record.corpus, message).as_dict()]


def corpus_moved(settings: Any, record: Any) -> InputError | None:
    """Why the corpus may not be read here, for a run the API checked: it no longer lies
    under the allowed root it was checked under (a link swapped in since), or not under this
    worker's own GROUNDSWELL_ALLOWED_CORPORA when it has one. None: read it."""
    from groundswell.shared.settings import corpus_under

    root = record.allowed_under
    if root is None:
        return None
    if not corpus_under(record.corpus, root):
        where = f"no longer under {root}, the GROUNDSWELL_ALLOWED_CORPORA root it was checked under"
    elif settings.allowed_corpora and not settings.corpus_allowed(record.corpus):
        where = "not under this worker's GROUNDSWELL_ALLOWED_CORPORA"
    else:
        return None
    return InputError(record.corpus, f"the corpus is {where}: not read")


def schema_problem(corpus: ObjectStore, settings: Any) -> InputError | None:
    """What is wrong with the corpus's schema.json, if it has one (checked once, before any
    unit, so that a bad schema fails the run rather than every admission unit)."""
    from groundswell.shared.admit.errors import PacketError
    from groundswell.shared.admit.packet import parse_schema as admission_schema
    from groundswell.shared.corpus import SCHEMA_KEY, InputFileError, parse_schema

    try:
        data = corpus.get(SCHEMA_KEY, max_bytes=settings.max_document_bytes)
    except KeyError:
        return None
    except StorageRefused as exc:
        return InputError(SCHEMA_KEY, f"refused: {exc}")
    try:
        admission_schema(parse_schema(data, SCHEMA_KEY))
    except InputFileError as exc:
        return exc.error
    except PacketError as exc:
        return InputError(SCHEMA_KEY, str(exc))
    return None


PAGES_PER_STEP = 4  # about one listing page of each of documents/, claims/, candidates/, labels/


@dataclass
class PlanStep:
    """One planning step as stored (``runs/<id>/plan/<step>.json``), before it is committed.

    Written create-once, so a planner that resumes after a crash, or a second planner,
    commits exactly the batches the first one wrote.
    """

    step: int
    batches: list[BatchSpec]
    cursor: dict[str, Any]
    finished: bool
    next_seq: int
    counters: dict[str, int] = field(default_factory=dict)  # inputs that made no unit

    def dumps(self) -> bytes:
        return json.dumps(
            {
                "step": self.step,
                "batches": [
                    [b.batch, b.kind, b.doc_ids, *([b.extras()] if b.extras() else [])]
                    for b in self.batches
                ],
                "cursor": self.cursor,
                "finished": self.finished,
                "next_seq": self.next_seq,
                "counters": self.counters,
            },
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")

    @classmethod
    def loads(cls, data: bytes) -> PlanStep:
        body = json.loads(data)
        batches = [
            BatchSpec.make(b[0], b[1], b[2], b[3] if len(b) > 3 else {}) for b in body["batches"]
        ]
        return cls(
            body["step"],
            batches,
            body["cursor"],
            body["finished"],
            body["next_seq"],
            body.get("counters", {}),
        )


def read_step(store: ObjectStore, run_id: str, step: int) -> PlanStep | None:
    try:
        return PlanStep.loads(store.get(plan_key(run_id, step)))
    except KeyError:
        return None


def plan_run(service: RunService, run_id: str) -> bool:
    """Plan until the listing ends, the window is full, or the step's time is up.

    Returns True once planning is finished. Backpressure: while ``window`` batches are
    pending, planning pauses; the record that drains the window to half sends the plan
    task again. What is outstanding is the run's own ``pending`` count, so this works
    with any broker.
    """
    from groundswell.shared.runs.finish import fail_run
    from groundswell.shared.runs.service import FINALIZE, PLAN

    settings, runs = service.settings, service.runs
    record = runs.get(run_id)
    if record is None or record.terminal:
        return True  # unknown to Redis (lost): reconcile rebuilds the run and plans on
    if record.state == "queued":
        record = runs.update(run_id, state="planning", started_at=iso(utcnow())) or record
    moved = corpus_moved(settings, record)
    if moved is not None:  # no retry can bring it back: the run fails saying why
        fail_run(service, record, str(moved), [moved.as_dict()])
        return True
    output = service.store(record.output)
    try:
        corpus = planning_corpus(service, record)
    except InputFileError as exc:  # a bad corpus.yaml: no retry mends it
        fail_run(service, record, f"invalid corpus: {exc}", [exc.error.as_dict()])
        return True
    deadline = time.monotonic() + settings.plan_step_seconds
    window = service.window()
    while True:
        state = runs.plan_state(run_id)
        if state.done:
            return True
        if state.outstanding >= window and runs.wait_for_window(run_id, window, window // 2):
            return False
        number = state.step + 1
        step = read_step(output, run_id, number)
        if step is None and number == 1:
            problem = schema_problem(corpus, settings)
            if problem is not None:
                fail_run(
                    service, record, f"invalid admission schema: {problem}", [problem.as_dict()]
                )
                return True
        planner = None
        if step is None:
            planner = kept_planner(run_id, state.step, state.cursor or {}) or corpus_planner(
                corpus, state.cursor, settings.list_page_size, run_id
            )
            followers = [k for k in kinds.all_kinds() if k.follow and k.on_in(record)]
            batcher = StepBatcher(settings.batch_bytes, settings.batch_max_units, followers)
            room = max(1, window - state.outstanding)

            def take(
                units: list[PlannedUnit], batcher: StepBatcher = batcher, room: int = room
            ) -> bool:
                if batcher.count >= room:
                    return False  # the window is full: the rest waits for the next step
                for unit in units:
                    batcher.add(unit)
                return True

            try:
                planner.step(PAGES_PER_STEP, take)
            except StorageRefused as exc:
                error = InputError(record.corpus, f"the corpus cannot be listed: {exc}")
                fail_run(service, record, str(error), [error.as_dict()])
                return True
            spread = 2 * service.worker_slots() if planner.finished else 0
            specs, seq = batcher.finish(state.next_seq, spread)
            counters = planner.counters()
            if planner.listed:
                counters["planning.listed"] = planner.listed
            step = PlanStep(number, specs, planner.cursor(), planner.finished, seq, counters)
            if not output.put(plan_key(run_id, number), step.dumps(), create_only=True):
                step = read_step(output, run_id, number) or step
                planner = None  # another process planned this step: its planner is not ours
        committed, pending = runs.commit_plan(
            run_id,
            number,
            step.batches,
            next_seq=step.next_seq,
            cursor=step.cursor,
            finished=step.finished,
            lease_until=service.queued_lease_until(),
            counters=step.counters,
        )
        if committed and planner is not None and not step.finished:
            keep_planner(run_id, number, planner)
        if committed:
            for spec in step.batches:
                if not spec.held:  # a held batch is sent by the record of its read batch
                    service.enqueue(spec.kind, [run_id, spec.batch])
        if step.finished:
            for prefix in streams():
                drop_snapshot(corpus, prefix, run_id)
            progress = runs.progress(run_id)
            if committed and progress is not None and progress.planned == 0:
                fail_run(service, record, *nothing_to_do(record, progress.counters, corpus))
                return True
            runs.update(run_id, state="running")
            if committed and pending == 0:
                service.enqueue(FINALIZE, [run_id])
            return True
        if time.monotonic() >= deadline:
            service.enqueue(PLAN, [run_id])
            return False
