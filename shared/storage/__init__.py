"""Object storage behind one small interface: a local folder or S3 (and S3-compatible servers).

A store is rooted at a URL (``/path/to/folder``, ``file:///path`` or ``s3://bucket/prefix``);
keys are relative to that root and use ``/``.
"""

from groundswell.shared.storage.base import (
    ObjectInfo,
    ObjectStore,
    StorageError,
    StorageRefused,
    drop_snapshot,
    join_url,
)
from groundswell.shared.storage.open import open_store

__all__ = [
    "ObjectInfo",
    "ObjectStore",
    "StorageError",
    "StorageRefused",
    "drop_snapshot",
    "join_url",
    "open_store",
]
