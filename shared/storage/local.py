"""A local folder as an object store (the embedded default and the demo).

Listing is a streaming walk in UTF-8 byte order, as S3 lists: each directory's entries are
sorted on their own (a directory sorts as ``name/``), so memory is one directory, not the
tree. A folder of millions of files in one directory would still be read whole on every
page, so a caller that pages through a large listing once (planning a run, finalizing it)
names a ``snapshot``: the listing is then walked once, sorted externally into a file, and
every page after that is read from the file from a binary search on ``start_after``.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import heapq
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from groundswell.shared.storage.base import ObjectInfo, StorageError, StorageRefused

# Names sorted in memory at once while a snapshot is built (the rest goes through temp files).
SNAPSHOT_SORT_CHUNK = 50_000
SNAPSHOT_MAX_AGE_SECONDS = 7 * 24 * 3600
_TMP = ".tmp-"


def _snapshot_dir() -> Path:
    """This user's private folder of snapshots (0700, made here): a shared, predictable
    folder would let another user read the listings or plant a snapshot a run then plans
    from. Under the temporary folder, not $XDG_RUNTIME_DIR: a snapshot of a million keys is
    ~100 MB, too much for that small RAM-backed folder."""
    uid = os.getuid()
    folder = Path(tempfile.gettempdir()) / f"groundswell-listings-{uid}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077:
        raise StorageRefused(
            f"{folder}: the listing snapshots' folder must be a folder of uid {uid} with mode "
            f"0700 (it is {_kind(st.st_mode) if not stat.S_ISDIR(st.st_mode) else 'a folder'} "
            f"of uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}): remove it"
        )
    return folder


def _etag(st: os.stat_result) -> str:
    """A file's change hint: its mtime, inode and size (a rerun reuses a unit whose inputs'
    hints are unchanged; a file replaced by a rename gets a new inode even at the same mtime)."""
    return f"{st.st_mtime_ns:x}-{st.st_ino:x}-{st.st_size:x}"


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.url = str(self.root)

    def _path(self, key: str) -> Path:
        if not key or key.startswith("/") or ".." in key.split("/") or "\0" in key:
            raise StorageError(f"invalid object key {key!r}")
        return self.root / key

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The file's bytes. Only regular files inside the root are read: a symbolic link
        (anywhere on the way) or a FIFO, device or socket is refused, naming the key."""
        fd, size = self._open_file(key)
        with os.fdopen(fd, "rb") as fh:
            if max_bytes is not None and size > max_bytes:
                raise StorageRefused(f"{key}: {size} bytes, over the limit of {max_bytes}")
            return fh.read()

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file, refused as :meth:`get` refuses it."""
        fd, _ = self._open_file(key)
        try:
            return os.pread(fd, max(0, end - start), start) if end > start else b""
        finally:
            os.close(fd)

    def _open_file(self, key: str) -> tuple[int, int]:
        """An open descriptor of the key's regular file inside the root, and its size."""
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StorageRefused(f"{key}: a symbolic link, not a file") from None
            raise
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise KeyError(key)
            if not stat.S_ISREG(st.st_mode):
                raise StorageRefused(f"{key}: not a regular file ({_kind(st.st_mode)})")
            if self._outside(path.parent):
                raise StorageRefused(f"{key}: reached through a symbolic link to a folder")
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size

    def _outside(self, folder: Path) -> bool:
        """Whether ``folder`` (or one on the way to it) is a link that leads out of the root."""
        real = os.path.realpath(folder)
        return real != str(self.root) and not real.startswith(str(self.root) + os.sep)

    def _listing_top(self, prefix: str) -> tuple[Path, str]:
        """The folder a listing of ``prefix`` walks, and its key prefix. Refused as keys are
        (``..``, absolute, NUL), and when the folder is a link out of the root: a linked
        ``claims/`` would list another folder's names into the run's errors."""
        if prefix.startswith("/") or ".." in prefix.split("/") or "\0" in prefix:
            raise StorageRefused(f"invalid listing prefix {prefix[:200]!r}")
        base = prefix.rpartition("/")[0]
        top = self.root / base if base else self.root
        if base and self._outside(top):
            raise StorageRefused(
                f"{base}/: a symbolic link to a folder outside the store, not listed"
            )
        return top, base + "/" if base else ""

    def put(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_TMP)
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
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ObjectInfo(key, st.st_size, _etag(st))

    def delete(self, key: str) -> None:
        path = self._path(key)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        # Folders exist only for their keys: remove the ones this leaves empty.
        parent = path.parent
        while parent != self.root:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def delete_many(self, keys: Iterable[str]) -> int:
        count = 0
        for key in keys:
            self.delete(key)
            count += 1
        return count

    # -- listing ------------------------------------------------------------------------

    def list_pages(
        self,
        prefix: str,
        *,
        start_after: str | None = None,
        page_size: int = 1000,
        snapshot: str | None = None,
    ) -> Iterator[list[ObjectInfo]]:
        infos = (
            self._snapshot_infos(prefix, start_after, snapshot)
            if snapshot
            else self._walk_infos(prefix, start_after)
        )
        page: list[ObjectInfo] = []
        for info in infos:
            page.append(info)
            if len(page) >= page_size:
                yield page
                page = []
        if page:
            yield page

    def _walk_infos(self, prefix: str, start_after: str | None) -> Iterator[ObjectInfo]:
        after = start_after.encode() if start_after is not None else None
        top, rel = self._listing_top(prefix)
        if not top.is_dir():
            return
        for key, st in _walk_sorted(top, rel, prefix.encode(), after):
            yield ObjectInfo(key, st.st_size, _etag(st))

    # A snapshot file holds one line per key: ``key \t size \t etag``, sorted by key bytes.

    def _snapshot_path(self, prefix: str, snapshot: str) -> Path:
        digest = hashlib.sha256(f"{self.root}\0{prefix}\0{snapshot}".encode()).hexdigest()[:32]
        return _snapshot_dir() / f"{digest}.lst"

    def drop_snapshot(self, prefix: str, snapshot: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._snapshot_path(prefix, snapshot).unlink()

    def _snapshot_infos(
        self, prefix: str, start_after: str | None, snapshot: str
    ) -> Iterator[ObjectInfo]:
        self._listing_top(prefix)  # refused before a snapshot of it is read
        path = self._snapshot_path(prefix, snapshot)
        if not path.exists():
            self._build_snapshot(prefix, path)
        with path.open("rb") as fh:
            if start_after is not None:
                _seek_after(fh, start_after.encode())
            for line in fh:
                key, size, etag = line.rstrip(b"\n").split(b"\t")
                yield ObjectInfo(key.decode(), int(size), etag.decode())

    def _build_snapshot(self, prefix: str, path: Path) -> None:
        """Walk once and sort externally: memory is one sort chunk, whatever the folder."""
        _prune_old_snapshots(path.parent)
        chunks: list[str] = []
        buffer: list[bytes] = []

        def spill() -> None:
            buffer.sort()
            fd, name = tempfile.mkstemp(dir=path.parent, prefix=_TMP)
            with os.fdopen(fd, "wb") as fh:
                fh.writelines(buffer)
            chunks.append(name)
            buffer.clear()

        top, rel = self._listing_top(prefix)
        try:
            for key, st in _walk_any_order(top, rel, prefix):
                etag = _etag(st)
                buffer.append(f"{key}\t{st.st_size}\t{etag}\n".encode())
                if len(buffer) >= SNAPSHOT_SORT_CHUNK:
                    spill()
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_TMP)
            with os.fdopen(fd, "wb") as out:
                if not chunks:
                    buffer.sort()
                    out.writelines(buffer)
                else:
                    spill()
                    files = [open(name, "rb") for name in chunks]  # noqa: SIM115
                    try:
                        # Lines compare as bytes; "\t" sorts below every character of a key.
                        out.writelines(heapq.merge(*files))
                    finally:
                        for fh in files:
                            fh.close()
            os.replace(tmp, path)  # complete or absent: a crash rebuilds it
        finally:
            for name in chunks:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _walk_sorted(
    directory: Path, rel: str, prefix: bytes, after: bytes | None
) -> Iterator[tuple[str, os.stat_result]]:
    """Files under ``directory`` (keys ``rel + name``) in key byte order, pruning by range."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return
    items = []
    for entry in entries:
        if entry.name.startswith(_TMP):
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        items.append(((rel + entry.name + ("/" if is_dir else "")).encode(), is_dir, entry))
    items.sort(key=lambda item: item[0])
    for key, is_dir, entry in items:
        if is_dir:
            # Skip a directory whose keys all sort at or before ``after``, or outside the prefix.
            if after is not None and key < after and not after.startswith(key):
                continue
            if not (key.startswith(prefix) or prefix.startswith(key)):
                continue
            yield from _walk_sorted(Path(entry.path), key.decode(), prefix, after)
            continue
        if not key.startswith(prefix) or (after is not None and key <= after):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        yield key.decode(), st


def _walk_any_order(directory: Path, rel: str, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
    try:
        entries = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return
    with entries:
        for entry in entries:
            if entry.name.startswith(_TMP):
                continue
            key = rel + entry.name
            if entry.is_dir(follow_symlinks=False):
                if (key + "/").startswith(prefix) or prefix.startswith(key + "/"):
                    yield from _walk_any_order(Path(entry.path), key + "/", prefix)
            elif key.startswith(prefix):
                try:
                    yield key, entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue


def _seek_after(fh, key: bytes) -> None:
    """Position ``fh`` at the first line whose key sorts after ``key`` (a binary search)."""
    fh.seek(0, os.SEEK_END)
    lo, hi = 0, fh.tell()
    # ``lo`` is always a line start with every line before it <= key; the answer lies within
    # a line of ``hi`` once the search ends, so the scan below reads a line or two.
    while lo < hi:
        mid = (lo + hi) // 2
        if mid > lo:
            fh.seek(mid - 1)
            fh.readline()  # to the first line that starts at or after mid
        else:
            fh.seek(mid)
        start = fh.tell()
        line = fh.readline()
        if not line or start >= hi:
            hi = mid
        elif line.split(b"\t", 1)[0] <= key:
            lo = fh.tell()
        else:
            hi = mid
    fh.seek(lo)
    while True:
        pos = fh.tell()
        line = fh.readline()
        if not line or line.split(b"\t", 1)[0] > key:
            fh.seek(pos)
            return


def _prune_old_snapshots(folder: Path) -> None:
    cutoff = time.time() - SNAPSHOT_MAX_AGE_SECONDS
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
