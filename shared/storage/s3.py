"""S3 through boto3, for AWS and S3-compatible servers (MinIO, Ceph, moto's server).

Settings follow reference/celery-notes.md 3.1: path-style addressing, checksums only when
required (botocore >= 1.36 otherwise sends headers many non-AWS servers reject), standard
retries, I/O timeouts, paginated listing and ``If-None-Match`` create-once puts.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    IncompleteReadError,
    ReadTimeoutError,
    ResponseStreamingError,
)
from urllib3.exceptions import ProtocolError

from groundswell.shared.storage.base import ObjectInfo, StorageError, StorageRefused

if TYPE_CHECKING:
    from groundswell.shared.settings import Settings

_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}
# Errors a retry cannot fix: the run or the input that needs the object fails, saying why.
_REFUSED = {
    "NoSuchBucket": "no such bucket",
    "AccessDenied": "access denied",
    "AllAccessDisabled": "access disabled",
    "InvalidAccessKeyId": "unknown access key",
    "SignatureDoesNotMatch": "wrong secret key",
    "InvalidBucketName": "invalid bucket name",
    "KeyTooLongError": "key too long",
    "InvalidObjectName": "invalid key",
    "PermanentRedirect": "the bucket is in another region or endpoint",
    "AuthorizationHeaderMalformed": "credentials for another region",
}
# A body that ends before its length (connection dropped, proxy cut it, read timeout).
_CUT_OFF = (
    ResponseStreamingError,
    IncompleteReadError,
    ReadTimeoutError,
    ConnectionClosedError,
    ProtocolError,
)
READ_ATTEMPTS = 5

# One client per process and configuration: clients are thread-safe but must be made after fork.
_clients: dict[tuple, object] = {}


def _client(settings: Settings):
    key = (
        os.getpid(),
        settings.s3_endpoint_url,
        settings.s3_region,
        settings.s3_access_key_id,
        settings.s3_addressing_style,
    )
    client = _clients.get(key)
    if client is None:
        secret = settings.s3_secret_access_key
        client = boto3.session.Session().client(
            "s3",
            endpoint_url=settings.s3_endpoint_url,
            region_name=settings.s3_region,
            aws_access_key_id=settings.s3_access_key_id,
            aws_secret_access_key=secret.get_secret_value() if secret else None,
            config=Config(
                s3={"addressing_style": settings.s3_addressing_style},
                retries={"mode": "standard", "max_attempts": settings.s3_max_attempts},
                connect_timeout=settings.s3_connect_timeout,
                read_timeout=settings.s3_read_timeout,
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
                max_pool_connections=32,
            ),
        )
        client.meta.events.register("before-parse.s3.ListObjectsV2", _lean_listing)
        _clients[key] = client
    return client


_pools: dict[int, ThreadPoolExecutor] = {}


def _read_ahead(pages: Iterator[list[ObjectInfo]]) -> Iterator[list[ObjectInfo]]:
    """``pages``, each next one fetched on a thread as soon as this one is handed out (one
    outstanding fetch at a time: a generator runs in one thread at once)."""
    pool = _pools.get(os.getpid())
    if pool is None:  # threads do not survive a fork: one pool per process
        pool = _pools[os.getpid()] = ThreadPoolExecutor(8, thread_name_prefix="s3-list")
    coming = pool.submit(next, pages, None)
    while True:
        page = coming.result()
        if page is None:
            return
        coming = pool.submit(next, pages, None)
        yield page


# Set while :meth:`S3Store.list_pages` lists: its pages are parsed by :func:`lean_listing`.
_LEAN: ContextVar[bool] = ContextVar("groundswell_lean_listing", default=False)


def lean_listing(body: bytes) -> dict[str, Any]:
    """A ListObjectsV2 result as botocore parses it, keeping what a listing reads: each
    object's Key, Size and ETag, and the page's IsTruncated, NextContinuationToken,
    KeyCount and EncodingType (botocore then URL-decodes the keys as usual). The same
    expat tree botocore builds, without its generic walk over the output shape (and a
    date parse per key): about a twentieth of its time. Raises on anything unexpected."""
    parser = ET.XMLParser(target=ET.TreeBuilder(), encoding="utf-8")
    parser.feed(body)
    root = parser.close()
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    if root.tag != f"{ns}ListBucketResult":
        raise ValueError(f"not a listing: {root.tag}")
    contents = ns + "Contents"
    names = {ns + n: n for n in ("Key", "Size", "ETag")}
    out: dict[str, Any] = {}
    objects: list[dict[str, Any]] = []
    for child in root:
        if child.tag == contents:
            item = {names[e.tag]: e.text or "" for e in child if e.tag in names}
            item["Size"] = int(item["Size"])
            if "Key" not in item:
                raise ValueError("an object without a key")
            objects.append(item)
        elif child.tag == ns + "IsTruncated":
            out["IsTruncated"] = (child.text or "").strip() == "true"
        elif child.tag == ns + "KeyCount":
            out["KeyCount"] = int(child.text or 0)
        elif child.tag in (ns + "NextContinuationToken", ns + "EncodingType"):
            out[child.tag[len(ns) :]] = child.text or ""
        elif child.tag == ns + "CommonPrefixes":
            raise ValueError("a delimited listing")  # not one list_pages asks for
    if objects:
        out["Contents"] = objects
    return out


def _lean_listing(response_dict: dict[str, Any], customized_response_dict: dict, **_: Any):
    """botocore's ``before-parse`` hook: a page :meth:`S3Store.list_pages` asked for is
    parsed by :func:`lean_listing` and its body emptied, so botocore's parser has nothing
    left to walk. Anything else (another caller's listing, an error, a body the lean parse
    refuses) is left to botocore as it is."""
    body = response_dict.get("body")
    if not _LEAN.get() or response_dict.get("status_code") != 200 or not isinstance(body, bytes):
        return
    try:
        parsed = lean_listing(body)
    except (ET.ParseError, ValueError, KeyError, TypeError):
        return
    customized_response_dict.update(parsed)
    response_dict["body"] = b""


class S3Store:
    def __init__(self, url: str, settings: Settings) -> None:
        rest = url[len("s3://") :]
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise StorageError(f"invalid S3 URL {url!r}: expected s3://bucket[/prefix]")
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}".rstrip("/")
        self._settings = settings

    @property
    def client(self):
        return _client(self._settings)

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _fail(self, what: str, key: str, exc: ClientError) -> Exception:
        code = exc.response.get("Error", {}).get("Code")
        if code in _REFUSED:
            return StorageRefused(f"{what} {self.url}/{key}: {code} ({_REFUSED[code]})")
        return StorageError(f"{what} {self.url}/{key}: {exc}")

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes; a body cut off on the way (or shorter than its length) is
        read again, whole, with a short backoff, before the error is raised as transient."""
        return self._read(key, max_bytes, {})

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` by a ranged GET (an empty range past the end is b"")."""
        if end <= start:
            return b""
        return self._read(key, None, {"Range": f"bytes={start}-{end - 1}"})

    def _read(self, key: str, max_bytes: int | None, extra: dict[str, str]) -> bytes:
        delay = 0.1
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                response = self.client.get_object(Bucket=self.bucket, Key=self._key(key), **extra)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code in _NOT_FOUND:
                    raise KeyError(key) from None
                if code == "InvalidRange" and extra:  # a range that starts past the end
                    return b""
                raise self._fail("GET", key, exc) from exc
            body = response["Body"]
            expected = response.get("ContentLength")
            if max_bytes is not None and expected is not None and int(expected) > max_bytes:
                body.close()
                raise StorageRefused(f"{key}: {expected} bytes, over the limit of {max_bytes}")
            try:
                data = body.read()
                if expected is not None and len(data) != int(expected):
                    raise ValueError(f"{len(data)} of {expected} bytes")
                return data
            except (*_CUT_OFF, ValueError) as exc:
                if attempt == READ_ATTEMPTS:
                    raise StorageError(f"GET {self.url}/{key}: body cut off: {exc}") from exc
                time.sleep(delay)
                delay = min(2 * delay, 2.0)
            finally:
                body.close()
        raise AssertionError("unreachable")

    def put(self, key: str, data: bytes, *, create_only: bool = False) -> bool:
        extra = {"IfNoneMatch": "*"} if create_only else {}
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if create_only and code in {"PreconditionFailed", "412", "ConditionalRequestConflict"}:
                return False
            raise self._fail("PUT", key, exc) from exc
        return True

    def head(self, key: str) -> ObjectInfo | None:
        try:
            response = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _NOT_FOUND:
                return None
            raise self._fail("HEAD", key, exc) from exc
        return ObjectInfo(key, int(response["ContentLength"]), response.get("ETag", "").strip('"'))

    def exists(self, key: str) -> bool:
        return self.head(key) is not None

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def delete_many(self, keys: Iterable[str]) -> int:
        """Delete keys, a thousand per request (S3's DeleteObjects limit)."""
        count = 0
        batch: list[str] = []

        def flush() -> None:
            try:
                self.client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": self._key(k)} for k in batch], "Quiet": True},
                )
            except ClientError as exc:
                raise self._fail("DELETE", "", exc) from exc
            batch.clear()

        for key in keys:
            batch.append(key)
            count += 1
            if len(batch) >= 1000:
                flush()
        if batch:
            flush()
        return count

    def list_pages(
        self,
        prefix: str,
        *,
        start_after: str | None = None,
        page_size: int = 1000,
        snapshot: str | None = None,
    ) -> Iterator[list[ObjectInfo]]:
        """S3 lists by pages already: nothing to snapshot. A pass through a listing (one
        that names a ``snapshot``: planning's, which reads every page) has its next page
        fetched on a thread while the caller works on this one, so the listing's round
        trips overlap the caller's work; each page is still asked for once, and only once
        the page before it is taken (the last page asks for nothing more)."""
        pages = self._pages(prefix, start_after, page_size)
        return _read_ahead(pages) if snapshot else pages

    def _pages(
        self, prefix: str, start_after: str | None, page_size: int
    ) -> Iterator[list[ObjectInfo]]:
        kwargs: dict[str, Any] = {
            "Bucket": self.bucket,
            "Prefix": self._key(prefix),
            "MaxKeys": page_size,
        }
        if start_after:
            kwargs["StartAfter"] = self._key(start_after)
        cut = len(self.prefix)
        while True:
            lean = _LEAN.set(True)
            try:
                page = self.client.list_objects_v2(**kwargs)
            except ClientError as exc:
                raise self._fail("LIST", prefix, exc) from exc
            finally:
                _LEAN.reset(lean)
            items = [
                ObjectInfo(obj["Key"][cut:], int(obj["Size"]), obj.get("ETag", "").strip('"'))
                for obj in page.get("Contents", ())
            ]
            if items:
                yield items
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            if token == kwargs.get("ContinuationToken"):  # a server that would loop forever
                raise StorageError(f"LIST {self.url}/{prefix}: the same page token twice")
            kwargs["ContinuationToken"] = token
