"""What every unit kind runs on: a unit's result and row, its document, and the runner.

:class:`UnitRunner` holds what the kinds' units share for one corpus under one policy: the
documents and their stored readings, the inputs (a refused one is an input error), the receipt
cache (reuse, the reason a unit is computed, the create-once store). The kinds themselves
(``groundswell.shared.units``) compute their receipts on it; the Celery tasks and the
in-process runner both run them through the registry (:mod:`~groundswell.shared.runs.kinds`),
so the pipeline and the in-process core compute the same receipts and the same counters.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from groundswell.shared.corpus import (
    CHANGED_FILE,
    DOCUMENTS,
    SCHEMA_KEY,
    InputError,
    InputFileError,
    Labels,
    RecordSource,
    decode_document,
    doc_id_of,
    document_key,
    labels_key,
    parse_labels,
    parse_schema,
    source_format,
)
from groundswell.shared.policies import PolicyVersion
from groundswell.shared.read.regions import span_pages
from groundswell.shared.receipts import (
    ReceiptError,
    content_sha256,
    open_receipt,
    receipt_key,
    seal,
)
from groundswell.shared.runs import kinds
from groundswell.shared.runs.index import TALLIED
from groundswell.shared.runs.reading import (
    TIMEOUT,
    StoredReading,
    load_reading,
    read_source,
    reader,
)
from groundswell.shared.storage import ObjectStore, StorageRefused

# Keep the result small: a run's error list is for reading, the counters carry the totals.
MAX_ERRORS_PER_UNIT = 50

# The listing entries (doc_id -> key -> [size, etag]) of the batch this context runs: a
# context variable, as one runner serves every batch of its run in a process.
_LISTING: ContextVar[dict[str, dict[str, list[Any]]] | None] = ContextVar(
    "groundswell_listing", default=None
)

# Whether those entries were listed by this run's planning (a batch's), not read from an index
# row by a reader of the run.
_FRESH: ContextVar[bool] = ContextVar("groundswell_listing_fresh", default=True)

# The revision of how a unit's counts are taken from its receipt and labels
# (shared/summary.py's unit counts, the kinds' tallies): an index row records it beside its
# counts, and a row of another revision is recounted from its receipt. Bump it with any
# change to those counts.
COUNTING = 1

# Bytes of documents and labels files a runner (one run's, in one process) keeps: their
# units of each kind read them once.
READ_CACHE_BYTES = 16 << 20


def current_listing() -> dict[str, dict[str, list[Any]]] | None:
    """The listing entries of the batch running in this context (a corpus read in place
    finds each document's record by them)."""
    return _LISTING.get()


def unit_key(kind: str, doc_id: str) -> str:
    return f"{kind}/{doc_id}"


def split_unit_key(key: str) -> tuple[str, str]:
    kind, _, doc_id = key.partition("/")
    return kind, doc_id


@dataclass
class UnitResult:
    kind: str
    doc_id: str
    status: str  # computed | cached | failed; in a dry run: would_compute | would_reuse
    receipt_key: str | None = None
    receipt_sha256: str | None = None
    document_bytes: int | None = None
    counts: Counter[str] = field(default_factory=Counter)
    errors: list[InputError] = field(default_factory=list)
    inputs: dict[str, str] | None = None  # sha256 of each input the receipt depends on
    policy_fingerprint: str | None = None
    reason: str | None = None  # why it was (or would be) computed
    listing: dict[str, list[Any]] | None = None  # its inputs as listed: key -> [size, etag]

    @property
    def unit(self) -> str:
        return unit_key(self.kind, self.doc_id)

    def row(self) -> dict[str, Any]:
        """The unit's row in its batch's segment and in the run index."""
        row = {
            "unit": self.unit,
            "doc_id": self.doc_id,
            "kind": self.kind,
            "status": self.status,
            "receipt": self.receipt_key,
            "receipt_sha256": self.receipt_sha256,
            "bytes": self.document_bytes,
            "errors": [e.as_dict() for e in self.errors[:MAX_ERRORS_PER_UNIT]],
            "errors_total": len(self.errors),
            "inputs": self.inputs,
            "policy_fingerprint": self.policy_fingerprint,
            "reason": self.reason,
        }
        if self.listing is not None:  # what the next run compares to reuse it unread
            row["listing"] = self.listing
            # Its counts (from its receipt, and its labels when it has some), by this
            # counting: a unit reused with this row's receipt reads neither.
            row["counts"] = dict(sorted(self.counts.items()))
            row["counted"] = COUNTING
        # What the report filters and counts a document by, without reading its receipt.
        row["tally"] = {k: v for k, v in sorted(self.counts.items()) if k.startswith(TALLIED)}
        kind = kinds.find(self.kind)
        if kind is not None and kind.row_fields is not None:
            row.update(kind.row_fields(self.counts))
        return row

    def counters(self) -> dict[str, int]:
        """What this unit adds to the run's counters (exactly once)."""
        out = dict(self.counts)
        out[f"units.{self.kind}.{self.status}"] = 1
        if self.reason:  # set only when the unit was (or would be) computed
            out[f"reasons.{self.kind}.{self.reason}"] = 1
        if self.errors:
            out["errors"] = out.get("errors", 0) + len(self.errors)
            out[f"errors.{self.kind}"] = out.get(f"errors.{self.kind}", 0) + len(self.errors)
        return out


@dataclass
class Document:
    """A unit's document: its file, the digest the receipt covers, and its text.

    For a text file the digest is the file's and the text its decoding; for a file read
    first (PDF, HTML, XML) the digest is the text's, ``source`` names the file's digest, its
    format and the reader, and ``failure`` says why its reading cannot be verified against.
    """

    file: str
    size: int
    sha256: str | None
    text: Callable[[], str]
    source: dict[str, Any] | None = None
    reading: StoredReading | None = None
    failure: InputError | None = None

    @property
    def layout(self) -> dict[str, Any] | None:
        return self.reading.layout if self.reading is not None else None

    def pages(self, start: Any, end: Any) -> list[int] | None:
        """The pages of the span [start, end) of a PDF with a layout, in UTF-8 byte offsets
        of its text (the layout's, and admission evidence's): the receipts' ``pages``."""
        return span_pages(self.layout, start, end) or None if self.layout else None


class Unread(Exception):
    """A dry run found no stored reading of the document: its units would be computed."""


def source_conflict(keys: list[str]) -> InputError:
    return InputError(
        keys[0],
        f"the document has {len(keys)} source files ({', '.join(keys)}): one id, one file",
    )


class UnitRunner:
    """Runs units of one corpus under one policy, writing receipts to ``output``."""

    def __init__(
        self,
        corpus: ObjectStore,
        output: ObjectStore,
        policy: PolicyVersion,
        *,
        only: str = "missing",
        dry_run: bool = False,
        previous: Callable[[str, str], dict[str, Any] | None] | None = None,
        max_bytes: int | None = None,
        verify_inputs: bool = False,
        changed: frozenset[str] | None = None,
    ) -> None:
        self.corpus = corpus
        self.output = output
        self.policy = policy
        self.only = only
        self.dry_run = dry_run
        self._previous = previous  # (kind, doc_id) -> the unit's row in the previous run
        self.max_bytes = max_bytes  # an input larger than this fails its unit, unread
        # Read and hash every input, even one whose listing entry is the previous run's.
        self.verify_inputs = verify_inputs
        # run --changed: the documents named, read and checked; any other document's unit
        # is taken as unchanged (its previous row reused without comparing listing entries).
        self.changed = changed
        self._schema: tuple[bytes, dict[str, Any]] | InputFileError | None = None
        # What a kind parses once per runner (the admission schema and policy, say), by name.
        self.cache: dict[str, Any] = {}
        # Documents and labels files read, by (key, listing entry): a document's verify and
        # admit units (separate batches, often one after the other in this process) read it
        # once. Only a listed input is kept (its entry, ETag or mtime, inode and size, names
        # its content, as reuse by listing relies on); bounded in bytes.
        self._read: OrderedDict[tuple[str, int, str], bytes] = OrderedDict()
        self._read_bytes = 0
        self._read_lock = threading.Lock()
        # The last readings loaded: a document's verify and admit units often run together.
        self._readings: OrderedDict[tuple[str, str], StoredReading] = OrderedDict()
        # Sends a helper task for pages of a source file (file, its sha256, the pages) when
        # the runner is a run's on a worker: a long scan is then shared out (runs/reading.py).
        self.ocr_helpers: Callable[[str, str, list[int]], None] | None = None

    # -- documents and their readings ---------------------------------------------------

    def find_source(self, doc_id: str) -> str | list[str] | None:
        """The source file of a document without a plan (one listing when it is not .txt)."""
        if self.corpus.exists(document_key(doc_id)):
            return None
        keys = [
            info.key
            for page in self.corpus.list_pages(f"{DOCUMENTS}{doc_id}.")
            for info in page
            if doc_id_of(info.key, DOCUMENTS) == doc_id
        ]
        return keys[0] if len(keys) == 1 else (keys or None)

    def stored_reading(self, sha: str, name: str) -> StoredReading | None:
        stored = self._readings.get((sha, name))
        if stored is None:
            stored = load_reading(self.output, sha, name)
            if stored is not None:
                self.remember(stored)
        return stored

    def read_now(self, data: bytes, file: str, sha: str, name: str) -> StoredReading:
        """Read the source file and store its reading (runs/reading.py ``read_source``), a
        long scan shared out with helper tasks when the runner can send them."""
        helpers = self.ocr_helpers
        ask = None if helpers is None else (lambda pages: helpers(file, sha, pages))
        stored = read_source(self.output, data, file, sha, name, ask)
        self.remember(stored)
        return stored

    def remember(self, stored: StoredReading) -> None:
        self._readings[(stored.source_sha256, stored.reader)] = stored
        while len(self._readings) > 4:
            self._readings.popitem(last=False)

    def document(self, doc_id: str, source: Any = None, read_now: bool = True) -> Document:
        """The unit's document; InputFileError when there is none to verify against (missing,
        two sources, reading timed out); without ``read_now``, Unread when it is not read."""
        if isinstance(source, list):
            raise InputFileError(source_conflict(source))
        file = source or document_key(doc_id)
        data = self.get_input(file, doc_id)
        if data is None:
            raise InputFileError(InputError(file, "no such document"))
        sha = content_sha256(data)
        if source_format(file) in (None, "text"):
            return Document(file, len(data), sha, lambda: decode_document(data, file))
        name = reader()
        stored = self.stored_reading(sha, name)
        if stored is None:
            if not read_now:
                raise Unread(file)
            # Its read unit has not stored it (a split or resent batch overtook it): read here.
            stored = self.read_now(data, file, sha, name)
        if stored.error is not None and stored.error["cause"] == TIMEOUT:
            raise InputFileError(InputError(file, stored.error["message"]))
        text = stored.text or ""
        return Document(
            file,
            len(data),
            stored.text_sha256,
            lambda: text,
            {"sha256": sha, "format": stored.format, "reader": name},
            stored,
            stored.failure(file),
        )

    def indexed_document(self, doc_id: str, listing: dict[str, list[Any]] | None) -> Document:
        """A finished run's document, unread (a PDF's stored reading), for the read side:
        ``listing`` is its index row's listing entries, which locate a record read in place
        (without them, a source looks for the document from its start)."""
        with self.listed({doc_id: listing} if listing else None, fresh=False):
            return self.document(doc_id, self.find_source(doc_id), read_now=False)

    # -- inputs -------------------------------------------------------------------------

    def get_input(self, key: str, shared_by: str | None = None) -> bytes | None:
        """An input's bytes, None when it is missing; one the store refuses (a link, a
        special file, access denied) is an input error naming it, never retried.
        ``shared_by``: the document whose units of every kind read this file (its document,
        its labels): read once while its listing entry stays the same."""
        entry = ((_LISTING.get() or {}).get(shared_by) or {}).get(key) if shared_by else None
        # Kept only by a content-naming entry; --verify-inputs reads every file itself.
        kept = (key, entry[0], str(entry[1])) if entry and entry[1] else None
        if not _FRESH.get():
            kept = None  # a reader's entries (an index row's) may name a file since changed
        if kept is not None and not self.verify_inputs:
            with self._read_lock:
                data = self._read.get(kept)
                if data is not None:
                    self._read.move_to_end(kept)
                    return data
        try:
            data = self.corpus.get(key, max_bytes=self.max_bytes)
        except KeyError:
            return None
        except StorageRefused as exc:
            raise InputFileError(InputError(key, f"refused: {exc}")) from None
        if kept is not None and len(data) == entry[0]:
            self._keep_read(kept, data)
        return data

    def _keep_read(self, key: tuple[str, int, str], data: bytes) -> None:
        if len(data) > READ_CACHE_BYTES // 16:
            return  # a large file would push out many small ones
        with self._read_lock:
            if key in self._read:
                return
            self._read[key] = data
            self._read_bytes += len(data)
            while self._read_bytes > READ_CACHE_BYTES:
                self._read_bytes -= len(self._read.popitem(last=False)[1])

    def labels(self, doc_id: str, candidates: bool) -> tuple[Labels | None, list[InputError]]:
        """The document's labels, and the bad entries this unit reports (each once: those of
        ``candidates`` on admission, with ``candidates``, the rest on verification). Bad
        entries are left out."""
        file = labels_key(doc_id)
        if self.unlabelled(doc_id):
            return None, []
        data = self.get_input(file, doc_id)
        if data is None:
            return None, []
        labels, errors = parse_labels(data, file)
        return labels, [e for e in errors if (e.field or "").startswith("candidates") == candidates]

    def unlabelled(self, doc_id: str) -> bool:
        """Planning listed ``labels/`` and found no labels file of the document (a corpus
        read in place lists its records, not ``labels/``: its labels are asked unless it has
        none at all)."""
        if isinstance(self.corpus, RecordSource):
            return not self.corpus.has_labels()
        listing = (_LISTING.get() or {}).get(doc_id)
        if not listing:
            return False
        return labels_key(doc_id) not in listing

    def schema_once(self) -> tuple[bytes, dict[str, Any]]:
        if self._schema is None:
            data = self.get_input(SCHEMA_KEY)
            if data is None:
                self._schema = InputFileError(
                    InputError(SCHEMA_KEY, "the corpus has no schema.json")
                )
            else:
                try:
                    self._schema = (data, parse_schema(data))
                except InputFileError as exc:
                    self._schema = exc
        if isinstance(self._schema, InputFileError):
            raise self._schema
        return self._schema

    def schema_sha256(self) -> str:
        """The schema's digest, computed once per runner (every admission unit names it)."""
        if "schema_sha256" not in self.cache:
            self.cache["schema_sha256"] = content_sha256(self.schema_once()[0])
        return self.cache["schema_sha256"]

    def producer(self) -> dict[str, Any] | None:
        """The corpus's declared producer (``corpus.yaml``, or the format it is read in), read
        once per runner: its units' receipts carry it, and their fingerprints cover it. A bad
        corpus.yaml fails each unit with its error (InputFileError), as a bad schema does."""
        if "producer" not in self.cache:
            from groundswell.shared.formats.corpus_file import declared_producer

            try:
                self.cache["producer"] = declared_producer(self.corpus)
            except InputFileError as exc:
                self.cache["producer"] = exc
        found = self.cache["producer"]
        if isinstance(found, InputFileError):
            raise found
        return found

    def listed_unit(
        self,
        kind: str,
        doc_id: str,
        source: Any,
        input_file: str,
        reuse: Callable[[UnitRunner, str, tuple[str, str]], UnitResult | None],
        compute: Callable[[UnitRunner, str, Any], UnitResult],
    ) -> UnitResult:
        """A document's unit of ``kind``: reused unread when its inputs are listed as before
        (a text document: ``reuse``), else computed (``compute``) with its inputs' listing
        entries kept in its row; an unusable input file fails it. ``source``: the document's
        file when it is not ``documents/<id>.txt``."""
        keys = (source if isinstance(source, str) else document_key(doc_id), input_file)
        if labels_key(doc_id) in ((_LISTING.get() or {}).get(doc_id) or {}):
            keys += (labels_key(doc_id),)  # its labels too: a changed labels file recounts
        try:
            reused = None if source is not None else reuse(self, doc_id, keys)
            return reused or self.with_listing(compute(self, doc_id, source), keys)
        except InputFileError as exc:
            return self.failed(kind, doc_id, exc.error)

    # -- reuse by listing --------------------------------------------------------------

    @staticmethod
    @contextmanager
    def listed(
        listing: dict[str, dict[str, list[Any]]] | None, fresh: bool = True
    ) -> Iterator[None]:
        """Run a batch's units with its documents' listing entries (``BatchSpec.listing``).
        ``fresh``: listed by this run's planning, so bytes kept by them are the files' bytes
        now; a reader's entries come from an index row, and the file may have changed since."""
        token, kept = _LISTING.set(listing), _FRESH.set(fresh)
        try:
            yield
        finally:
            _LISTING.reset(token)
            _FRESH.reset(kept)

    def entries(self, doc_id: str, keys: tuple[str, ...]) -> dict[str, list[Any]] | None:
        """The listing entries of a unit's input files, None unless planning listed each."""
        listing = (_LISTING.get() or {}).get(doc_id) or {}
        if not all(k in listing for k in keys):
            return None
        return {k: list(listing[k]) for k in keys}

    def with_listing(self, result: UnitResult, keys: tuple[str, ...]) -> UnitResult:
        """``result`` carrying its inputs' listing entries in its row (not a failed one's:
        a failure is never reused by listing)."""
        if result.status != "failed":
            result.listing = self.entries(result.doc_id, keys)
        return result

    def reuse_listed(
        self,
        kind: str,
        doc_id: str,
        keys: tuple[str, ...],
        fingerprint: Callable[[dict[str, str]], str | None],
        tally: Callable[[dict[str, Any]], tuple[Counter[str], list[InputError]]],
        policy_fp: str,
    ) -> UnitResult | None:
        """The unit reused from the previous run without reading its inputs, or None (then
        it is run as usual). Exact: only when each input's listing entry (``keys``: the
        document's file first) is the one the previous run's row recorded, that row's
        receipt is a result (not a failure), and ``fingerprint`` of the row's input digests
        under this policy and engine (None: they do not fit) names a stored receipt."""
        if self.verify_inputs or self.only == "all" or self.dry_run or not self._previous:
            return None
        if self.changed is not None and self._named(doc_id):
            return None  # named as changed: read and checked
        listing = self.entries(doc_id, keys)
        if listing is None:
            return None
        if self.max_bytes is not None and any(e[0] > self.max_bytes for e in listing.values()):
            return None  # it fails unread, as when it is read
        previous = self._previous(kind, doc_id)
        if not previous or previous.get("status") == "failed":
            return None
        inputs = previous.get("inputs")
        recorded = previous.get("listing")
        if (
            self.changed is not None
            and isinstance(recorded, dict)
            and recorded.keys() == listing.keys()
        ):
            # Not named: unchanged by the list's word, recorded as it was; a record read in
            # place keeps its entries as listed now, which locate it in its file as it is
            # (another record of the file may have moved it).
            if not isinstance(self.corpus, RecordSource):
                listing = recorded
            recorded = listing
        if recorded != listing or not isinstance(inputs, dict):
            return None
        fp = fingerprint(inputs)
        if fp is None:
            return None
        key = receipt_key(kind, fp)
        counted = self._counted(previous, key, keys)
        if counted is not None:
            # The previous row is of this very receipt (same key: same fingerprint) and
            # keeps its digest and counts: nothing to read.
            digest, (counts, errors) = previous["receipt_sha256"], counted
        else:
            receipt = self._reuse(key)
            if receipt is None or "failure" in receipt:
                return None
            digest, (counts, errors) = receipt["receipt_sha256"], tally(receipt)
        size = listing[keys[0]][0]
        out = UnitResult(kind, doc_id, "cached", key, digest, size, counts, errors)
        out.inputs, out.policy_fingerprint, out.listing = inputs, policy_fp, listing
        return out

    def _named(self, doc_id: str) -> bool:
        """Whether a --changed run's list names the document: by its id, or (a record read
        in place) by the producer file its record lies in."""
        assert self.changed is not None
        if doc_id in self.changed:
            return True
        if not isinstance(self.corpus, RecordSource):
            return False
        return any(CHANGED_FILE + file in self.changed for file in self.corpus.record_files(doc_id))

    @staticmethod
    def _counted(
        previous: dict[str, Any], key: str, keys: tuple[str, ...]
    ) -> tuple[Counter[str], list[InputError]] | None:
        """A reused unit's counts and errors from its previous row, or None (then they are
        counted from its receipt). Only a row of the receipt at ``key`` (under another
        policy part the receipt differs, and so do its counts), counted by this revision,
        with every error (none left out of the row): its counts are the receipt's and its
        labels', both unchanged (its inputs' entries, labels included, are as listed)."""
        counts, errors = previous.get("counts"), previous.get("errors")
        if (
            previous.get("receipt") == key
            and isinstance(previous.get("receipt_sha256"), str)
            and previous.get("counted") == COUNTING
            and isinstance(counts, dict)
            and isinstance(errors, list)
            and previous.get("errors_total") == len(errors)
        ):
            return Counter(counts), [error_from_body(e, keys[1]) for e in errors]
        return None

    def failed(self, kind: str, doc_id: str, error: InputError, **kw: Any) -> UnitResult:
        return UnitResult(kind, doc_id, "failed", errors=[error], **kw)

    def _reuse(self, key: str) -> dict[str, Any] | None:
        try:
            data = self.output.get(key)
        except KeyError:
            return None
        try:
            return open_receipt(data, key)
        except ReceiptError:
            return None  # a damaged receipt is recomputed and replaced

    def _reason(self, kind: str, doc_id: str, inputs: dict[str, str]) -> str:
        """Why a unit has no usable receipt, against the previous run of this corpus."""
        if self.only == "all":
            return "recompute all"
        previous = self._previous(kind, doc_id) if self._previous else None
        if previous is None:
            return "new input"
        if previous.get("status") == "failed":
            return "previous failure"
        if previous.get("inputs") == inputs:
            return "changed policy part"
        return "changed input"

    def run_unit(
        self,
        kind: str,
        doc_id: str,
        fp: str,
        inputs: dict[str, str],
        size: int,
        compute: Callable[[], dict[str, Any]],
        tally: Callable[[dict[str, Any]], tuple[Counter[str], list[InputError]]],
        failure_file: str,
        policy_fp: str,
    ) -> UnitResult:
        """Reuse the receipt, or (dry run) say why it would be computed, or compute it.
        ``policy_fp``: the fingerprint of the policy part the kind runs under."""
        key = receipt_key(kind, fp)
        receipt = None if self.only == "all" else self._reuse(key)
        reason = None
        if receipt is not None and self.only == "failed" and "failure" in receipt:
            receipt, reason = None, "previous failure"
        if receipt is None:
            reason = reason or self._reason(kind, doc_id, inputs)
        if self.dry_run:
            status = "would_reuse" if receipt is not None else "would_compute"
            return UnitResult(
                kind,
                doc_id,
                status,
                document_bytes=size,
                inputs=inputs,
                policy_fingerprint=policy_fp,
                reason=reason,
            )
        status = "cached"
        if receipt is None:
            status = "computed"
            receipt = compute()
            receipt["receipt_sha256"] = self._store(key, receipt, replace=self.only != "missing")
        digest = receipt["receipt_sha256"]
        if "failure" in receipt:  # a deterministic input failure, receipted like a result
            error = error_from_body(receipt["failure"], failure_file)
            out = UnitResult(kind, doc_id, "failed", key, digest, size, errors=[error])
        else:
            counts, errors = tally(receipt)
            out = UnitResult(kind, doc_id, status, key, digest, size, counts, errors)
        out.inputs, out.policy_fingerprint, out.reason = inputs, policy_fp, reason
        return out

    def _store(self, key: str, body: dict[str, Any], replace: bool) -> str:
        data, digest = seal(body)
        if not self.output.put(key, data, create_only=not replace):
            # Another delivery of this unit wrote it first; receipts are deterministic.
            stored = self._reuse(key)
            if stored is not None:
                return stored["receipt_sha256"]
            self.output.put(key, data)
        return digest

    def locate(self, kind: str, doc_id: str) -> str | None:
        """The key of the receipt a unit has (or will have) under this policy, from its
        inputs alone; None when an input is missing or unusable (or not read yet), or when
        the kind makes no receipts."""
        found = kinds.get(kind).locate
        return found(self, doc_id) if found is not None else None

    def unit(self, kind: str, doc_id: str, source: Any = None) -> UnitResult:
        """One document's unit of ``kind`` (``source``: the document's file when it is not
        ``documents/<id>.txt``)."""
        run = kinds.get(kind).unit
        if run is None:
            raise kinds.KindError(f"unit kind {kind!r} has no per-document unit")
        return run(self, doc_id, source)

    def unit_inputs(
        self, kind: str, doc_id: str, source: Any, file: str, what: str
    ) -> tuple[bytes, Document] | UnitResult:
        """A unit's own input ``file`` (its ``what``: claims, candidates) and its document; or
        the unit, failed for want of them (in a dry run, unread: it would be computed)."""
        data = self.get_input(file)
        if data is None:
            return self.failed(kind, doc_id, InputError(file, f"no {what} file"))
        doc = self.document_for(kind, doc_id, source)
        return doc if isinstance(doc, UnitResult) else (data, doc)

    def located_inputs(self, doc_id: str, file: str) -> tuple[bytes, Document] | None:
        """A unit's own input and its document as they are now, with no reading (for
        :meth:`locate`); None when either is missing, unusable or not read yet."""
        data = self.get_input(file)
        if data is None:
            return None
        try:
            return data, self.document(doc_id, self.find_source(doc_id), read_now=False)
        except (InputFileError, Unread):
            return None

    def unread(self, kind: str, doc_id: str) -> UnitResult:
        """A dry run's unit whose document is not read yet: it would be computed."""
        return UnitResult(kind, doc_id, "would_compute", reason="unread")

    def document_for(self, kind: str, doc_id: str, source: Any) -> Document | UnitResult:
        try:
            return self.document(doc_id, source, read_now=not self.dry_run)
        except Unread:
            return self.unread(kind, doc_id)
        except InputFileError as exc:
            return self.failed(kind, doc_id, exc.error)


def error_body(error: InputError) -> dict[str, Any]:
    return error.as_dict()


def error_from_body(body: dict[str, Any], default_file: str) -> InputError:
    return InputError(
        body.get("file") or default_file,
        body.get("message", ""),
        body.get("line"),
        body.get("field"),
    )
