"""The object store interface every backend implements (``local.py``, ``s3.py``); the backends
import only this module, and ``open.py`` picks one from a URL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol


class StorageError(RuntimeError):
    """A storage operation failed for a reason that may pass (network, 5xx): retried."""


class StorageRefused(RuntimeError):
    """A storage operation that retrying cannot fix: no such bucket, access denied, an
    invalid key, an object that is a link or a special file. Never retried; the input or
    the run that needs it fails, saying why."""


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """Listing metadata. ``etag`` is not a content hash (multipart uploads), only a change hint."""

    key: str
    size: int
    etag: str


class ObjectStore(Protocol):
    url: str

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes; ``KeyError`` when it does not exist; ``StorageRefused`` when
        it is larger than ``max_bytes`` (checked before reading the body)."""

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (fewer past its end); ``KeyError`` when it
        does not exist. A producer file is read so, a range at a time, where it lies."""

    def put(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        """Write ``data``. With ``create_only``, return False (and write nothing) if it exists."""

    def exists(self, key: str) -> bool: ...

    def head(self, key: str) -> ObjectInfo | None: ...

    def delete(self, key: str) -> None: ...

    def delete_many(self, keys: Iterable[str]) -> int:
        """Delete many keys (missing ones are fine); return how many were asked."""

    def list_pages(
        self,
        prefix: str,
        *,
        start_after: str | None = None,
        page_size: int = 1000,
        snapshot: str | None = None,
    ) -> Iterator[list[ObjectInfo]]:
        """Keys under ``prefix`` in ascending UTF-8 byte order, one page at a time.

        ``snapshot`` names one pass of a caller through a large listing (planning run X):
        a store that cannot page cheaply (a local folder) lists once for it and serves
        every later page of that pass from its copy.
        """


def drop_snapshot(store: ObjectStore, prefix: str, snapshot: str) -> None:
    """Forget a listing snapshot once its pass is over (a no-op where there is none)."""
    drop = getattr(store, "drop_snapshot", None)
    if drop is not None:
        drop(prefix, snapshot)


def join_url(url: str, *parts: str) -> str:
    """Join path parts onto a store URL (a folder or s3://bucket/prefix)."""
    out = url.rstrip("/")
    for part in parts:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}"
    return out
