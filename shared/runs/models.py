"""Run records and run states, the pydantic models at the run boundary."""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from groundswell.shared.policies import parse_ref

ReprocessOnly = Literal["missing", "failed", "all"]
# A producer format read in place (shared/formats/source.py); None: the corpus's own
# corpus.yaml says, else the native layout.
CorpusFormat = Literal["langextract", "anthropic", "bedrock", "azure-di", "documentai", "mapped"]
RunStateName = Literal[
    "queued",
    "planning",
    "running",
    "finalizing",
    "succeeded",
    "partially_failed",
    "failed",
    "cancelled",
]
TERMINAL_STATES = frozenset({"succeeded", "partially_failed", "failed", "cancelled"})


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime | None) -> str | None:
    return ts.isoformat().replace("+00:00", "Z") if ts else None


def timestamp(iso_time: str | None) -> float:
    """Seconds since the epoch of an ISO 8601 time (0 when it is missing or malformed)."""
    try:
        return datetime.fromisoformat((iso_time or "").replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def listed_at(run_id: str, created_at: str | None) -> float:
    """A run's place in the run list: the time its id was made, to the millisecond (the id's
    own order, whichever process lists it), else its creation time."""
    stamp, _, suffix = run_id.partition("-")
    try:
        at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        return at.timestamp() + int(suffix[:3], 16) / 1000
    except ValueError:
        return timestamp(created_at)


def new_run_id(now: datetime | None = None) -> str:
    """Time-ordered and readable: ``20261129T215000Z-1f43f9a1c``. The suffix starts with the
    millisecond (three hex digits), so runs made in the same second still sort in order when
    they are listed from storage alone."""
    now = now or utcnow()
    return f"{now:%Y%m%dT%H%M%SZ}-{now.microsecond // 1000:03x}{secrets.token_hex(3)}"


class RunNotFound(LookupError):
    """No run of that id (in Redis, nor in storage)."""


class RunNotFinished(RuntimeError):
    """What was asked of a run (its summary, report, diff) exists once it has finished."""


class ChangedListMissing(ValueError):
    """A --changed run's list of keys, named by its corpus key, cannot be read."""


class RunSpec(BaseModel):
    """What a caller asks for: a corpus under a policy."""

    model_config = ConfigDict(extra="forbid")

    corpus: str = Field(description="A corpus folder or s3://bucket/prefix.")
    policy: str = Field(default="default", description="NAME, NAME@VERSION or NAME@latest.")
    only: ReprocessOnly = Field(
        default="missing",
        description="missing: compute what has no receipt under this policy; failed: also "
        "recompute units whose receipt records a failure; all: recompute everything.",
    )
    dry_run: bool = Field(
        default=False, description="Report what would be computed and why; compute nothing."
    )
    verify_inputs: bool = Field(
        default=False,
        description="Read and hash every input, even one listed (size, ETag or mtime) as in the "
        "previous run, whose unit is otherwise reused without reading it.",
    )
    ledger: bool = Field(
        default=False,
        description="Also load the run's admitted facts and grounded quotations into the claims "
        "ledger (settings.ledger_url): one ledger unit per document, after its admission.",
    )
    changed: list[str] | str | None = Field(
        default=None,
        description="Check only the documents these keys name (documents/, claims/, candidates/ "
        "or labels/ files; a list, or the corpus key of a file of keys one a line); every "
        "other document's units are reused from the corpus's latest run unread, so the run "
        "still covers the whole corpus. A line naming no corpus file is an input error.",
    )
    format: CorpusFormat | None = Field(
        default=None,
        description="Read the corpus's producer files in place in this format (default: the "
        "format its corpus.yaml declares, else the native layout).",
    )
    changed_name: str | None = Field(
        default=None,
        description="What input errors call the list of changed keys (default: its key, or "
        "'changed').",
        max_length=1000,
    )

    @field_validator("corpus")
    @classmethod
    def _corpus(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("corpus must name a folder or an s3://bucket/prefix")
        if "://" in value and not value.startswith(("s3://", "file://")):
            raise ValueError("corpus must be a folder or an s3://bucket/prefix URL")
        if value.startswith("s3://") and not value[5:].split("/", 1)[0]:
            raise ValueError("an S3 corpus needs a bucket: s3://bucket/prefix")
        if value.startswith("s3://") and {".", ".."} & set(value[5:].split("/")):
            # MinIO and SeaweedFS normalize them: s3://b/allowed/../other reads b/other.
            raise ValueError("an S3 corpus has no '.' or '..' segments: s3://bucket/prefix")
        if value.startswith("s3://"):
            return value.rstrip("/")
        # One folder, one corpus (one history, its previous_run found): however it is typed
        # (relative, file://, ./, a trailing /), it is recorded by its absolute path.
        return os.path.abspath(value.removeprefix("file://"))

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        parse_ref(value)
        return value.strip()


class RunRecord(BaseModel):
    id: str
    corpus: str
    output: str
    policy: dict[str, Any]
    engines: dict[str, Any]
    only: ReprocessOnly = "missing"
    dry_run: bool = False
    previous_run: str | None = None
    schedule: str | None = None
    state: RunStateName = "queued"
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    idempotency_key_sha256: str | None = None
    error: str | None = None
    ledger: bool = False  # load the ledger (left out of the record when off: see below)
    verify_inputs: bool = False  # read every input (left out of the record when off)
    # run --changed: how many documents it names (the list is runs/<id>/changed.json; the
    # others are reused unread), the first lines that named no corpus file and how many did
    # (left out of the record when not a --changed run).
    changed: int | None = None
    changed_errors: list[dict[str, Any]] | None = None
    changed_errors_total: int | None = None
    # The GROUNDSWELL_ALLOWED_CORPORA root the API found the corpus under (absolute): the
    # plan task checks again that the corpus still lies there before it lists (unset: a run
    # of the command line, which reads what its user names).
    allowed_under: str | None = None
    # The producer format the corpus is read in (left out of the record when not named).
    format: CorpusFormat | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # A run without the ledger is recorded (run.json, summaries) as before it existed.
        out = handler(self)
        for flag in ("ledger", "verify_inputs"):
            if not out.get(flag):
                out.pop(flag, None)
        for optional in (
            "allowed_under",
            "format",
            "changed",
            "changed_errors",
            "changed_errors_total",
        ):
            if out.get(optional) is None:
                out.pop(optional, None)
        return out

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES
