"""The run index: one row per unit, sorted by (doc_id, kind), in pieces with a manifest.

The index of a run is a list of pieces (``runs/<id>/index/<n>.jsonl``, at most
:data:`PIECE_ROWS` rows each, a few MB) and a manifest naming each piece with its first
and last key, its row count and its sha256, plus the run's Merkle root. Readers bisect
the manifest, then read one piece: a page of receipts, one document's units or one
unit of a previous run cost a piece read, however large the run.

The Merkle root is :func:`shared.summary.merkle_root` over the leaves
``canonical_json({"unit", "receipt_sha256", "failed"})`` of every row in index order,
computed as the rows stream by (:class:`shared.summary.MerkleStream`). It depends only on
what the run produced, never on how units were batched, redelivered or computed versus
reused. A reader verifies it by streaming the pieces in manifest order, checking each
piece's sha256, and recomputing the root from the rows (:func:`verify_index`).
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import json
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from groundswell.shared.canonical import canonical_json
from groundswell.shared.runs import kinds
from groundswell.shared.runs.layout import highlights_key, manifest_key, piece_key
from groundswell.shared.storage import ObjectStore
from groundswell.shared.summary import MerkleStream

INDEX_FORMAT = 2
PIECE_ROWS = 4096
HIGHLIGHTS = 1000
MAX_SUMMARY_ERRORS = 100
# The counters an index row carries (its "tally"): claims by verdict, candidates by outcome
# and by code; a report filters on them without reading receipts.
TALLIED = ("claims.verdict.", "candidates.outcome.", "candidates.code.")

Key = tuple[str, str]


def row_key(row: dict[str, Any]) -> Key:
    return (row["doc_id"], row["kind"])


def row_line(row: dict[str, Any]) -> bytes:
    """One index line: sorted keys, no spaces (deterministic, readable, fast to write)."""
    try:
        text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate from an undecodable file name
        return json.dumps(row, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def leaf(row: dict[str, Any]) -> bytes:
    """What the Merkle root covers of a unit: its receipt, or that it failed.

    ``canonical_json({"unit", "receipt_sha256", "failed"})``, written directly: for these
    three members JSON's C encoder gives the canonical bytes (keys in order, ECMAScript
    string escapes), and finalize computes one per row. A string it cannot encode as
    UTF-8 (a lone surrogate) goes through the canonical encoder.
    """
    unit, digest = row["unit"], row.get("receipt_sha256")
    if isinstance(unit, str) and (digest is None or isinstance(digest, str)):
        failed = "true" if row.get("status") == "failed" else "false"
        text = f'{{"failed":{failed},"receipt_sha256":{_dumps(digest)},"unit":{_dumps(unit)}}}'
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            pass
    return canonical_json(
        {
            "unit": unit,
            "receipt_sha256": digest,
            "failed": row.get("status") == "failed",
        }
    )


_dumps = json.JSONEncoder(ensure_ascii=False).encode


# -- writing ------------------------------------------------------------------------------


class IndexWriter:
    """Takes rows in index order; writes pieces and computes every per-row statistic.

    Streams: it holds one piece, the Merkle stack, the first errors and the top
    documents, so its memory does not grow with the run. ``state()`` is taken at piece
    boundaries and resumes a writer in another process.
    """

    def __init__(
        self, store: ObjectStore | None, run_id: str | None, state: dict[str, Any] | None = None
    ) -> None:
        self.store, self.run_id = store, run_id
        s = state or {}
        self.pieces: list[dict[str, Any]] = s.get("pieces", [])
        self.merkle = MerkleStream(s.get("merkle"))
        self.units: int = s.get("units", 0)
        self.failed_units: int = s.get("failed_units", 0)
        self.documents: int = s.get("documents", 0)  # documents that were read (with bytes)
        self.document_ids: int = s.get("document_ids", 0)  # every document with a unit
        self.bytes: int = s.get("bytes", 0)
        self.errors: list[dict[str, Any]] = s.get("errors", [])
        # Top documents by attention, a min-heap of [failed units, flagged decisions,
        # -rows so far (earlier documents win ties), doc_id].
        self.top: list[list[Any]] = s.get("top", [])
        self.doc: dict[str, Any] | None = s.get("doc")
        self._buffer: list[bytes] = []
        self._first: Key | None = None
        self._last: Key | None = None

    def add(self, line: bytes) -> None:
        row = json.loads(line)
        key = row_key(row)
        self.merkle.add(leaf(row))
        self.units += 1
        failed = row.get("status") == "failed"
        self.failed_units += failed
        for error in row.get("errors") or ():
            if len(self.errors) >= MAX_SUMMARY_ERRORS:
                break
            self.errors.append({"unit": row["unit"], **error})
        doc = self.doc
        if doc is None or doc["id"] != key[0]:
            self._close_doc()
            doc = self.doc = {"id": key[0], "bytes": None, "failed": 0, "flagged": 0}
        if row.get("bytes") is not None:
            doc["bytes"] = row["bytes"]
        doc["failed"] += failed
        doc["flagged"] += row.get("flagged") or 0
        if not self._buffer:
            self._first = key
        self._last = key
        self._buffer.append(line)
        if len(self._buffer) >= PIECE_ROWS:
            self.flush()

    def _close_doc(self) -> None:
        doc = self.doc
        if doc is None:
            return
        self.document_ids += 1
        if doc["bytes"] is not None:
            self.documents += 1
            self.bytes += doc["bytes"]
        # Earlier documents win ties, as in a report sorted by (attention, doc_id).
        entry = [doc["failed"], doc["flagged"], -self.units, doc["id"]]
        if len(self.top) < HIGHLIGHTS:
            heapq.heappush(self.top, entry)
        elif entry[:3] > self.top[0][:3]:
            heapq.heapreplace(self.top, entry)
        self.doc = None

    @property
    def at_boundary(self) -> bool:
        return not self._buffer

    def flush(self) -> None:
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        number = len(self.pieces)
        key = piece_key(self.run_id, number) if self.run_id else f"(piece {number})"
        if self.store is not None and self.run_id:
            self.store.put(key, data)
        assert self._first is not None and self._last is not None
        self.pieces.append(
            {
                "key": key,
                "first": list(self._first),
                "last": list(self._last),
                "units": len(self._buffer),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
        self._buffer = []

    def state(self) -> dict[str, Any]:
        assert self.at_boundary, "a writer's state is taken between pieces"
        return {
            "pieces": self.pieces,
            "merkle": self.merkle.state(),
            "units": self.units,
            "failed_units": self.failed_units,
            "documents": self.documents,
            "document_ids": self.document_ids,
            "bytes": self.bytes,
            "errors": self.errors,
            "top": self.top,
            "doc": self.doc,
        }

    def finish(self) -> dict[str, Any]:
        """Write the last piece, the highlights and the manifest; return the manifest."""
        self.flush()
        self._close_doc()
        highlights = [
            {"doc_id": doc_id, "failed_units": failed, "flagged": flagged}
            for failed, flagged, _, doc_id in sorted(self.top, key=lambda e: (-e[0], -e[1], -e[2]))
        ]
        manifest = {
            "format": INDEX_FORMAT,
            "run_id": self.run_id,
            "order": ["doc_id", "kind"],
            "units": self.units,
            "failed_units": self.failed_units,
            "documents": self.documents,
            "document_ids": self.document_ids,
            "bytes": self.bytes,
            "merkle_root": self.merkle.root(),
            "leaf": 'canonical_json({"unit", "receipt_sha256", "failed": status == "failed"})',
            "pieces": self.pieces,
            "errors": self.errors,
        }
        if self.store is not None and self.run_id:
            self.store.put(
                highlights_key(self.run_id), json.dumps({"documents": highlights}).encode()
            )
            self.store.put(manifest_key(self.run_id), json.dumps(manifest, indent=1).encode())
        manifest["highlights"] = highlights
        return manifest


# -- reading ------------------------------------------------------------------------------


class IndexMissing(LookupError):
    """The run has no index (it has not finished, or its files are gone)."""


@dataclass
class _Piece:
    keys: list[Key]
    lines: list[bytes]


_manifests: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
_pieces: OrderedDict[tuple[str, str], _Piece] = OrderedDict()
MANIFEST_CACHE = 32
PIECE_CACHE = 4


def remember(cache: OrderedDict, key: Any, value: Any, size: int) -> None:
    """Keep ``value`` under ``key`` as the newest of a per-process cache of ``size`` entries."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


class RunIndex:
    """Reads a finished run's index. Manifests and a few pieces are cached per process
    (an index never changes once written)."""

    def __init__(self, store: ObjectStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        cache_key = (store.url, run_id)
        manifest = _manifests.get(cache_key)
        if manifest is None:
            try:
                manifest = json.loads(store.get(manifest_key(run_id)))
            except KeyError:
                raise IndexMissing(run_id) from None
            remember(_manifests, cache_key, manifest, MANIFEST_CACHE)
        self.manifest = manifest
        self.pieces: list[dict[str, Any]] = manifest["pieces"]
        self._lasts = [tuple(p["last"]) for p in self.pieces]

    @property
    def units(self) -> int:
        return self.manifest["units"]

    def piece(self, number: int) -> _Piece:
        key = self.pieces[number]["key"]
        cache_key = (self.store.url, key)
        piece = _pieces.get(cache_key)
        if piece is None:
            lines = self.store.get(key).splitlines(keepends=True)
            keys = []
            for line in lines:
                row = json.loads(line)
                keys.append((row["doc_id"], row["kind"]))
            piece = _Piece(keys, lines)
            remember(_pieces, cache_key, piece, PIECE_CACHE)
        return piece

    def _from(self, key: Key | None, inclusive: bool) -> tuple[int, int]:
        """(piece, row) of the first row at (inclusive) or after ``key``."""
        if key is None:
            return 0, 0
        number = bisect.bisect_left(self._lasts, key)
        if number >= len(self.pieces):
            return len(self.pieces), 0
        keys = self.piece(number).keys
        row = (bisect.bisect_left if inclusive else bisect.bisect_right)(keys, key)
        return number, row

    def rows(self, after: Key | None = None) -> Iterator[dict[str, Any]]:
        """Rows in index order, from just after ``after``."""
        number, row = self._from(after, inclusive=False)
        while number < len(self.pieces):
            lines = self.piece(number).lines
            for line in lines[row:]:
                yield json.loads(line)
            number, row = number + 1, 0

    def rows_before(self, before: Key) -> Iterator[dict[str, Any]]:
        """Rows in reverse index order, from just before ``before``."""
        number, row = self._from(before, inclusive=True)
        if number >= len(self.pieces):
            number, row = len(self.pieces) - 1, None
        while number >= 0:
            lines = self.piece(number).lines
            for line in reversed(lines[:row]):
                yield json.loads(line)
            number, row = number - 1, None

    def page(self, after: Key | None, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` rows after ``after``, and whether more follow."""
        out: list[dict[str, Any]] = []
        for row in self.rows(after):
            if len(out) == limit:
                return out, True
            out.append(row)
        return out, False

    def document(self, doc_id: str) -> list[dict[str, Any]]:
        """The rows of one document: its verify and admit units, and its ledger unit if it
        failed (a ledger unit that loads has no row): of every kind that leaves rows, in the
        index's order."""
        out = []
        for kind in sorted(k.name for k in kinds.all_kinds() if k.rows != "none"):
            row = self.find(kind, doc_id)
            if row is not None:
                out.append(row)
        return out

    def find(self, kind: str, doc_id: str) -> dict[str, Any] | None:
        key = (doc_id, kind)
        number, row = self._from(key, inclusive=True)
        if number >= len(self.pieces):
            return None
        piece = self.piece(number)
        if row < len(piece.keys) and piece.keys[row] == key:
            return json.loads(piece.lines[row])
        return None

    def highlights(self) -> list[dict[str, Any]]:
        try:
            return json.loads(self.store.get(highlights_key(self.run_id)))["documents"]
        except KeyError:
            return []


def verify_index(store: ObjectStore, run_id: str) -> str:
    """Recompute a run's Merkle root from its pieces, checking each piece's digest.

    Returns the root; raises ``ValueError`` at the first piece or order that is wrong.
    """
    index = RunIndex(store, run_id)
    merkle = MerkleStream()
    previous: Key | None = None
    for entry in index.pieces:
        data = store.get(entry["key"])
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ValueError(f"{entry['key']}: sha256 does not match the manifest")
        for line in data.splitlines():
            row = json.loads(line)
            key = row_key(row)
            if previous is not None and key <= previous:
                raise ValueError(f"{entry['key']}: rows out of order at {key}")
            previous = key
            merkle.add(leaf(row))
    root = merkle.root()
    if root != index.manifest["merkle_root"]:
        raise ValueError(f"Merkle root {root} != the manifest's {index.manifest['merkle_root']}")
    return root
