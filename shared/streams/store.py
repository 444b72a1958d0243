"""Where a stream keeps what it knows.

Object storage (the output store) holds its durable state::

    streams/catalog/<id>.json          the stream (models.StreamRecord)
    streams/<id>/keys/<sha256>.json    per corpus key: the newest event applied (sequencer,
                                       present or removed, ETag, size)
    streams/<id>/windows/<n>.json      each window (models.Window) and the run it made

Redis holds only coordination state, bounded by the documents in flight: documents notified
and not yet in a window (``pending``), ready for the next window (``ready``), in the running
window (``inflight``), the running window's number and run, the oldest unchecked event's
time, and a lock that makes one process at a time apply events and close windows. After a
loss of Redis the documents in flight are found again by reconciliation (the corpus listing
against the latest run), and windows go on numbering from storage.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

from groundswell.shared.storage import ObjectStore
from groundswell.shared.streams.models import StreamRecord, Window

PREFIX = "gs:stream"
STREAMS = "gs:streams"  # the ids of the standing streams (a set)
CATALOG = "streams/catalog/"
LOCK_SECONDS = 120  # longer than a tick or an ingest; a crashed holder frees it by then


def catalog_key(sid: str) -> str:
    return f"{CATALOG}{sid}.json"


def window_key(sid: str, number: int) -> str:
    return f"streams/{sid}/windows/{number:08d}.json"


def key_state_key(sid: str, key: str) -> str:
    return f"streams/{sid}/keys/{hashlib.sha256(key.encode('utf-8', 'replace')).hexdigest()}.json"


class StreamStore:
    def __init__(self, r: redis.Redis, output: ObjectStore) -> None:
        self.r, self.output = r, output

    # -- durable, in storage ----------------------------------------------------------

    def save(self, record: StreamRecord) -> bool:
        """Store a new stream (create-once: False when it was there) and list it in Redis."""
        created = self.output.put(
            catalog_key(record.id), record.model_dump_json().encode(), create_only=True
        )
        self.r.sadd(STREAMS, record.id)
        return created

    def get(self, sid: str) -> StreamRecord | None:
        try:
            return StreamRecord.model_validate_json(self.output.get(catalog_key(sid)))
        except KeyError:
            return None

    def ids(self) -> list[str]:
        """The standing streams (the Redis set, rebuilt from the catalog when it is empty)."""
        ids = self.r.smembers(STREAMS)
        if not ids:
            for page in self.output.list_pages(CATALOG):
                ids |= {info.key[len(CATALOG) : -len(".json")] for info in page}
            if ids:
                self.r.sadd(STREAMS, *ids)
        return sorted(ids)

    def key_state(self, sid: str, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.output.get(key_state_key(sid, key)))
        except KeyError:
            return None

    def put_key_state(self, sid: str, state: dict[str, Any]) -> None:
        data = json.dumps(state, sort_keys=True).encode()
        self.output.put(key_state_key(sid, state["key"]), data)

    def put_window(self, window: Window) -> None:
        self.output.put(window_key(window.stream, window.number), window.model_dump_json().encode())

    def window(self, sid: str, number: int) -> Window | None:
        try:
            return Window.model_validate_json(self.output.get(window_key(sid, number)))
        except KeyError:
            return None

    def last_window_number(self, sid: str) -> int:
        """The number of the stream's last window in storage, -1 before the first."""
        last = -1
        for page in self.output.list_pages(f"streams/{sid}/windows/"):
            for info in page:
                last = max(last, int(info.key.rsplit("/", 1)[1].split(".", 1)[0]))
        return last

    # -- coordination, in Redis -------------------------------------------------------

    @contextmanager
    def lock(self, sid: str, wait: float = 60) -> Iterator[None]:
        lock = self.r.lock(f"{PREFIX}:{sid}:lock", timeout=LOCK_SECONDS, blocking_timeout=wait)
        if not lock.acquire():
            raise TimeoutError(f"stream {sid} is busy (its lock is held)")
        try:
            yield
        finally:
            # Expired: another holder may have it now, and its work is its own.
            with contextlib.suppress(redis.exceptions.LockError):
                lock.release()

    def meta(self, sid: str) -> dict[str, str]:
        return self.r.hgetall(f"{PREFIX}:{sid}")

    def set_meta(self, sid: str, **values: Any) -> None:
        self.r.hset(f"{PREFIX}:{sid}", mapping={k: str(v) for k, v in values.items()})

    def clear_meta(self, sid: str, *fields: str) -> None:
        self.r.hdel(f"{PREFIX}:{sid}", *fields)

    def count(self, sid: str, field: str, n: int = 1) -> None:
        if n:
            self.r.hincrby(f"{PREFIX}:{sid}", field, n)

    def docs(self, sid: str, which: str) -> dict[str, dict[str, Any]]:
        """The documents of ``pending``, ``ready`` or ``inflight``, with their entries."""
        raw = self.r.hgetall(f"{PREFIX}:{sid}:{which}")
        return {doc_id: json.loads(value) for doc_id, value in raw.items()}

    def doc(self, sid: str, which: str, doc_id: str) -> dict[str, Any] | None:
        value = self.r.hget(f"{PREFIX}:{sid}:{which}", doc_id)
        return json.loads(value) if value is not None else None

    def put_docs(self, sid: str, which: str, entries: dict[str, dict[str, Any]]) -> None:
        if entries:
            mapping = {d: json.dumps(e, sort_keys=True) for d, e in entries.items()}
            self.r.hset(f"{PREFIX}:{sid}:{which}", mapping=mapping)

    def drop_docs(self, sid: str, which: str, doc_ids: list[str] | None = None) -> None:
        if doc_ids is None:
            self.r.delete(f"{PREFIX}:{sid}:{which}")
        elif doc_ids:
            self.r.hdel(f"{PREFIX}:{sid}:{which}", *doc_ids)

    def sizes(self, sid: str) -> dict[str, int]:
        return {w: self.r.hlen(f"{PREFIX}:{sid}:{w}") for w in ("pending", "ready", "inflight")}
