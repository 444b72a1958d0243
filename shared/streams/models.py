"""A stream's boundary models: S3 event notifications as they arrive, a stream, a window.

A notification is the AWS event JSON (``Records[]``), which MinIO, Ceph RGW and SeaweedFS
also emit, possibly wrapped in an SNS envelope; a record that cannot be read is an error
naming the notification, the record's place and its field, and fails only that record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote_plus

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from groundswell.shared.corpus import InputError
from groundswell.shared.runs.models import RunSpec

CREATED, REMOVED = "created", "removed"


def stream_id(corpus: str, policy_ref: str) -> str:
    """One standing stream per (corpus, policy version): its id is theirs, digested."""
    return "st-" + hashlib.sha256(f"{corpus}\0{policy_ref}".encode()).hexdigest()[:16]


def sequencer_newer(a: str, b: str) -> bool:
    """Whether sequencer ``a`` is after ``b``: hex strings compared at equal length, the
    shorter left-padded with zeros (AWS: sequencers of one key order its events; their
    lengths may differ)."""
    width = max(len(a), len(b))
    return a.upper().rjust(width, "0") > b.upper().rjust(width, "0")


@dataclass(frozen=True, slots=True)
class S3Event:
    """One record of a notification: what happened to which object, and when."""

    action: str  # CREATED or REMOVED
    bucket: str
    key: str  # decoded (the notification URL-encodes it)
    size: int | None
    etag: str | None
    sequencer: str | None
    time: float  # the event's time (eventTime), else when it was received

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "bucket": self.bucket,
            "key": self.key,
            "size": self.size,
            "etag": self.etag,
            "sequencer": self.sequencer,
            "time": self.time,
        }


class _Object(BaseModel):
    model_config = ConfigDict(extra="allow")
    key: str = Field(min_length=1, max_length=4096)
    size: int | None = Field(default=None, ge=0)
    eTag: str | None = Field(default=None, max_length=200)
    sequencer: str | None = Field(default=None, max_length=200, pattern=r"^[0-9A-Fa-f]*$")


class _Bucket(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1, max_length=255)


class _S3(BaseModel):
    model_config = ConfigDict(extra="allow")
    bucket: _Bucket
    object: _Object


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")
    eventName: str = Field(max_length=200)
    eventTime: str | None = None
    s3: _S3

    @field_validator("eventName")
    @classmethod
    def _name(cls, value: str) -> str:
        return value.removeprefix("s3:")  # MinIO's names carry it


def parse_notification(
    body: bytes | str | dict[str, Any], name: str, received: float
) -> tuple[list[S3Event], list[InputError], int]:
    """The object events of one notification, the records that could not be read (each an
    error naming ``name``, the record's number from 1, and its field), and how many records
    were of no concern (other event names, ``s3:TestEvent``)."""
    try:
        data = json.loads(body) if isinstance(body, bytes | str) else body
        if isinstance(data, dict) and data.get("Type") == "Notification" and "Message" in data:
            data = json.loads(data["Message"])  # delivered through SNS
    except (ValueError, TypeError) as exc:
        return [], [InputError(name, f"not JSON: {exc}")], 0
    if not isinstance(data, dict):
        return [], [InputError(name, "not a JSON object")], 0
    if "Records" not in data:
        return [], [], 1  # s3:TestEvent, sent when notifications are configured
    records = data["Records"]
    if not isinstance(records, list):
        return [], [InputError(name, "not a list", field="Records")], 0
    events, errors, other = [], [], 0
    for number, raw in enumerate(records, 1):
        try:
            record = _Record.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            errors.append(InputError(name, first["msg"], number, field))
            continue
        if record.eventName.startswith("ObjectCreated:"):
            action = CREATED
        elif record.eventName.startswith("ObjectRemoved:"):
            action = REMOVED
        else:
            other += 1
            continue
        obj = record.s3.object
        etag = obj.eTag.strip('"') if obj.eTag else None
        events.append(
            S3Event(
                action,
                record.s3.bucket.name,
                unquote_plus(obj.key),
                obj.size,
                etag or None,
                obj.sequencer or None,
                _time(record.eventTime, received),
            )
        )
    return events, errors, other


def _time(value: str | None, received: float) -> float:
    try:
        stamp = datetime.fromisoformat((value or "").replace("Z", "+00:00")).timestamp()
    except ValueError:
        return received
    return min(stamp, received)  # a clock ahead of ours would hide lag


class StreamSpec(BaseModel):
    """What a caller asks for: follow a corpus (an S3 prefix) under a policy."""

    model_config = ConfigDict(extra="forbid")
    corpus: str = Field(description="The corpus followed: s3://bucket/prefix.", max_length=2000)
    policy: str = Field(default="default", description="NAME, NAME@VERSION or NAME@latest.")

    @model_validator(mode="after")
    def _as_a_run_has_them(self) -> StreamSpec:
        # The corpus and policy as a run checks them (its windows are runs), and an S3 one.
        try:
            run = RunSpec(corpus=self.corpus, policy=self.policy)
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"]) from None
        if not run.corpus.startswith("s3://"):
            raise ValueError("a followed corpus is an S3 prefix: s3://bucket/prefix")
        self.corpus, self.policy = run.corpus, run.policy
        return self


class StreamRecord(BaseModel):
    """A standing stream, stored at ``streams/<id>/stream.json`` of the output store."""

    id: str
    corpus: str
    policy: str  # NAME@N: the version is fixed for the stream's life
    created_at: str
    created_by: str | None = None

    @property
    def bucket(self) -> str:
        return self.corpus[5:].split("/", 1)[0]

    @property
    def prefix(self) -> str:
        """The corpus's prefix in its bucket, with its slash ('' for a whole bucket)."""
        rest = self.corpus[5:].split("/", 1)
        return rest[1].rstrip("/") + "/" if len(rest) == 2 and rest[1] else ""

    def relative(self, bucket: str, key: str) -> str | None:
        """The corpus key of an object of this corpus, None for another object."""
        if bucket != self.bucket or not key.startswith(self.prefix):
            return None
        return key[len(self.prefix) :]


class Window(BaseModel):
    """One window of a stream: the documents it checked, as one run of the whole corpus
    (``streams/<id>/windows/<number>.json``)."""

    stream: str
    number: int
    run_id: str
    documents: int  # named as changed (0 for a listing-compared window: the first one)
    changed: bool = True  # a --changed run; False: every document compared by listing
    opened_at: float
    closed_at: float
    # Documents checked without all their inputs, after the grace period: the first 100,
    # with what they lacked, and how many there were.
    incomplete: list[dict[str, Any]] = Field(default_factory=list)
    incomplete_total: int = 0
    state: str = "running"
    merkle_root: str | None = None
    units: int | None = None
