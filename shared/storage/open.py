"""The store a URL names: a local folder, or S3 (and S3-compatible servers) for ``s3://``.

The factory imports the backends, which import only ``base.py``. The S3 backend (and boto3
with it) is imported when an ``s3://`` location is opened, never for a local one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundswell.shared.storage.base import ObjectStore, StorageError
from groundswell.shared.storage.local import LocalStore

if TYPE_CHECKING:
    from groundswell.shared.settings import Settings


def open_store(url: str, settings: Settings | None = None) -> ObjectStore:
    """The store rooted at ``url``: ``s3://bucket[/prefix]`` or a local folder."""
    if url.startswith("s3://"):
        from groundswell.shared.settings import get_settings
        from groundswell.shared.storage.s3 import S3Store

        return S3Store(url, settings or get_settings())
    if url.startswith("file://"):
        url = url[len("file://") :]
    if "://" in url:
        raise StorageError(f"unsupported storage URL {url!r}: use a folder or s3://bucket/prefix")
    return LocalStore(Path(url))
