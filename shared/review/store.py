"""The review step of stored runs: tasks, answers and resolutions in object storage.

Everything lives in the run's output store, so it survives the loss of Redis:

```
review/tasks/<h[:2]>/<h>.json          one task@1 (h: the hex of its key), with where it was
                                       first made (run, document, unit receipt); create-once
review/current/<h>/<v>.json            reviewer v's latest answer to task h (v: the hex of the
                                       reviewer's key), how many they gave, and when
review/history/<h>/<v>/<n>.json        reviewer v's n-th answer to task h (n: 1, 2, ... nine
                                       digits), create-once, never changed
review/imported/<h>/<v>/<name>         an imported answer's content name: imported once
receipts/review/<r[:2]>/<r>.json       one resolution@1 (r: the hex of its key), create-once
runs/<run_id>/review/manifest.json     the run's task list: its review policy and its pieces
runs/<run_id>/review/<n>.jsonl         one row per task: task key, document, field, key,
                                       codes, mode, item, packet key, unit receipt key
runs/<run_id>/review/resolution.json   the run's latest resolution: one entry per packet
```

A task is named by its key, which covers its packet (the document, schema, policy and
candidates of one admission, and the receipt) and its slot. A reprocessing run that finds
the same receipt therefore lists the same tasks, and their answers (filed by task key, not
by run) come with them. Answers are only ever added: two reviewers answering one task are
both kept, and each reviewer's latest answer counts, in time order. One reviewer may give
one task at most ``review_max_answers`` answers: past them an answer is refused, never kept
and ignored. Storing an answer writes two objects and reads one; reading a task reads one
object per reviewer, never the history (which is paged: ``history``).

Before issue 25 each answer was an object of its own (``review/answers/<h>/<stamp>-<id>.json``)
and every request read them all; a task's answers of that layout are moved into this one the
first time the task is read.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from groundswell.shared.canonical import canonical_text
from groundswell.shared.corpus import RecordSource
from groundswell.shared.review.formats import KEY_RE, chain, json_key, reviewer_key
from groundswell.shared.review.packets import ReviewPacket
from groundswell.shared.review.tasks import TaskMaker, task_key
from groundswell.shared.storage import ObjectStore

PIECE_ROWS = 4096
STATES = ("unanswered", "answered", "disputed")
ROW_FILTERS = ("doc_id", "field", "code")
ANSWERS = "review/answers/"  # the layout before issue 25, moved on read
CURRENT = "review/current/"
HISTORY = "review/history/"
IMPORTED = "review/imported/"
# A reviewer's note on an answer (answer@1 has no member for one: kept beside it, by the
# answer it goes with; ``review/notes/<task>/<reviewer>/<answer's stored name>``).
NOTES = "review/notes/"
MAX_NOTE_CHARS = 2000


class UnknownTask(LookupError):
    """No stored task has this key."""


class ReviewUnavailable(LookupError):
    """The run has no tasks to review yet (it has not finished)."""


class TooManyAnswers(ValueError):
    """A reviewer has given a task as many answers as one reviewer may."""

    def __init__(self, task: str, reviewer: str, count: int) -> None:
        super().__init__(
            f"{reviewer} has given {count} answers to task {task}, the most one reviewer may "
            "give one task (GROUNDSWELL_REVIEW_MAX_ANSWERS): the latest of them counts, and "
            "this one is not stored"
        )


def key_hex(key: str) -> str:
    """The hex part of a store key (``sha256:<hex>``); ValueError for anything else."""
    if not isinstance(key, str) or not KEY_RE.fullmatch(key):
        raise ValueError(f"{str(key)[:80]!r} is not a key (sha256: and 64 hex digits)")
    return key[7:]


def task_object(key: str) -> str:
    h = key_hex(key)
    return f"review/tasks/{h[:2]}/{h}.json"


def answers_prefix(key: str) -> str:
    return f"{ANSWERS}{key_hex(key)}/"


def reviewer_hex(name: str) -> str:
    """A reviewer's name as a store key's part (any name, no path in it)."""
    return reviewer_key(name)[7:]


def current_prefix(key: str) -> str:
    return f"{CURRENT}{key_hex(key)}/"


def history_prefix(key: str) -> str:
    return f"{HISTORY}{key_hex(key)}/"


def current_object(key: str, reviewer: str) -> str:
    return current_prefix(key) + reviewer_hex(reviewer) + ".json"


def history_object(key: str, reviewer: str, n: int) -> str:
    """Reviewer's n-th answer; nine digits, so a listing is in the order they were given."""
    return f"{history_prefix(key)}{reviewer_hex(reviewer)}/{n:09d}.json"


def imported_object(key: str, reviewer: str, name: str) -> str:
    return f"{IMPORTED}{key_hex(key)}/{reviewer_hex(reviewer)}/{name}"


def _content_name(record: Mapping[str, Any]) -> str:
    return json_key("answer@1", dict(record))[7:39]


def _stamp_of(time_: str) -> str:
    """The stamp of an answer@1 time (2026-11-30T12:00:01.5Z -> 20261130T120001500000Z)."""
    whole, _, fraction = time_.removesuffix("Z").partition(".")
    return whole.replace("-", "").replace(":", "") + (fraction + "000000")[:6] + "Z"


def _newer(current: Mapping[str, Any] | None, entry: Mapping[str, Any], n: int) -> dict:
    """A reviewer's current answer after their n-th answer ``entry``: the answer with the
    latest time (an imported older answer joins the history only) and the count n."""
    base = {"format": 1, "reviewer": entry["answer"]["reviewer"], "count": n}
    if current is not None and current["stamp"] > entry["stamp"]:
        return {**base, "stamp": current["stamp"], "answer": current["answer"]}
    return {**base, "stamp": entry["stamp"], "answer": entry["answer"]}


def resolution_object(key: str) -> str:
    h = key_hex(key)
    return f"receipts/review/{h[:2]}/{h}.json"


def run_review_prefix(run_id: str) -> str:
    return f"runs/{run_id}/review/"


def utc_time(now: datetime) -> str:
    """answer@1's time, as groundgate writes it (whole seconds, UTC)."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _target(record: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What an answer says the value is, for telling agreement from disagreement at a glance
    (the resolution decides it exactly, admitting corrections again)."""
    verdict = record.get("verdict")
    if verdict == "unsure":
        return None
    if verdict in ("confirm", "choose"):
        return ("choice", record.get("decision"))
    if verdict == "not_in_document":
        return ("not_in_document",)
    candidate = record.get("candidate") or {}
    return (verdict, canonical_text({k: v for k, v in candidate.items() if k != "id"}))


def latest_by_reviewer(answers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {a["reviewer"]: a for a in answers}


def task_state(answers: list[dict[str, Any]]) -> str:
    """``unanswered``; ``disputed`` when reviewers' latest answers name different values;
    else ``answered``."""
    if not answers:
        return "unanswered"
    targets = {_target(a) for a in latest_by_reviewer(answers).values()} - {None}
    return "disputed" if len(targets) > 1 else "answered"


@dataclass
class Page:
    rows: list[dict[str, Any]]
    cursor: str | None  # the next page's cursor; None at the end
    scanned: int


class ReviewStore:
    """The review objects of one output store."""

    def __init__(self, store: ObjectStore, page_size: int = 1000, max_answers: int = 100) -> None:
        self.store = store
        self.page_size = page_size
        self.max_answers = max_answers
        # The last task-list piece read (its key and lines): pieces never change, and a step
        # through the queue reads the piece of its task to find the row, then reads on from it.
        self._piece: tuple[str, list[str]] = ("", [])

    # -- tasks of a run -------------------------------------------------------------------

    def manifest(self, run_id: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.store.get(run_review_prefix(run_id) + "manifest.json"))
        except KeyError:
            return None

    def build(
        self,
        run_id: str,
        units: Iterator[tuple[str, str, Callable[[], ReviewPacket | None]]],
        policy: Mapping[str, Any],
        meta: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Make and store the tasks of a run from its admission units (doc_id, unit receipt
        key, a loader of its packet), in the order given; write the manifest last. Building
        twice writes the same objects: tasks and pieces depend only on the units and policy."""
        prefix = run_review_prefix(run_id)
        pieces: list[dict[str, Any]] = []
        lines: list[str] = []
        counts = {"tasks": 0, "packets": 0, "documents": 0}

        def flush() -> None:
            if lines:
                key = f"{prefix}{len(pieces)}.jsonl"
                self.store.put(key, "".join(lines).encode("utf-8"))
                pieces.append({"key": key, "rows": len(lines)})
                lines.clear()

        for doc_id, receipt_key, load in units:
            counts["documents"] += 1
            packet = load()
            if packet is None:
                continue
            made = TaskMaker(packet).slot_tasks(policy)
            counts["packets"] += bool(made)
            for slot, task in made:
                tk = task_key(task)
                origin = {"run": run_id, "doc_id": doc_id, "receipt": receipt_key}
                body = {"key": tk, "task": task, "origin": origin}
                self.store.put(task_object(tk), canonical_text(body).encode(), create_only=True)
                row = {
                    "task": tk,
                    "doc_id": doc_id,
                    "field": slot.field,
                    "key": slot.key,
                    "codes": task["codes"],
                    "mode": task["mode"],
                    "item": task["item"],
                    "values": row_values(task),
                    "packet": packet.key,
                    "receipt": receipt_key,
                }
                lines.append(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
                counts["tasks"] += 1
                if len(lines) >= PIECE_ROWS:
                    flush()
        flush()
        manifest = {
            "format": 1,
            "run": run_id,
            "policy": dict(policy),
            "built_at": time.time(),
            **dict(meta),
            **counts,
            "pieces": pieces,
        }
        key = prefix + "manifest.json"
        self.store.put(key, canonical_text(manifest).encode(), create_only=True)
        return json.loads(self.store.get(key))  # a concurrent build's equal manifest wins

    def row_of(self, manifest: Mapping[str, Any], doc_id: str, task: str) -> int | None:
        """The row number of the task ``task`` of document ``doc_id`` (None when the run has
        no such row): the pieces are bisected by document, so a few pieces are read, not the
        run's task list."""
        pieces = manifest["pieces"]
        firsts = [0]
        for piece in pieces:
            firsts.append(firsts[-1] + piece["rows"])
        cache: dict[int, list[dict[str, Any]]] = {}

        def piece_rows(n: int) -> list[dict[str, Any]]:
            if n not in cache:
                cache[n] = [
                    json.loads(line) for line in self._piece_lines(pieces[n]["key"]) if line
                ]
            return cache[n]

        for n in range(first_piece(len(pieces), piece_rows, doc_id), len(pieces)):
            for i, row in enumerate(piece_rows(n)):
                if row["task"] == task:
                    return firsts[n] + i
                if row["doc_id"] > doc_id:
                    return None
        return None

    def _piece_lines(self, key: str) -> list[str]:
        """The lines of a task-list piece; the last one read is not read again."""
        if self._piece[0] != key:
            self._piece = (key, self.store.get(key).decode("utf-8").splitlines())
        return self._piece[1]

    def rows(self, manifest: Mapping[str, Any], start: int = 0) -> Iterator[tuple[int, dict]]:
        """(row number, row) from row ``start``; one piece read at a time."""
        first = 0
        for piece in manifest["pieces"]:
            if start < first + piece["rows"]:
                data = self._piece_lines(piece["key"])
                for n in range(max(start, first), first + piece["rows"]):
                    yield n, json.loads(data[n - first])
            first += piece["rows"]

    def page(
        self,
        manifest: Mapping[str, Any],
        cursor: int,
        limit: int,
        filters: Mapping[str, str | None],
        state: str | None = None,
        scan: int = 5000,
    ) -> Page:
        """Up to ``limit`` rows from row ``cursor`` that pass the filters (document, field,
        code, answer state), each with its ``state``; at most ``scan`` rows are read, so a
        rare filter returns a short page with a cursor rather than reading the whole run.

        Without a state filter, the answers of the rows shown are listed (one listing a
        row); with one, the answered tasks are found in one listing of every answer, and
        only their answers are read."""
        out: list[dict[str, Any]] = []
        scanned = 0
        answered = None if state is None else self.answered()
        for n, row in self.rows(manifest, cursor):
            if len(out) == limit or scanned == scan:
                return Page(out, str(n), scanned)
            scanned += 1
            if not row_passes(row, filters):
                continue
            if answered is not None and row["task"] not in answered:
                found = "unanswered"
            else:
                found = task_state(self.answers(row["task"]))
            if state is None or found == state:
                out.append({**row, "state": found})
        return Page(out, None, scanned)

    def task(self, key: str) -> dict[str, Any]:
        try:
            return json.loads(self.store.get(task_object(key)))
        except KeyError:
            raise UnknownTask(key) from None

    # -- answers --------------------------------------------------------------------------

    def add_answer(self, record: Mapping[str, Any], now: datetime | None = None) -> str:
        """Store one answer@1 record (without its log's chain members): the next entry of
        its reviewer's history of the task, and their current answer. TooManyAnswers past
        ``max_answers``. Returns the history object's key."""
        now = now or datetime.now(UTC)
        return self._append(record, now.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ"))

    def import_answer(self, record: Mapping[str, Any]) -> bool:
        """Store an answer given elsewhere (a file, groundgate's answer log), known by its
        own content, so importing it again adds nothing; False when it was there.
        ``record`` is an answer@1 without its log's chain members."""
        marker = imported_object(record["task"], record["reviewer"], _content_name(record))
        if self.store.exists(marker):
            return False
        self._migrate(record["task"])
        if self.store.exists(marker):  # an answer of the layout before, just moved
            return False
        stored_as = self._append(record, _stamp_of(record["time"]))
        self.store.put(marker, stored_as.encode())
        return True

    def _append(self, record: Mapping[str, Any], stamp: str) -> str:
        task, reviewer = record["task"], record["reviewer"]
        self._migrate(task)
        current = self._current(task, reviewer)
        n = current["count"] if current else 0
        entry = {"stamp": stamp, "answer": dict(record)}
        data = canonical_text(entry).encode()
        while True:  # a concurrent answer took number n: the next one is free
            n += 1
            if n > self.max_answers:
                raise TooManyAnswers(task, reviewer, n - 1)
            key = history_object(task, reviewer, n)
            if self.store.put(key, data, create_only=True):
                break
        self._settle(task, reviewer, _newer(current, entry, n))
        return key

    def _settle(self, task: str, reviewer: str, current: dict[str, Any]) -> None:
        """Write a reviewer's current answer, then take in any history entry a concurrent
        writer stored after it (whose own write may have landed first)."""
        while True:
            self.store.put(current_object(task, reviewer), canonical_text(current).encode())
            following = history_object(task, reviewer, current["count"] + 1)
            if not self.store.exists(following):
                return
            entry = json.loads(self.store.get(following))
            current = _newer(current, entry, current["count"] + 1)

    def _current(self, task: str, reviewer: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.store.get(current_object(task, reviewer)))
        except KeyError:
            return None

    def _migrate(self, task: str) -> None:
        """Move a task's answers of the layout before (one object per answer, each read on
        every request) into histories and current answers, once; an empty listing after."""
        old = self._legacy(task)
        if not old:
            return
        by_reviewer: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for key, record in old:  # named <stamp>-<id>.json, listed in name order
            stamp = key.rsplit("/", 1)[-1].partition("-")[0]
            by_reviewer.setdefault(record["reviewer"], []).append((stamp, record))
        for reviewer, entries in by_reviewer.items():
            current = self._current(task, reviewer)
            for n, (stamp, record) in enumerate(entries, 1):
                # The same numbers and bytes whoever moves them: moving twice is harmless.
                entry = {"stamp": stamp, "answer": record}
                self.store.put(
                    history_object(task, reviewer, n),
                    canonical_text(entry).encode(),
                    create_only=True,
                )
                name = _content_name(record)
                self.store.put(imported_object(task, reviewer, name), b"", create_only=True)
                if current is None or current["count"] < n:
                    current = _newer(current, entry, n)
            assert current is not None
            self._settle(task, reviewer, current)
        self.store.delete_many(key for key, _ in old)

    def _legacy(self, task: str) -> list[tuple[str, dict[str, Any]]]:
        """(object key, answer) of a task's answers in the layout before, in time order."""
        out = []
        for page in self.store.list_pages(answers_prefix(task), page_size=self.page_size):
            out += [(info.key, json.loads(self.store.get(info.key))) for info in page]
        return out

    def current(self, key: str) -> list[dict[str, Any]]:
        """Each reviewer's current answer to a task (``reviewer``, ``count``: answers given,
        ``stamp``, ``answer``), oldest answer first: one object read per reviewer."""
        self._migrate(key)
        out = []
        for page in self.store.list_pages(current_prefix(key), page_size=self.page_size):
            out += [json.loads(self.store.get(info.key)) for info in page]
        return sorted(out, key=lambda c: (c["stamp"], c["reviewer"]))

    def add_note(self, key: str, reviewer: str, stored_as: str, note: str, time_: str) -> None:
        """Keep a reviewer's note on their answer stored as ``stored_as`` (create-once)."""
        name = stored_as.rpartition("/")[2]
        body = {"task": key, "reviewer": reviewer, "answer": stored_as, "note": note}
        data = canonical_text({**body, "time": time_}).encode()
        self.store.put(
            f"{NOTES}{key_hex(key)}/{reviewer_hex(reviewer)}/{name}", data, create_only=True
        )

    def notes(self, key: str) -> list[dict[str, Any]]:
        """Every note on the task's answers, oldest first (one listing)."""
        out = []
        for page in self.store.list_pages(f"{NOTES}{key_hex(key)}/", page_size=self.page_size):
            out += [json.loads(self.store.get(info.key)) for info in page]
        return sorted(out, key=lambda n: (n["time"], n["reviewer"]))

    def answers(self, key: str) -> list[dict[str, Any]]:
        """Each reviewer's latest answer to a task (the ones that count), oldest first."""
        return [c["answer"] for c in self.current(key)]

    def answer_count(self, key: str, reviewer: str) -> int:
        """How many answers ``reviewer`` has given the task."""
        self._migrate(key)
        found = self._current(key, reviewer)
        return found["count"] if found else 0

    def history(self, key: str, reviewer: str | None, cursor: str | None, limit: int) -> Page:
        """A page of the answers given to a task, each reviewer's in the order they were
        given (``reviewer``: only theirs); ``cursor`` continues from the last page."""
        self._migrate(key)
        prefix = history_prefix(key) + ("" if reviewer is None else reviewer_hex(reviewer) + "/")
        after = None if cursor is None else f"{history_prefix(key)}{cursor}.json"
        rows: list[dict[str, Any]] = []
        last = None
        for page in self.store.list_pages(prefix, start_after=after, page_size=limit + 1):
            for info in page:
                if len(rows) == limit:
                    return Page(rows, last, len(rows))
                rows.append(json.loads(self.store.get(info.key))["answer"])
                last = info.key[len(history_prefix(key)) :].removesuffix(".json")
        return Page(rows, None, len(rows))

    def answered(self) -> set[str]:
        """The key of every task that has an answer, from one listing of the current answers
        (a page per thousand reviewer-and-task pairs) and of any not yet moved."""
        out: set[str] = set()
        for prefix in (CURRENT, ANSWERS):
            for page in self.store.list_pages(prefix, page_size=self.page_size):
                out.update("sha256:" + info.key[len(prefix) :].partition("/")[0] for info in page)
        return out

    def logs(self, task_keys: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The answer logs of one packet's tasks: each reviewer's latest answer to each task
        (the ones that count) in time order, chained as groundgate's answer logs are."""
        current = [c for tk in dict.fromkeys(task_keys) for c in self.current(tk)]
        by_reviewer: dict[str, list[dict[str, Any]]] = {}
        for c in sorted(current, key=lambda c: c["stamp"]):
            by_reviewer.setdefault(c["reviewer"], []).append(c["answer"])
        return {name: chain(records) for name, records in by_reviewer.items()}

    # -- resolutions ----------------------------------------------------------------------

    def put_resolution(self, resolution: Mapping[str, Any]) -> str:
        """Store a resolution@1 under its key (create-once); return the key."""
        key = json_key("resolution@1", resolution)
        data = canonical_text(dict(resolution)).encode()
        self.store.put(resolution_object(key), data, create_only=True)
        return key

    def put_run_resolution(self, run_id: str, body: Mapping[str, Any]) -> None:
        self.store.put(run_review_prefix(run_id) + "resolution.json", canonical_text(body).encode())

    def run_resolution(self, run_id: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.store.get(run_review_prefix(run_id) + "resolution.json"))
        except KeyError:
            return None


def row_values(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The candidate values of a task as its row in the queue shows them: each choice's
    number (the key that chooses it), value and unit."""
    return [
        {"n": n, "value": c["value"], "unit": c.get("unit")}
        for n, c in enumerate(task["choices"], 1)
    ]


def first_piece(count: int, piece_rows: Callable[[int], list[dict[str, Any]]], doc_id: str) -> int:
    """The first of a run's ``count`` task-list pieces whose last row is of a document at or
    after ``doc_id`` (rows are in document order): a bisection, log2(count) pieces read."""
    lo, hi = 0, max(count - 1, 0)
    while lo < hi:
        mid = (lo + hi) // 2
        rows = piece_rows(mid)
        if rows and rows[-1]["doc_id"] < doc_id:
            lo = mid + 1
        else:
            hi = mid
    return lo


def row_passes(row: Mapping[str, Any], filters: Mapping[str, str | None]) -> bool:
    for name in ROW_FILTERS:
        wanted = filters.get(name)
        if wanted is None:
            continue
        if name == "code":
            if wanted not in row["codes"]:
                return False
        elif row[name] != wanted:
            return False
    return True


def packets_of(
    store: ReviewStore, manifest: Mapping[str, Any]
) -> Iterator[tuple[str, str, str, list[str]]]:
    """(doc_id, packet key, unit receipt key, task keys) of each packet with tasks, in row
    order (a packet's rows are together)."""
    current: tuple[str, str, str] | None = None
    keys: list[str] = []
    for _, row in store.rows(manifest):
        here = (row["doc_id"], row["packet"], row["receipt"])
        if here != current:
            if current is not None:
                yield (*current, keys)
            current, keys = here, []
        keys.append(row["task"])
    if current is not None:
        yield (*current, keys)


def row_states(
    store: ReviewStore, manifest: Mapping[str, Any], start: int = 0
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]], str]]:
    """(row, its reviewers' latest answers, its state) of each row from row ``start``: one
    listing of every answer finds the answered tasks, and only their answers are read."""
    answered = store.answered()
    for _, row in store.rows(manifest, start):
        answers = store.answers(row["task"]) if row["task"] in answered else []
        yield row, answers, task_state(answers)


# Rows a progress line counts: past this many, it says it counted only the first ones.
PROGRESS_SCAN = 20_000


def progress(
    store: ReviewStore,
    manifest: Mapping[str, Any],
    filters: Mapping[str, str | None],
    scan: int = PROGRESS_SCAN,
) -> dict[str, Any]:
    """How far the review of a run has come, for the run and for the rows that pass the
    filters (document, field, code): tasks, answered, unanswered, disputed of each; the
    filter's counts are None without a filter. ``partial`` when only the first ``scan``
    rows were counted."""
    run = {"tasks": 0, **dict.fromkeys(STATES, 0)}
    chosen = {"tasks": 0, **dict.fromkeys(STATES, 0)}
    filtered = any(filters.get(name) for name in ROW_FILTERS)
    partial = False
    for n, (row, _, state) in enumerate(row_states(store, manifest)):
        if n == scan:
            partial = True
            break
        run["tasks"] += 1
        run[state] += 1
        if filtered and row_passes(row, filters):
            chosen["tasks"] += 1
            chosen[state] += 1
    return {"run": run, "filter": chosen if filtered else None, "partial": partial}


def load_counts(store: ReviewStore, manifest: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The review load of a run: tasks, answered, unanswered (open), disputed, reviewers,
    and how long open tasks have waited (median, seconds, since the tasks were made)."""
    counts = dict.fromkeys(STATES, 0)
    reviewers: set[str] = set()
    ages: list[float] = []
    for _, answers, state in row_states(store, manifest):
        counts[state] += 1
        reviewers.update(a["reviewer"] for a in answers)
        if not answers:
            ages.append(now - manifest["built_at"])
    return {
        "tasks": manifest["tasks"],
        **counts,
        "open": counts["unanswered"],
        "reviewers": len(reviewers),
        "open_median_age_seconds": statistics.median(ages) if ages else None,
    }


class InputsChanged(ValueError):
    """A run's input changed in the corpus since the run: its tasks cannot be made from it."""


class RunReview:
    """The review step of one stored run: its tasks (made once, from its admission
    receipts and the corpus's inputs), answers, measures and resolutions."""

    def __init__(self, service: Any, record: Any) -> None:
        self.service, self.record = service, record
        self.output = service.store(record.output)
        settings = service.settings
        self.store = ReviewStore(self.output, settings.list_page_size, settings.review_max_answers)

    @property
    def policy(self) -> dict[str, Any]:
        from groundswell.shared.review.formats import DEFAULT_REVIEW_POLICY

        return self.service.settings.review_policy or DEFAULT_REVIEW_POLICY

    def manifest(self) -> dict[str, Any]:
        """The run's task list; made on first use once the run has finished."""
        found = self.store.manifest(self.record.id)
        if found is not None:
            return found
        if not self.record.terminal:
            raise ReviewUnavailable(
                f"run {self.record.id} is {self.record.state}: its review tasks are made "
                "from its receipts once it has finished"
            )
        meta = {"policy_ref": self.record.policy.get("ref"), "corpus": self.record.corpus}
        return self.store.build(self.record.id, self.units(), self.policy, meta)

    def _listing(self, doc_id: str) -> dict[str, Any] | None:
        """The document's listing entries, from the run's index rows of it."""
        from groundswell.shared.runs.index import IndexMissing, RunIndex

        try:
            rows = RunIndex(self.output, self.record.id).document(doc_id)
        except IndexMissing:
            return None
        out: dict[str, Any] = {}
        for row in rows:
            out.update(row.get("listing") or {})
        return out or None

    def units(self) -> Iterator[tuple[str, str, Callable[[], ReviewPacket | None]]]:
        from groundswell.shared.runs.index import IndexMissing, RunIndex

        try:
            index = RunIndex(self.output, self.record.id)
        except IndexMissing:
            raise ReviewUnavailable(f"run {self.record.id} has no index") from None
        for row in index.rows():
            if row["kind"] == "admit" and row.get("receipt"):
                doc_id, key, listing = row["doc_id"], row["receipt"], row.get("listing")
                yield doc_id, key, lambda d=doc_id, k=key, li=listing: self.packet(d, k, None, li)

    def packet(
        self,
        doc_id: str,
        receipt_key: str,
        unit: Mapping[str, Any] | None = None,
        listing: dict[str, Any] | None = None,
    ) -> ReviewPacket | None:
        """The packet of one admission unit: its stored receipt, and the document, schema
        and candidates it was made from (the NFC form when the run normalized them). None
        for a unit that recorded a failure. ``unit``: the receipt's unit when the caller has
        opened it already (it is read otherwise); ``listing``: the unit's index row's
        listing entries (looked up in the index otherwise, for a corpus read in place)."""
        from groundswell.shared.admit.normalize import nfc_packet
        from groundswell.shared.corpus import SCHEMA_KEY, parse_schema
        from groundswell.shared.receipts import content_sha256, open_receipt

        if unit is None:
            unit = open_receipt(self.output.get(receipt_key), receipt_key)
        if not isinstance(unit.get("receipt"), dict):
            return None
        ctx = self.service.inputs(self.record)
        if listing is None and isinstance(ctx.corpus, RecordSource):
            listing = self._listing(doc_id)
        doc = ctx.runner.indexed_document(doc_id, listing)
        schema_data = ctx.corpus.get(SCHEMA_KEY)
        if doc.sha256 != unit["document_sha256"]:
            raise InputsChanged(f"{doc.file}: the document changed since run {self.record.id}")
        if content_sha256(schema_data) != unit["schema_sha256"]:
            raise InputsChanged(f"{SCHEMA_KEY}: the schema changed since run {self.record.id}")
        moved = nfc_packet(doc.text(), unit["records"])
        return ReviewPacket(
            text=moved.text,
            schema=parse_schema(schema_data),
            candidates=moved.candidates,
            receipt=unit["receipt"],
            policy=ctx.policy.admit,
            version=ctx.policy,
            layout=doc.layout,
        )

    def tasks(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(row, task@1) of each task of the run, in document then slot order: what
        ``groundswell review tasks RUN`` writes, one task a line in canonical JSON."""
        for _, row in self.store.rows(self.manifest()):
            yield row, self.store.task(row["task"])["task"]

    def task(self, key: str) -> dict[str, Any]:
        """The stored task with its answers, its state and each reviewer's latest answer."""
        found = self.store.task(key)
        answers = self.store.answers(key)
        return {
            **found,
            "answers": answers,
            "latest": latest_by_reviewer(answers),
            "state": task_state(answers),
        }

    def resolve(self, now: datetime | None = None) -> dict[str, Any]:
        """Resolve every packet of the run that has tasks under the run's review policy;
        store each resolution@1 (content-addressed) and the run's list of them."""
        from groundswell.shared.review.resolve import AnswerError, Resolver

        manifest = self.manifest()
        entries, skipped = [], []
        statuses: dict[str, int] = {}
        for doc_id, packet_key, receipt_key, keys in packets_of(self.store, manifest):
            packet = self.packet(doc_id, receipt_key)
            if packet is None:
                continue
            try:
                resolved = Resolver(packet).resolve(manifest["policy"], self.store.logs(keys))
            except AnswerError as exc:
                skipped.append(f"{doc_id}: {exc}")
                continue
            key = self.store.put_resolution(resolved.resolution)
            counts: dict[str, int] = {}
            for slot in resolved.resolution["slots"]:
                counts[slot["status"]] = counts.get(slot["status"], 0) + 1
                statuses[slot["status"]] = statuses.get(slot["status"], 0) + 1
            entries.append(
                {"doc_id": doc_id, "packet": packet_key, "resolution": key, "statuses": counts}
            )
        body = {
            "run": self.record.id,
            "resolved_at": utc_time(now or datetime.now(UTC)),
            "policy": json_key("review-policy@1", manifest["policy"]),
            "statuses": dict(sorted(statuses.items())),
            "packets": entries,
            "skipped": skipped,
        }
        self.store.put_run_resolution(self.record.id, body)
        return body

    def measures(self, now: float | None = None) -> dict[str, Any]:
        """The run's review load, and groundgate's measures over its answered packets."""
        from groundswell.shared.review.measures import Measures

        manifest = self.manifest()
        tallies = Measures()
        answered = self.store.answered()
        for doc_id, _, receipt_key, keys in packets_of(self.store, manifest):
            if answered.isdisjoint(keys):
                continue
            logs = self.store.logs(keys)
            packet = self.packet(doc_id, receipt_key)
            if packet is not None:
                tallies.add(packet, manifest["policy"], logs)
        return {
            "run": self.record.id,
            "policy_ref": manifest.get("policy_ref"),
            "load": load_counts(self.store, manifest, time.time() if now is None else now),
            "measures": tallies.as_dict(),
        }
