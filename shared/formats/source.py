"""A producer's files read in place as a corpus (``--format``, or ``corpus.yaml``).

:class:`ProducerCorpus` is the corpus store of such a run and a
:class:`~groundswell.shared.corpus.RecordSource`:

- planning pages its documents (:meth:`ProducerCorpus.listed_documents`): a JSONL file is
  read a line-aligned byte range at a time (a range read each), a line's document id and
  text length found by parsing that line alone; any other file (one response per document)
  is read whole and converted. The cursor is a byte offset and a line number, so planning
  resumes where it stopped and holds one range at a time, whatever the file's size;
- a unit asks it for ``documents/<id>.txt``, ``claims/<id>.jsonl``, ``candidates/<id>.json``
  and ``schema.json`` as in the native layout; it reads the document's line where it lies
  (each listing entry's etag locates it: ``<line>:<start>:<end>:<file etag>:<file>``; the
  lines of one batch in one range read), converts it, and serves exactly the bytes
  ``groundswell import`` writes (:func:`~groundswell.shared.formats.base.layout_files`),
  so receipts, reuse, summaries and the Merkle root are the imported layout's;
- every other key (``labels/``, ``corpus.yaml``) is the underlying store's.

A record that converts to nothing (bad JSON, an offset outside its text) is planned under
its default id (``<stem>-<line>``) as a verification unit that fails with the record's
error, naming file, line and field; a record whose document id an earlier record gave (the
ids listed are kept: ``seen.py``) as one named ``<stem>-<line>.duplicate`` that fails saying
so, as ``groundswell import`` refuses it. A document sent to the provider as a file (a PDF)
is served as ``documents/<id>.pdf``, its page citations bound as import binds them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from groundswell.shared.corpus import (
    CANDIDATES,
    CLAIMS,
    DOCUMENTS,
    LABELS,
    SCHEMA_KEY,
    InputError,
    InputFileError,
    ListedDocument,
    candidates_key,
    claims_key,
    doc_id_of,
    document_key,
    load_json,
)
from groundswell.shared.formats import convert_file, convert_line, file_stem
from groundswell.shared.formats.base import Converted, layout_files, safe_id
from groundswell.shared.formats.corpus_file import CORPUS_FILE, CorpusFile, read_corpus_file
from groundswell.shared.formats.seen import SeenIds
from groundswell.shared.storage import ObjectInfo, ObjectStore, StorageRefused

JSONL = (".jsonl", ".ndjson")
PRODUCER_FILES = (*JSONL, ".json")
IMPORT_KEY = "import.json"
LAYOUT_PREFIXES = (DOCUMENTS, CLAIMS, CANDIDATES, LABELS, "runs/", "receipts/")
CHUNK_BYTES = 2 << 20  # a planning range: a page of documents, read in one range read
SPAN_BYTES = 32 << 20  # a batch's lines read in one range read up to this
MAX_LINE_BYTES = 256 << 20  # a line longer than this (or max_bytes) fails, unread
# Documents converted lately, up to this many bytes of layout files: a unit asks for two or
# three keys of one, and a document's verify and admit batches often run in one process.
CONVERTED_BYTES = 16 << 20
# Formats whose every record gives one document with candidates: planned from the parsed
# line alone (its id and text), without converting it.
_ONE_DOCUMENT = {"langextract": ("document_id", "text")}


def _locator(line: int, start: int, end: int, etag: str, file: str) -> str:
    return f"{line}:{start}:{end}:{etag}:{file}"


def _parse_locator(etag: Any) -> tuple[int, int, int, str] | None:
    """(line, start, end, file) of a listing entry's etag; line 0 is a whole JSON file."""
    if not isinstance(etag, str):
        return None
    parts = etag.split(":", 4)
    if len(parts) != 5 or not all(p.isdigit() for p in parts[:3]):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2]), parts[4]


# A document planned under the id of an earlier record: its unit, named after its record
# (``<stem>-<line>.duplicate``, ``.duplicate<k>`` for a record's k-th document), fails.
_DUPLICATE = re.compile(r"^(?P<base>.+)\.duplicate(?P<k>\d*)$")


class _Listing:
    """What one pass over the source carries: the ids it has seen and the next ordinal."""

    def __init__(self, seen: SeenIds, n: int) -> None:
        self.seen, self.n = seen, n


# The ids seen by the last passes planned in this process, by source (its store, format and
# prefixes): a planner that resumes from a cursor here (the next step of a run) takes them
# up instead of listing the source again from its start. A few sources at most.
_SEEN: OrderedDict[tuple[str, str, tuple[str, ...]], SeenIds] = OrderedDict()
KEPT_SOURCES = 4


def _virtual(key: str) -> str | None:
    """The document id of a layout key this source serves (a document's text or source
    file, its claims, its candidates), None for another key."""
    for prefix in (DOCUMENTS, CLAIMS, CANDIDATES):
        doc_id = doc_id_of(key, prefix)
        if doc_id is not None:
            return doc_id
    return None


def _duplicate_error(got: Converted) -> InputError:
    where = got.where
    return InputError(
        where.file,
        f"document id {got.doc_id!r} is given by an earlier record too (a document id names "
        "one record): this record is left out, as `groundswell import` leaves it out",
        where.line,
        where.at(got.id_field),
    )


class ProducerCorpus:
    """A corpus of producer files, served as the native layout (see the module)."""

    def __init__(
        self,
        store: ObjectStore,
        declared: CorpusFile,
        *,
        listing: Callable[[], dict[str, dict[str, list[Any]]] | None] | None = None,
        max_bytes: int | None = None,
        chunk_bytes: int | None = None,
        page_size: int = 1000,
    ) -> None:
        assert declared.format is not None
        self.store, self.declared, self.url = store, declared, store.url
        self.format = declared.format
        self.producer = declared.producer_of().as_dict()
        self.max_bytes = max_bytes
        self.chunk_bytes, self.page_size = chunk_bytes or CHUNK_BYTES, page_size
        self._listing = listing or (lambda: None)
        self._options: dict[str, Any] | None = None
        self._span: tuple[int, dict[tuple[int, int, int, str], bytes]] = (0, {})
        self._docs: OrderedDict[str, dict[str, bytes]] = OrderedDict()
        self._docs_bytes = 0
        self._p = 0
        self._labelled: bool | None = None

    # -- what the format's conversion is given ---------------------------------------------

    def options(self) -> dict[str, Any]:
        if self._options is None:
            options = dict(self.declared.options)
            if self.format == "mapped":
                options["mapping"] = self._mapping()
                if "://" not in self.url:
                    options.setdefault("base", self.url)  # document paths: the corpus's
            self._options = options
        return self._options

    def _mapping(self) -> Any:
        from groundswell.shared.formats.mapped import load_mapping

        declared = self.declared.mapping
        if declared is None:
            error = InputError(CORPUS_FILE, "the mapped format needs a mapping", None, "mapping")
            raise InputFileError(error)
        if isinstance(declared, str):
            try:
                return load_mapping(self.store.get(declared, max_bytes=1 << 20), declared)
            except KeyError:
                error = InputError(CORPUS_FILE, f"no mapping {declared}", None, "mapping")
                raise InputFileError(error) from None
        import json

        return load_mapping(json.dumps(declared).encode(), CORPUS_FILE)

    def _reserved(self) -> set[str]:
        named = {self.declared.mapping, self.declared.schema_}
        return {CORPUS_FILE, SCHEMA_KEY, IMPORT_KEY, *(k for k in named if isinstance(k, str))}

    def _producer_file(self, key: str) -> bool:
        return (
            key.endswith(PRODUCER_FILES)
            and key not in self._reserved()
            and not key.startswith(LAYOUT_PREFIXES)
        )

    def source_file(self, key: str) -> bool:
        """Whether ``key`` is one of the producer files this corpus reads."""
        return self._producer_file(key) and any(key.startswith(p) for p in self.declared.files)

    def has_labels(self) -> bool:
        """Whether the corpus holds any labels file (one listing, once): without, no unit
        asks for its document's labels (planning lists records, not ``labels/``)."""
        if self._labelled is None:
            first = next(iter(self.store.list_pages(LABELS, page_size=1)), [])
            self._labelled = bool(first)
        return self._labelled

    def record_files(self, doc_id: str) -> list[str]:
        found = self._listed_at(doc_id)
        return [found[3]] if found is not None else []

    # -- planning --------------------------------------------------------------------------

    def listed_documents(self, cursor: dict[str, Any] | None) -> Iterator[list[ListedDocument]]:
        """The documents after ``cursor``, a page (at most a range, or ``page_size``
        documents) at a time. The cursor: the prefix's number ``p``, the ``file`` and its
        ``etag`` and ``size``, the byte ``offset`` and ``line`` reached, ``skip``: the
        documents of the record at ``offset`` already planned, and ``n``: the documents
        listed before it (their ids are what a later record's id is checked against)."""
        at = dict(cursor or {})
        key = (self.url, self.format, tuple(self.declared.files))
        n = at.get("n")
        kept = _SEEN.get(key)
        if at and isinstance(n, int) and kept is not None and kept.upto >= n:
            # Listed here up to the cursor or past it: its ids are known.
            _SEEN.move_to_end(key)
            yield from self._pass(at, _Listing(kept, n - at.get("skip", 0)))
            return
        seen = _SEEN[key] = SeenIds()
        while len(_SEEN) > KEPT_SOURCES:
            _SEEN.popitem(last=False)
        if not at or not isinstance(n, int):
            # From the start (or a cursor that does not count the documents before it, which
            # a second record of an id before it then passes unseen).
            yield from self._pass(at, _Listing(seen, 0))
            return
        # Planned elsewhere up to the cursor: the source again from its start, for the ids of
        # the ``n`` documents before it.
        for page in self._pass({}, _Listing(seen, 0)):
            if n >= len(page):
                n -= len(page)
                continue
            page, n = page[n:], 0
            yield page

    def _pass(self, at: dict[str, Any], state: _Listing) -> Iterator[list[ListedDocument]]:
        for p, prefix in enumerate(self.declared.files):
            if p < at.get("p", 0):
                continue
            resume = at if p == at.get("p", 0) and "file" in at else None
            if resume is not None and resume["offset"] < resume["size"]:
                info = ObjectInfo(resume["file"], resume["size"], resume["etag"])
                yield from self._file_pages(p, info, resume["offset"], resume["line"], at, state)
            start = resume["file"] if resume is not None else None
            for page in self.store.list_pages(prefix, start_after=start):
                for info in page:
                    if self._producer_file(info.key):
                        yield from self._file_pages(p, info, 0, 0, {}, state)

    def _file_pages(
        self,
        p: int,
        info: ObjectInfo,
        offset: int,
        line: int,
        at: dict[str, Any],
        state: _Listing,
    ) -> Iterator[list[ListedDocument]]:
        skip = at.get("skip", 0)
        self._p = p  # the prefix the cursors of these documents name
        page: list[ListedDocument] = []
        for docs in self._records(info, offset, line, state):
            if skip:
                docs, skip = docs[skip:], 0
            page += docs
            if len(page) >= self.page_size:
                yield page
                page = []
        if page:
            yield page

    def _records(
        self, info: ObjectInfo, offset: int, line: int, state: _Listing
    ) -> Iterator[list[ListedDocument]]:
        """Each record's documents, in file order; a range at a time for JSONL."""
        if not info.key.endswith(JSONL):
            yield self._whole_file(info, state)
            return
        limit = min(self.max_bytes or MAX_LINE_BYTES, MAX_LINE_BYTES)
        while offset < info.size:
            want = self.chunk_bytes
            while True:
                chunk = self.store.get_range(info.key, offset, min(offset + want, info.size))
                cut = chunk.rfind(b"\n")
                if cut >= 0 or offset + len(chunk) >= info.size or want > limit:
                    break
                want *= 2  # a line longer than a range: read on to its end
            if not chunk:
                return  # the file shrank since it was listed
            if cut < 0 and offset + len(chunk) < info.size:
                line += 1
                end = self._line_end(info, offset + len(chunk))
                error = InputError(info.key, f"a line longer than {limit} bytes", line)
                yield [self._failed(info, line, offset, end, error, state)]
                offset = end + 1
                continue
            body = chunk if offset + len(chunk) >= info.size else chunk[: cut + 1]
            parts = body.split(b"\n")
            if body.endswith(b"\n"):
                parts.pop()
            for raw in parts:
                line += 1
                start, offset = offset, offset + len(raw) + 1
                if raw.strip():
                    yield self._line_documents(info, raw, line, start, start + len(raw), state)

    def _line_end(self, info: ObjectInfo, offset: int) -> int:
        """The offset of the first newline at or after ``offset`` (or the file's end)."""
        while offset < info.size:
            chunk = self.store.get_range(info.key, offset, offset + self.chunk_bytes)
            cut = chunk.find(b"\n")
            if cut >= 0:
                return offset + cut
            offset += len(chunk) or info.size
        return info.size

    def _after(
        self, info: ObjectInfo, offset: int, line: int, n: int, skip: int = 0
    ) -> dict[str, Any]:
        at = {"p": self._p, "file": info.key, "etag": info.etag, "size": info.size}
        return {**at, "offset": offset, "line": line, **({"skip": skip} if skip else {}), "n": n}

    def _listed(
        self,
        info: ObjectInfo,
        doc_id: str,
        locator: str,
        text_bytes: int,
        rest: int,
        candidates: bool,
        suffix: str = ".txt",
    ) -> dict[str, Any]:
        seen = {DOCUMENTS: text_bytes, CLAIMS: rest}
        document = f"{DOCUMENTS}{doc_id}{suffix}"
        entries = {document: [text_bytes, locator], claims_key(doc_id): [rest, locator]}
        if candidates:
            seen[CANDIDATES] = rest
            entries[candidates_key(doc_id)] = [rest, locator]
        return {"doc_id": doc_id, "seen": seen, "entries": entries}

    def _line_documents(
        self, info: ObjectInfo, raw: bytes, line: int, start: int, end: int, state: _Listing
    ) -> list[ListedDocument]:
        locator = _locator(line, start, end, info.etag, info.key)
        fast = _ONE_DOCUMENT.get(self.format)
        if fast is not None:
            try:
                value = load_json(raw)
            except (ValueError, RecursionError):
                value = None
            text = value.get(fast[1]) if isinstance(value, dict) else None
            if isinstance(text, str):
                given = value.get(fast[0])
                doc_id = safe_id(given) if isinstance(given, str) and given else None
                doc_id = doc_id or f"{file_stem(info.key)}-{line}"
                ordinal = state.n
                state.n += 1
                past = self._after(info, end + 1, line, state.n)
                if state.seen.earlier(doc_id, ordinal):
                    return [self._duplicate(info, line, start, end, 0, past)]
                size = len(text.encode("utf-8", "surrogatepass"))
                listed = self._listed(info, doc_id, locator, size, max(0, len(raw) - size), True)
                return [ListedDocument(**listed, after=past)]
        converted = list(
            convert_line(self.format, raw, info.key, line, self.producer, self.options())
        )
        return self._documents(info, converted, locator, line, start, end, len(raw), state)

    def _whole_file(self, info: ObjectInfo, state: _Listing) -> list[ListedDocument]:
        locator = _locator(0, 0, info.size, info.etag, info.key)
        try:
            data = self.store.get(info.key, max_bytes=self.max_bytes)
        except (KeyError, StorageRefused) as exc:
            error = InputError(info.key, f"cannot be read: {exc}")
            return [self._failed(info, 0, 0, info.size, error, state)]
        converted = list(convert_file(self.format, data, info.key, self.producer, self.options()))
        return self._documents(info, converted, locator, 0, 0, info.size, len(data), state)

    def _documents(
        self,
        info: ObjectInfo,
        converted: list[Converted | InputError],
        locator: str,
        line: int,
        start: int,
        end: int,
        size: int,
        state: _Listing,
    ) -> list[ListedDocument]:
        docs = [c for c in converted if isinstance(c, Converted)]
        if not docs:
            errors = [c for c in converted if isinstance(c, InputError)]
            error = errors[0] if errors else InputError(info.key, "no document", line or None)
            return [self._failed(info, line, start, end, error, state)]
        out = []
        for k, got in enumerate(docs):
            ordinal = state.n
            state.n += 1
            if k == len(docs) - 1:
                after = self._after(info, end + 1 if line else info.size, line, state.n)
            else:
                # The documents of one record before its last resume at that record.
                after = self._after(info, start, max(0, line - 1), state.n, skip=k + 1)
            if state.seen.earlier(got.doc_id, ordinal):
                out.append(self._duplicate(info, line, start, end, k, after))
                continue
            if got.source is not None:
                text, suffix = len(got.source), got.suffix
            else:
                text = len(got.text.encode("utf-8", "surrogatepass")) if got.text is not None else 0
                suffix = ".txt"
            candidates = got.candidates is not None
            listed = self._listed(info, got.doc_id, locator, text, size, candidates, suffix)
            out.append(ListedDocument(**listed, after=after))
        return out

    def _failed(
        self,
        info: ObjectInfo,
        line: int,
        start: int,
        end: int,
        error: InputError,
        state: _Listing,
    ) -> ListedDocument:
        """A record that gives no document: a unit under its default id that fails saying why
        (a verification unit only, so that the error is counted once)."""
        doc_id = file_stem(info.key) if not line else f"{file_stem(info.key)}-{line}"
        state.n += 1
        after = self._after(info, end + 1 if line else info.size, line, state.n)
        return self._failing(info, doc_id, line, start, end, after)

    def _duplicate(
        self, info: ObjectInfo, line: int, start: int, end: int, k: int, after: dict[str, Any]
    ) -> ListedDocument:
        """The ``k``-th document of a record whose id an earlier record gave: a verification
        unit named after the record that fails saying so (``groundswell import`` refuses
        it), the earlier record's units unaffected."""
        base = file_stem(info.key) if not line else f"{file_stem(info.key)}-{line}"
        return self._failing(info, f"{base}.duplicate{k or ''}", line, start, end, after)

    def _failing(
        self, info: ObjectInfo, doc_id: str, line: int, start: int, end: int, after: dict[str, Any]
    ) -> ListedDocument:
        locator = _locator(line, start, end, info.etag, info.key)
        entries = {document_key(doc_id): [0, locator], claims_key(doc_id): [end - start, locator]}
        return ListedDocument(doc_id, {DOCUMENTS: 0, CLAIMS: end - start}, entries, after)

    # -- what units read -------------------------------------------------------------------

    def _locate(self, doc_id: str) -> tuple[int, int, int, str] | None:
        """Where the document's record lies: from the batch's listing entries, else (a
        reader outside a batch) by paging the source from its start."""
        found = self._listed_at(doc_id)
        if found is not None or self._listing():
            return found
        for page in self.listed_documents(None):
            for doc in page:
                if doc.doc_id == doc_id:
                    return _parse_locator(next(iter(doc.entries.values()))[1])
        return None

    def _record_bytes(self, where: tuple[int, int, int, str]) -> bytes:
        """The record's bytes; the batch's other lines of that file come in the same range
        read (kept until the next batch)."""
        line, start, end, file = where
        if line == 0:
            return self.store.get(file, max_bytes=self.max_bytes)
        if self.max_bytes is not None and end - start > self.max_bytes:
            error = InputError(file, f"a line longer than {self.max_bytes} bytes", line)
            raise InputFileError(error)
        listing = self._listing()
        if self._span[0] != id(listing) or listing is None:
            self._span = (id(listing), {})
        kept = self._span[1]
        if where not in kept:
            lines = {where}
            for entries in (listing or {}).values():
                for entry in entries.values():
                    other = _parse_locator(entry[1] if len(entry) > 1 else None)
                    if other is not None and other[3] == file and other[0]:
                        lines.add(other)
            lo, hi = min(w[1] for w in lines), max(w[2] for w in lines)
            if hi - lo > SPAN_BYTES or lo > start or hi < end:
                lines, lo, hi = {where}, start, end
            data = self.store.get_range(file, lo, hi)
            kept.clear()
            kept.update({w: data[w[1] - lo : w[2] - lo] for w in lines})
        return kept[where]

    def document_files(self, doc_id: str) -> dict[str, bytes]:
        """The layout files of a document (``layout_files``), converted once for the keys a
        unit asks; KeyError when the source has no such document, InputFileError when its
        record gives none (naming file, line and field)."""
        files = self._docs.get(doc_id)
        if files is not None:
            self._docs.move_to_end(doc_id)
            return files
        where = self._locate(doc_id)
        if where is None:
            raise KeyError(doc_id)
        line, _, _, file = where
        try:
            data = self._record_bytes(where)
        except KeyError:
            error = InputError(file, "the producer file is gone", line or None)
            raise InputFileError(error) from None
        options = self.options()
        got: Iterable[Converted | InputError] = (
            convert_line(self.format, data, file, line, self.producer, options)
            if line
            else convert_file(self.format, data, file, self.producer, options)
        )
        items = list(got)
        docs = [item for item in items if isinstance(item, Converted)]
        duplicate = _DUPLICATE.match(doc_id)
        base = f"{file_stem(file)}-{line}" if line else file_stem(file)
        if duplicate is not None and duplicate["base"] == base and docs:
            k = int(duplicate["k"] or 0)
            if k < len(docs):
                raise InputFileError(_duplicate_error(docs[k]))
        for item in docs:
            # Only the documents this record is listed for (a later record of the same id is
            # listed under a name of its own, and must not stand for the earlier one).
            if item.doc_id == doc_id or self._listed_at(item.doc_id) == where:
                self._keep(item.doc_id, self._layout(item))
        if doc_id in self._docs:
            return self._docs[doc_id]
        errors = [item for item in items if isinstance(item, InputError)]
        if errors:
            raise InputFileError(errors[0])
        raise InputFileError(
            InputError(file, f"the record no longer gives document {doc_id!r}", line or None)
        )

    def _listed_at(self, doc_id: str) -> tuple[int, int, int, str] | None:
        """Where the batch's listing locates a document (None: it does not list it)."""
        for entry in ((self._listing() or {}).get(doc_id) or {}).values():
            found = _parse_locator(entry[1] if len(entry) > 1 else None)
            if found is not None:
                return found
        return None

    @staticmethod
    def _layout(item: Converted) -> dict[str, bytes]:
        """What ``groundswell import`` writes of a document: a file sent to the provider (a
        PDF) with its page-citing quotations bound where they are on those pages."""
        if item.source is not None:
            from groundswell.shared.formats.pages import bind_pages

            bind_pages(item)
        return layout_files(item)

    def _keep(self, doc_id: str, files: dict[str, bytes]) -> None:
        old = self._docs.pop(doc_id, None)
        self._docs_bytes += sum(map(len, files.values())) - sum(map(len, (old or {}).values()))
        self._docs[doc_id] = files
        while self._docs_bytes > CONVERTED_BYTES and len(self._docs) > 1:
            _, dropped = self._docs.popitem(last=False)
            self._docs_bytes -= sum(map(len, dropped.values()))

    # -- the store -------------------------------------------------------------------------

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        if key == SCHEMA_KEY and self.declared.schema_ is not None:
            try:
                return self.declared.schema_bytes(self.store)
            except KeyError:
                raise KeyError(key) from None
        doc_id = _virtual(key)
        if doc_id is None:
            return self.store.get(key, max_bytes=max_bytes)
        data = self.document_files(doc_id).get(key)
        if data is None:
            raise KeyError(key)
        if max_bytes is not None and len(data) > max_bytes:
            raise StorageRefused(f"{key}: {len(data)} bytes, over the limit of {max_bytes}")
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes:
        if _virtual(key) is None:
            return self.store.get_range(key, start, end)
        return self.get(key)[start:end]

    def put(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        return self.store.put(key, data, create_only=create_only)

    def exists(self, key: str) -> bool:
        try:
            self.get(key) if _virtual(key) is not None else None
        except (KeyError, InputFileError):
            return False
        return True if _virtual(key) is not None else self.store.exists(key)

    def head(self, key: str) -> ObjectInfo | None:
        return self.store.head(key)

    def delete(self, key: str) -> None:
        self.store.delete(key)

    def delete_many(self, keys: Iterable[str]) -> int:
        return self.store.delete_many(keys)

    def list_pages(self, prefix: str, **options: Any) -> Iterator[list[ObjectInfo]]:
        """The store's listing; a document's own source files (``documents/<id>.``, which
        a reader of the run lists to find a PDF's) are the source's."""
        doc_id = prefix[len(DOCUMENTS) : -1] if prefix.startswith(DOCUMENTS) else ""
        if not prefix.endswith(".") or not doc_id or "/" in doc_id:
            return self.store.list_pages(prefix, **options)
        try:
            files = self.document_files(doc_id)
        except (KeyError, InputFileError):
            files = {}
        found = [ObjectInfo(k, len(v), "") for k, v in files.items() if k.startswith(prefix)]
        return iter([found] if found else [])

    def drop_snapshot(self, prefix: str, snapshot: str) -> None:
        drop = getattr(self.store, "drop_snapshot", None)
        if drop is not None:
            drop(prefix, snapshot)


def open_corpus(
    store: ObjectStore,
    fmt: str | None = None,
    *,
    listing: Callable[[], dict[str, dict[str, list[Any]]] | None] | None = None,
    max_bytes: int | None = None,
    page_size: int = 1000,
) -> ObjectStore:
    """The corpus as a run reads it: ``store`` itself for the native layout, else a
    :class:`ProducerCorpus` over it (``fmt``, or the format its ``corpus.yaml`` declares).
    InputFileError when its corpus.yaml is bad."""
    declared = read_corpus_file(store)
    if fmt is not None:
        declared = (declared or CorpusFile()).model_copy(update={"format": fmt})
    if declared is None or declared.format is None:
        return store
    return ProducerCorpus(
        store, declared, listing=listing, max_bytes=max_bytes, page_size=page_size
    )


__all__ = ["ProducerCorpus", "open_corpus"]
