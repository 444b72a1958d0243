"""A local folder as an object store (the embedded default and the demo)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from shared.storage.base import ObjectInfo, StorageError


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.url = str(self.root)

    def _path(self, key: str) -> Path:
        if not key or key.startswith("/") or ".." in key.split("/"):
            raise StorageError(f"invalid object key {key!r}")
        return self.root / key

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise KeyError(key) from None

    def put(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if create_only:
                # link() fails if the target exists: an atomic create-once, like If-None-Match.
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    return False
                return True
            os.replace(tmp, path)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def head(self, key: str) -> ObjectInfo | None:
        try:
            st = self._path(key).stat()
        except FileNotFoundError:
            return None
        return ObjectInfo(key, st.st_size, f"{st.st_mtime_ns:x}-{st.st_size:x}")

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()

    def list_pages(
        self, prefix: str, *, start_after: str | None = None, page_size: int = 1000
    ) -> Iterator[list[ObjectInfo]]:
        # Walk only the folder that holds the prefix, then order keys by UTF-8 bytes as S3 does.
        base = prefix.rpartition("/")[0]
        top = self.root / base if base else self.root
        if not top.is_dir():
            return
        keys: list[str] = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".tmp-")]
            rel = os.path.relpath(dirpath, self.root)
            rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in filenames:
                if name.startswith(".tmp-"):
                    continue
                key = rel + name
                if key.startswith(prefix) and (
                    start_after is None or key.encode() > start_after.encode()
                ):
                    keys.append(key)
        keys.sort(key=lambda k: k.encode("utf-8"))
        page: list[ObjectInfo] = []
        for key in keys:
            info = self.head(key)
            if info is None:
                continue
            page.append(info)
            if len(page) >= page_size:
                yield page
                page = []
        if page:
            yield page
