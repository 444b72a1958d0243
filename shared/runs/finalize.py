"""Finalize: from a run's segments to its sorted index and summary, in resumable steps.

Segments arrive in batch order, which is roughly but not exactly document order, and a
run may hold millions of rows, so the index is built by an external merge sort whose
memory does not depend on the run:

1. **sort**: read the covering segments in listing order, :data:`SORT_ROWS` rows at a
   time; sort each lot and write it as a sorted run of :data:`CHUNK_ROWS`-row objects.
   Each kind is kept apart, and a lot that starts after its kind's run ends extends that
   run (batches of a kind are planned in document order, so each kind usually stays one
   sorted run and the final merge has two inputs).
2. **merge**: while there are more than :data:`FAN_IN` runs, merge them :data:`FAN_IN`
   at a time, holding one chunk per input.
3. **final**: merge what is left into index pieces (:class:`IndexWriter`), computing the
   Merkle root, documents, bytes, errors and highlights as the rows pass.

Each step stops at its deadline and saves a checkpoint (``finalize/state.json``) at a
boundary where nothing is half-written; the next step resumes from it in any process.
Everything written is a function of the segments, so a step redone after a crash
writes the same bytes.
"""

from __future__ import annotations

import heapq
import json
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from groundswell.shared.producers import MAX_TRACKED, bounded, summary_section
from groundswell.shared.producers import PREFIX as PRODUCER_PREFIX
from groundswell.shared.runs import kinds
from groundswell.shared.runs.index import MAX_SUMMARY_ERRORS, IndexWriter, Key, row_key, row_line
from groundswell.shared.runs.layout import (
    finalize_prefix,
    finalize_state_key,
    segment_key,
    segment_prefix,
    sorted_run_key,
)
from groundswell.shared.runs.segments import Segment, covering_segments, sum_counters
from groundswell.shared.storage import ObjectStore, drop_snapshot
from groundswell.shared.summary import rates

SORT_ROWS = 32_768
CHUNK_ROWS = 2048
FAN_IN = 16
FETCH_THREADS = 16


def unit_counts(counters: dict[str, int]) -> dict[str, dict[str, int]]:
    """``units.<kind>.<status>`` counters as ``{kind: {planned, computed, cached, failed, done}}``."""
    out: dict[str, dict[str, int]] = {}
    # Every kind the run counted, and those always listed, in the registry's order.
    listed = [
        kind.name
        for kind in kinds.all_kinds()
        if kind.always_summarized or any(k.startswith(f"units.{kind.name}.") for k in counters)
    ]
    for kind in listed:
        row = {s: counters.get(f"units.{kind}.{s}", 0) for s in ("computed", "cached", "failed")}
        would = {s: counters.get(f"units.{kind}.{s}", 0) for s in ("would_compute", "would_reuse")}
        row["done"] = sum(row.values()) + sum(would.values())
        if any(would.values()):
            row.update(would)
        row["planned"] = counters.get(f"units.{kind}.planned", row["done"])
        out[kind] = row
    return out


def build_summary(
    run: dict[str, Any], counters: dict[str, int], manifest: dict[str, Any]
) -> dict[str, Any]:
    """The summary of a run from its counters and its index manifest (and the lines of a
    --changed run's list that named no corpus file, first among its errors)."""
    listed = run.get("changed_errors") or []
    if listed:
        more = run.get("changed_errors_total") or len(listed)
        counters = {**counters, "errors": counters.get("errors", 0) + more}
    # Per-producer counters are the summary's ``producers`` (bounded), not its ``counts``.
    counts = {
        k: v
        for k, v in sorted(counters.items())
        if v and not k.startswith(("units.", "reasons.", PRODUCER_PREFIX))
    }
    reasons: dict[str, dict[str, int]] = {}
    for key, value in counters.items():
        if key.startswith("reasons.") and value:
            kind, _, reason = key[len("reasons.") :].partition(".")
            reasons.setdefault(kind, {})[reason] = value
    run_id = run.get("id")
    by_producer = summary_section(counters)
    return {
        "run_id": run_id,
        "corpus": run.get("corpus"),
        "output": run.get("output"),
        "policy": run.get("policy"),
        "engines": run.get("engines"),
        "documents": manifest["documents"],
        "bytes": manifest["bytes"],
        "units": unit_counts(counters),
        "reasons": reasons,
        "failed_units": manifest["failed_units"],
        "counts": counts,
        "rates": rates(counts),
        # By producer (largest first, at most MAX_PRODUCERS and ``other``); only when declared.
        **({"producers": by_producer} if by_producer else {}),
        "errors_total": counts.get("errors", 0),
        "errors": [*listed, *manifest["errors"]][:MAX_SUMMARY_ERRORS],
        "index": {
            "format": manifest["format"],
            "manifest": f"runs/{run_id}/index/manifest.json" if run_id else None,
            "order": manifest["order"],
            "units": manifest["units"],
            "pieces": len(manifest["pieces"]),
            "merkle_root": manifest["merkle_root"],
        },
    }


def final_state(summary: dict[str, Any]) -> str:
    units = summary["index"]["units"]
    if units and summary["failed_units"] == units:
        return "failed"
    if summary["failed_units"] or summary["errors_total"]:
        return "partially_failed"
    return "succeeded"


def dumps(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# -- the external sort ----------------------------------------------------------------------


def _sorted_line(row: dict[str, Any]) -> bytes:
    """A line of a sorted run: the key as JSON, a tab, the index line (no JSON string
    holds a raw tab, so the first tab ends the key)."""
    return json.dumps([row["doc_id"], row["kind"]]).encode() + b"\t" + row_line(row)


def _split(line: bytes) -> tuple[Key, bytes]:
    head, _, rest = line.partition(b"\t")
    doc_id, kind = json.loads(head)
    return (doc_id, kind), rest


class _RunCursor:
    """Reads one sorted run (a list of chunk objects) from a (chunk, row) position."""

    def __init__(self, store: ObjectStore, chunks: list[str], position: list[int]) -> None:
        self.store, self.chunks = store, chunks
        self.chunk, self.row = position
        self.lines: list[bytes] | None = None

    def next(self) -> tuple[list[int], bytes] | None:
        while self.chunk < len(self.chunks):
            if self.lines is None:
                self.lines = self.store.get(self.chunks[self.chunk]).splitlines(keepends=True)
            if self.row < len(self.lines):
                position = [self.chunk, self.row]
                self.row += 1
                return position, self.lines[self.row - 1]
            self.chunk, self.row, self.lines = self.chunk + 1, 0, None
        return None


class _Merge:
    """A k-way merge of sorted runs whose position can be saved between any two rows."""

    def __init__(
        self, store: ObjectStore, runs: list[list[str]], positions: list[list[int]] | None
    ) -> None:
        self.cursors = [
            _RunCursor(store, chunks, list(positions[i]) if positions else [0, 0])
            for i, chunks in enumerate(runs)
        ]
        self.heads: list[list[int]] = [[len(c.chunks), 0] for c in self.cursors]
        self.heap: list[tuple[Key, int, bytes, bytes]] = []
        for i in range(len(self.cursors)):
            self._advance(i)

    def _advance(self, i: int) -> None:
        item = self.cursors[i].next()
        if item is None:
            self.heads[i] = [len(self.cursors[i].chunks), 0]
            return
        position, line = item
        self.heads[i] = position
        key, row = _split(line)
        heapq.heappush(self.heap, (key, i, line, row))

    def pop(self) -> tuple[bytes, bytes] | None:
        """The next line of a sorted run, and the index line it carries."""
        if not self.heap:
            return None
        _, i, line, row = heapq.heappop(self.heap)
        self._advance(i)
        return line, row

    def positions(self) -> list[list[int]]:
        """Where each input resumes: at the row now waiting in the heap."""
        return [list(p) for p in self.heads]


class IndexBuild:
    """The finalize state machine of one run; ``step()`` returns the manifest when done."""

    def __init__(
        self,
        store: ObjectStore,
        run_id: str,
        *,
        snapshot: str | None = None,
        fetch: Callable[[list[str]], list[Segment]] | None = None,
    ) -> None:
        self.store, self.run_id = store, run_id
        self.snapshot = snapshot or f"{run_id}:finalize"
        try:
            self.state: dict[str, Any] = json.loads(store.get(finalize_state_key(run_id)))
        except KeyError:
            self.state = {
                "phase": "sort",
                "after": None,
                "rows": 0,
                "counters": {},
                "runs": [],
                "level": 0,
            }
        self._fetch = fetch

    def save(self) -> None:
        self.store.put(finalize_state_key(self.run_id), json.dumps(self.state).encode())

    @property
    def counters(self) -> dict[str, int]:
        return self.state["counters"]

    def step(self, deadline: float) -> dict[str, Any] | None:
        """Work until ``deadline`` (time.monotonic()); the manifest once the index is done."""
        while True:
            phase = self.state["phase"]
            if phase == "sort":
                if not self._sort(deadline):
                    break
            elif phase == "merge":
                if not self._merge(deadline):
                    break
            elif phase == "final":
                manifest = self._final(deadline)
                if manifest is None:
                    break
                return manifest
            else:  # "done": the manifest was written by an earlier step
                return json.loads(self.store.get(f"runs/{self.run_id}/index/manifest.json"))
            if time.monotonic() >= deadline:
                break
        self.save()
        return None

    # 1. sort ------------------------------------------------------------------------

    def _segments(self) -> Iterator[tuple[str, list[Segment]]]:
        """Covering segments in listing order, fetched a window ahead on threads."""
        groups = covering_segments(
            self.store, self.run_id, start_after=self.state["after"], snapshot=self.snapshot
        )
        fetch = self._fetch or self._read_segments
        with ThreadPoolExecutor(FETCH_THREADS) as pool:
            window: list[tuple[str, Any]] = []
            for group in groups:
                window.append((group.last_key, pool.submit(fetch, group.batches)))
                if len(window) >= 2 * FETCH_THREADS:
                    last_key, future = window.pop(0)
                    yield last_key, future.result()
            for last_key, future in window:
                yield last_key, future.result()

    def _read_segments(self, batches: list[str]) -> list[Segment]:
        out = []
        for batch in batches:
            key = segment_key(self.run_id, batch)
            out.append(Segment.loads(self.store.get(key), key))
        return out

    def _sort(self, deadline: float) -> bool:
        # One buffer per kind: batches of one kind are planned in document order, so each
        # kind's lots usually chain into a single sorted run.
        buffers: dict[str, list[tuple[Key, bytes]]] = {}
        held = 0
        pending: list[dict[str, int]] = []
        st = self.state
        for last_key, segments in self._segments():
            for segment in segments:
                buffer = buffers.setdefault(segment.kind, [])
                for row in segment.rows:
                    buffer.append((row_key(row), _sorted_line(row)))
                held += len(segment.rows)
                pending.append(segment.counters)
            if held >= SORT_ROWS:
                for kind, buffer in buffers.items():
                    self._spill(buffer, kind)
                st["counters"] = bounded(sum_counters([st["counters"], *pending]), MAX_TRACKED)
                st["after"] = last_key
                buffers, held, pending = {}, 0, []
                if time.monotonic() >= deadline:
                    return False
        for kind, buffer in buffers.items():
            self._spill(buffer, kind)
        st["counters"] = bounded(sum_counters([st["counters"], *pending]), MAX_TRACKED)
        drop_snapshot(self.store, segment_prefix(self.run_id), self.snapshot)
        st["phase"] = "merge"
        return True

    def _spill(self, buffer: list[tuple[Key, bytes]], kind: str) -> None:
        if not buffer:
            return
        buffer.sort(key=lambda item: item[0])
        runs = self.state["runs"]
        tails = self.state.setdefault("tails", {})
        first = list(buffer[0][0])
        tail = tails.get(kind)
        if tail is not None and runs[tail]["last"] < first:
            run = runs[tail]  # it continues this kind's sorted run
        else:
            run = {"chunks": [], "first": first, "last": first, "number": len(runs)}
            runs.append(run)
            tails[kind] = len(runs) - 1
        for start in range(0, len(buffer), CHUNK_ROWS):
            key = sorted_run_key(self.run_id, 0, run["number"], len(run["chunks"]))
            self.store.put(key, b"".join(line for _, line in buffer[start : start + CHUNK_ROWS]))
            run["chunks"].append(key)
        run["last"] = list(buffer[-1][0])
        self.state["rows"] += len(buffer)

    # 2. merge -----------------------------------------------------------------------

    def _merge(self, deadline: float) -> bool:
        st = self.state
        while len(st["runs"]) > FAN_IN:
            job = st.get("job")
            if job is None:
                job = st["job"] = {"group": 0, "out": [], "positions": None, "written": []}
            runs = st["runs"]
            level = st["level"] + 1
            while job["group"] * FAN_IN < len(runs):
                group = runs[job["group"] * FAN_IN : (job["group"] + 1) * FAN_IN]
                number = job["group"]
                merge = _Merge(self.store, [r["chunks"] for r in group], job["positions"])
                chunk: list[bytes] = []
                written: list[str] = job["written"]
                while True:
                    item = merge.pop()
                    if item is not None:
                        chunk.append(item[0])
                    if len(chunk) >= CHUNK_ROWS or (item is None and chunk):
                        key = sorted_run_key(self.run_id, level, number, len(written))
                        self.store.put(key, b"".join(chunk))
                        written.append(key)
                        chunk = []
                        if item is not None and time.monotonic() >= deadline:
                            job["positions"] = merge.positions()
                            return False
                    if item is None:
                        break
                job["out"].append(
                    {
                        "chunks": written,
                        "first": min(r["first"] for r in group),
                        "last": max(r["last"] for r in group),
                        "number": number,
                    }
                )
                job["group"] += 1
                job["positions"], job["written"] = None, []
            st["runs"], st["level"], st["job"] = job["out"], level, None
            self._drop_level(level - 1)
        st["phase"] = "final"
        return True

    def _drop_level(self, level: int) -> None:
        delete_prefixes(self.store, [f"{finalize_prefix(self.run_id)}L{level}/"])

    # 3. final -----------------------------------------------------------------------

    def _final(self, deadline: float) -> dict[str, Any] | None:
        st = self.state
        job = st.get("final") or {"positions": None, "writer": None}
        merge = _Merge(self.store, [r["chunks"] for r in st["runs"]], job["positions"])
        writer = IndexWriter(self.store, self.run_id, job["writer"])
        while True:
            item = merge.pop()
            if item is None:
                break
            writer.add(item[1])
            if writer.at_boundary and time.monotonic() >= deadline:
                st["final"] = {"positions": merge.positions(), "writer": writer.state()}
                return None
        manifest = writer.finish()
        if manifest["units"] != st["rows"]:
            raise RuntimeError(
                f"run {self.run_id}: the index has {manifest['units']} rows, the segments "
                f"{st['rows']}"
            )
        st["phase"], st["final"] = "done", None
        self.save()
        return manifest


def delete_prefixes(store: ObjectStore, prefixes: Iterable[str]) -> None:
    """Delete every object under the given prefixes (a page of keys at a time)."""
    for prefix in prefixes:
        for page in store.list_pages(prefix):
            store.delete_many(info.key for info in page)
