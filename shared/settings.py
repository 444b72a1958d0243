"""All configuration, in one typed settings class (environment prefix ``GROUNDSWELL_``)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from groundswell.shared.quick_settings import (
    ENV_FILE,
    ENV_PREFIX,
    default_cache_dir,
    default_storage_url,
)

REPO_ROOT = Path(__file__).resolve().parent.parent


class NotConfigured(RuntimeError):
    """A command needs a setting that is not set; the message names it."""


def hash_api_key(key: str) -> str:
    """The stored form of an API key: only this digest is ever kept in settings."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


API_SCOPES = ("runs", "review", "record", "admin")
_KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# One rate in the notation of `limits` (the API's rate limiter): "N/second", "N per 2 minutes".
# Checked here by pattern, not by importing `limits`, which costs every process that reads its
# settings (every worker child, every CLI command) 14 MB and a tenth of a second.
RATE = re.compile(
    r"\s*[0-9]+\s*(?:/|\s*per\s*)\s*[0-9]*\s*(?:second|minute|hour|day|month|year)s?\s*",
    re.IGNORECASE,
)
API_KEY_FORMS = (
    "api_key_hashes holds entries 'sha256:<64 hex>' (a key with every scope) or "
    "'NAME:SCOPE[+SCOPE...]:sha256:<64 hex>[:CORPUS|CORPUS...]' (a named key; scopes runs, "
    "review, record, admin; the optional corpora are the folders and s3:// prefixes it may submit and "
    "read), comma separated; make one with `groundswell api-key new`"
)


def corpus_under(corpus: str, root: str) -> bool:
    """Whether ``corpus`` lies at or under ``root``: a local folder (after resolving links, so
    a link cannot lead out) or an s3://bucket[/prefix] (whole path parts only; a "." or ".."
    part is under nothing: S3-compatible stores normalize them, so they could lead out)."""
    import os

    if corpus.startswith("s3://") or root.startswith("s3://"):
        if not (corpus.startswith("s3://") and root.startswith("s3://")):
            return False
        bucket, _, prefix = corpus[5:].partition("/")
        if {".", ".."} & set(prefix.split("/")):
            return False
        a_bucket, _, a_prefix = root[5:].rstrip("/").partition("/")
        prefix = prefix.rstrip("/")
        return bucket == a_bucket and (
            not a_prefix or prefix == a_prefix or prefix.startswith(a_prefix + "/")
        )
    path = os.path.realpath(corpus.removeprefix("file://"))
    top = os.path.realpath(root.removeprefix("file://"))
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class ApiKey:
    """A configured API key: its reviewer name, its digest and what it may do. ``admin``
    may do everything; ``runs`` reads and submits runs; ``review`` answers review tasks;
    ``record`` records claims into the ledger (``POST /v1/ledger/claims``, the MCP server)."""

    name: str
    digest: str
    scopes: frozenset[str]
    # The corpora (folders, s3:// prefixes) a team's key may submit and read; empty: all.
    corpora: tuple[str, ...] = ()

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    @property
    def limited(self) -> bool:
        return bool(self.corpora)

    def sees(self, corpus: str) -> bool:
        """Whether a run, schedule or claim of ``corpus`` is this key's to submit and read."""
        return not self.corpora or any(corpus_under(corpus, c) for c in self.corpora)


def parse_api_key(entry: str) -> ApiKey:
    """One entry of ``api_key_hashes``: ``sha256:<hex>`` (every scope, named ``key-`` and the
    digest's first 12 hex digits, as before names existed) or ``NAME:SCOPES:sha256:<hex>``."""
    if _DIGEST.fullmatch(entry):
        return ApiKey("key-" + entry[7:19], entry, frozenset(API_SCOPES))
    name, _, rest = entry.partition(":")
    scopes, _, rest = rest.partition(":")
    digest, corpora = rest[:71], rest[71:]  # 71: "sha256:" and 64 hex digits
    if not _DIGEST.fullmatch(digest) or (corpora and not corpora.startswith(":")):
        raise ValueError(f"{API_KEY_FORMS}; not {entry[:80]!r}")
    if not _KEY_NAME.fullmatch(name):
        raise ValueError(
            f"api_key_hashes: the key name {name[:80]!r} is 1 to 64 letters, digits, "
            "'.', '_', '@' or '-' (starting with a letter or digit)"
        )
    wanted = scopes.split("+")
    unknown = [s for s in wanted if s not in API_SCOPES]
    if unknown or len(set(wanted)) != len(wanted):
        raise ValueError(
            f"api_key_hashes: key {name}: scopes are runs, review, record and admin joined by '+', "
            f"each once; not {scopes[:80]!r}"
        )
    teams = tuple(corpora[1:].split("|")) if corpora else ()
    if corpora and not all(teams):
        raise ValueError(
            f"api_key_hashes: key {name}: give a corpus after the digest's ':', corpora "
            f"joined by '|'; not {corpora[1:80]!r}"
        )
    return ApiKey(name, digest, frozenset(wanted), teams)


# A review policy (``review-policy@1``, groundgate 0.11's format): checked here because a
# setting holds one (GROUNDSWELL_REVIEW_POLICY) and settings import no domain; the review
# package (review/formats.py) raises the same messages as its ReviewError.
REVIEW_RATE_RE = re.compile(r"0|1|0\.[0-9]{0,17}[1-9]")


def check_review_policy(policy: object) -> dict[str, Any]:
    """``policy`` if it is a ``review-policy@1`` object with every member; else ValueError."""
    if not isinstance(policy, dict):
        raise ValueError("the review policy is not a JSON object")
    wanted = {"format", "audit", "agree", "leads", "rejected"}
    if set(policy) != wanted:
        missing, extra = sorted(wanted - set(policy)), sorted(set(policy) - wanted)
        raise ValueError(f"review policy members: missing {missing}, unknown {extra}")
    if policy["format"] != "review-policy@1":
        raise ValueError("format: must be review-policy@1")
    audit = policy["audit"]
    if not isinstance(audit, dict) or set(audit) != {"rate", "seed"}:
        raise ValueError("audit: an object with exactly rate and seed")
    if not isinstance(audit["rate"], str) or not REVIEW_RATE_RE.fullmatch(audit["rate"]):
        raise ValueError(
            'audit.rate: a decimal string from 0 to 1 such as "0.02" (at most 18 digits after '
            "the point, no final 0)"
        )
    if not isinstance(audit["seed"], str):
        raise ValueError("audit.seed: a string")
    agree = policy["agree"]
    if type(agree) is not int or agree < 1:
        raise ValueError("agree: an integer of 1 or more")
    leads = policy["leads"]
    if not isinstance(leads, list) or not all(isinstance(n, str) and n.strip() for n in leads):
        raise ValueError("leads: a list of reviewer names")
    if len(set(leads)) != len(leads):
        raise ValueError("leads: a name is listed twice")
    if not isinstance(policy["rejected"], bool):
        raise ValueError("rejected: true or false")
    return policy


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=ENV_FILE, env_ignore_empty=True, extra="ignore"
    )

    # Coordination: the Celery broker, and the Redis of run state. Unset: `run`, `reprocess`
    # and `demo` start a private stack; services (worker, beat, api) refuse to start.
    broker_url: str | None = Field(
        default=None, description="The Celery broker: redis://... or amqp://..."
    )
    redis_url: str | None = Field(
        default=None, description="Run-state Redis; defaults to the broker URL when it is Redis."
    )

    # Where receipts, run records, summaries and the policy registry are written: a folder or
    # s3://bucket/prefix. Default: one folder per user (not per working directory).
    storage_url: str = Field(default_factory=lambda: default_storage_url())
    # Files this machine can make again (the Unicode tables of the text steps); default: the
    # per-user cache folder.
    cache_dir: str = Field(default_factory=lambda: default_cache_dir())

    # S3 (and S3-compatible endpoints such as MinIO or moto).
    s3_endpoint_url: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None
    s3_addressing_style: str = "path"
    s3_max_attempts: int = Field(default=8, ge=1, le=20)
    s3_connect_timeout: float = 5.0
    s3_read_timeout: float = 60.0

    # The API, as a client sees it (CLI submit/status/summary).
    api_url: str = "http://127.0.0.1:8000"
    api_key: SecretStr | None = None

    # API keys, stored hashed, comma separated in the environment: "sha256:<hex>" (every
    # scope) or "NAME:SCOPE[+SCOPE]:sha256:<hex>" (a named key; scopes runs, review, record,
    # admin).
    api_key_hashes: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # What the API may read: corpora named through it (runs, schedules, reprocessing) must
    # lie under one of these local folders or s3://bucket[/prefix]es. Empty: none at all.
    allowed_corpora: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Abuse limits of the API: request bodies, request rates (per key, per client address,
    # failed authentications, run submissions; "N/second|minute|hour"), schedule intervals.
    api_max_body_bytes: int = Field(default=1_000_000, ge=1024)
    api_rate_per_key: str = "100/second"
    api_rate_per_address: str = "200/second"
    api_rate_failed_auth: str = "20/minute"
    api_rate_runs: str = "60/minute"
    # The proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or
    # networks, "*" for any): the client's address, which rate limits count, and the scheme.
    # Empty: none, and the connection's own address counts (a forged header changes nothing).
    forwarded_allow_ips: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Sessions of the review page (sign in once with a key; a signed cookie after). Unset: a
    # random secret of this process, so sessions end when it restarts and one API process
    # does not accept another's: a deployment with several API processes must set it.
    session_secret: SecretStr | None = None
    session_ttl_s: int = Field(default=8 * 3600, ge=60, le=30 * 24 * 3600)
    # Behind a proxy that ends TLS the API sees http: true marks the cookie Secure anyway and
    # names it __Host-gs_session (Secure, Path=/, no Domain: no other host can set it).
    session_cookie_secure: bool = False
    # Schedules: the shortest and longest interval (a year; at most ten, the model's ceiling).
    min_schedule_seconds: float = Field(default=60.0, gt=0)
    max_schedule_seconds: float = Field(default=366 * 86400.0, gt=0, le=10 * 366 * 86400.0)
    # How many schedules there may be (beat reads every one), and how many one API key may add.
    max_schedules: int = Field(default=1000, ge=1)
    max_schedules_per_key: int = Field(default=100, ge=1)

    # Planning and batching.
    batch_bytes: int = Field(default=4_000_000, ge=1, description="Byte budget of one task.")
    batch_max_units: int = Field(default=64, ge=1)
    list_page_size: int = Field(default=1000, ge=1, le=1000)
    max_document_bytes: int = Field(default=64_000_000, ge=1)

    # Reading source documents (PDF, HTML, XML, text) into text: what one document may cost.
    read_max_bytes: int = Field(
        default=64_000_000, ge=1, description="Largest source file that is read, in bytes."
    )
    read_max_pages: int = Field(
        default=2000, ge=1, description="Most pages a PDF may have to be read."
    )
    read_seconds: float = Field(
        default=300.0, gt=0, description="Time limit for reading one document, in seconds."
    )

    # OCR of scanned pages and images (reader ocr-1, Tesseract): which pages, how, and the
    # confidence under which a recognised page is a read failure rather than text to verify.
    ocr_mode: Literal["off", "missing", "always"] = Field(
        default="missing",
        description="OCR PDF pages: never, those without a text layer, or every page.",
    )
    ocr_dpi: int = Field(default=300, ge=72, le=600, description="Resolution pages are OCRed at.")
    ocr_languages: str = Field(
        default="eng",
        pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$",
        description="Tesseract language packs, joined by + (eng+deu); each one installed.",
    )
    ocr_min_confidence: float = Field(
        default=50.0,
        ge=0,
        le=100,
        description="Mean word confidence (0-100) under which a recognised page fails to read.",
    )
    ocr_command: str = Field(default="tesseract", description="The Tesseract program.")
    # A long scan on the read queue is shared out: a read unit with more pages to recognise
    # than ocr_split_pages cuts them into ranges (at most ocr_split_ranges) and sends one
    # helper task per range but its first (shared/runs/reading.py).
    ocr_split_pages: int = Field(
        default=16,
        ge=0,
        description="Pages to OCR above which a read unit shares them with other workers "
        "(0: never).",
    )
    ocr_split_ranges: int = Field(
        default=32, ge=2, le=256, description="Most page ranges a long scan is cut into."
    )

    # RabbitMQ closes a channel whose delivery is not acknowledged within its server-wide
    # consumer_timeout (30 min by default): it must exceed the hard task time limit.
    broker_consumer_timeout: float = Field(
        default=1800.0,
        gt=0,
        description="The RabbitMQ server's consumer_timeout, in seconds, when the broker is "
        "amqp:// (workers read the real value with rabbitmqctl where they can).",
    )

    # Task execution limits; the visibility timeout must exceed the hard limit.
    task_soft_time_limit: int = Field(default=540, ge=1)
    task_time_limit: int = Field(default=600, ge=1)
    visibility_timeout: int = Field(default=900, ge=1)
    max_redeliveries: int = Field(default=3, ge=0)
    admit_prefetch: int = Field(default=16, ge=1)

    # Run bookkeeping (docs/run-bookkeeping.md): the planning window, leases, step budgets.
    max_inflight_batches: int = Field(
        default=0,
        ge=0,
        description="Batches a run may have sent and not yet recorded (queued or running); "
        "planning pauses at this many. 0: eight per live worker process, at least 16.",
    )
    lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="A running batch's lease, renewed every third of it; when it expires "
        "(the worker died), reconcile sends the batch again.",
    )
    queue_lease_seconds: float | None = Field(
        default=None,
        gt=0,
        description="How long a sent batch may wait in its queue before it is presumed "
        "lost and sent again (default: the visibility timeout).",
    )
    step_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Time budget of one planning or finalize step before it hands over to "
        "the next (default: a third of the soft time limit, at most 60 s).",
    )

    # Reconciliation of stalled runs.
    stall_seconds: float = Field(default=60.0, gt=0)
    reconcile_interval: float = Field(default=30.0, gt=0)

    # Defaults for runs.
    default_policy: str = "default"

    # The review-policy@1 (groundgate 0.11) a run's review tasks are made under, as JSON: its
    # audit rate and seed, answers that settle a slot, leads, tasks for rejected slots. Unset:
    # no audit, one answer settles, no lead, no task for a rejected slot. A run keeps the
    # policy its tasks were made under.
    review_policy: dict[str, Any] | None = None
    # The most answers one reviewer may give one task: past them an answer is refused (409),
    # never stored and ignored. The reviewer's latest answer is the one that counts.
    review_max_answers: int = Field(default=100, ge=1, le=100_000)
    # Page images of PDFs on the review and report pages (shared/read/render.py): the
    # resolution they are rendered at, how many renders one API process runs at once, and
    # how long a request waits for a turn before it is told to come back (503).
    page_image_dpi: int = Field(default=110, ge=36, le=300)
    page_render_concurrency: int = Field(default=2, ge=1, le=64)
    page_render_wait_seconds: float = Field(default=10.0, gt=0, le=300)

    # The claims ledger (groundswell ledger ...): postgresql://user@host/db in production;
    # unset, an embedded SQLite file in the per-user data folder (no server needed).
    ledger_url: str | None = Field(
        default=None,
        description="The claims ledger's database: postgresql://... or sqlite:///PATH "
        "(default: ledger.sqlite3 in the per-user data folder).",
    )
    # What one path search may read (API and CLI): a search reads about 400 claims on a
    # 10M-claim ledger; 200,000 (the busiest hub there) took 2-5 s between two such hubs on
    # the loaded 2-core machine. Past the budget it stops and says so.
    ledger_path_budget: int = Field(
        default=200_000,
        ge=1,
        le=1_000_000_000,
        description="Claims one ledger path search may read before it stops ('search stopped').",
    )

    # The deployment's quality gate (docs/gates.md): a gate@1 YAML file that
    # GET /v1/runs/{id}/gate, `groundswell gate RUN` (without a file) and the run hooks check
    # finished runs against. Unset: no gate.
    gate_file: Path | None = None

    # The columnar export (docs/export.md): where Parquet files of runs go (a folder or
    # s3://bucket/prefix; unset: exports/parquet in the output store), and whether every
    # finished run is exported (else on request: `groundswell export RUN`, the API).
    export_url: str | None = None
    export_parquet: bool = False

    # Run hooks (docs/hooks.md): webhooks on finished, failed and gate-failed runs. The global
    # ones, a JSON list of {"url", "events", "format": "json"|"slack", "secret"}; a hook without
    # a secret signs with HOOK_SECRET. API keys add their own through /v1/hooks.
    hooks: list[dict[str, Any]] = Field(default_factory=list)
    hook_secret: SecretStr | None = None
    hook_max_attempts: int = Field(default=8, ge=1, le=100)
    hook_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    hook_backoff_seconds: float = Field(default=2.0, gt=0, le=3600)
    hook_backoff_max_seconds: float = Field(default=600.0, gt=0, le=86400)
    # Hosts a key's hook (POST /v1/hooks) may post to besides public ones: exact names or
    # "*.example.com"; loopback, private and link-local addresses are refused otherwise.
    hook_allowed_hosts: list[str] = Field(default_factory=list, max_length=1000)

    # Streams (docs/streams.md): a followed corpus's S3 event notifications, gathered into
    # windows that are runs. A window closes at this many ready documents or this many seconds
    # after its first; a document waits for its inputs (its document and each of
    # stream_wait_for) at most stream_grace_seconds, then is checked with what is there.
    stream_window_documents: int = Field(default=100, ge=1, le=100_000)
    # Standing streams in all (POST /v1/streams and follow refuse a new one past it).
    max_streams: int = Field(default=100, ge=1, le=10_000)
    stream_window_seconds: float = Field(default=60.0, gt=0, le=86_400)
    stream_grace_seconds: float = Field(default=30.0, ge=0, le=86_400)
    stream_wait_for: Annotated[list[Literal["claims", "candidates"]], NoDecode] = Field(
        default_factory=lambda: ["claims", "candidates"]
    )
    # SQS (groundswell follow --sqs): its endpoint (unset: AWS's for the region); the S3
    # credentials and region serve it too.
    sqs_endpoint_url: str | None = None
    # How often the beat's pass looks at every followed corpus (closes and finishes windows).
    stream_tick_seconds: float = Field(default=2.0, gt=0, le=3600)
    # How often a followed corpus is listed and compared with its latest run (lost events).
    stream_reconcile_seconds: float = Field(default=300.0, gt=0, le=7 * 86_400)
    # POST /v1/events/s3: the secret its HMAC-SHA256 signatures are keyed by (unset: the route
    # answers 503) and how old a signed timestamp may be.
    stream_webhook_secret: SecretStr | None = None
    stream_webhook_tolerance_seconds: float = Field(default=300.0, gt=0, le=3600)

    # OpenLineage (docs/lineage.md): where runs' START/COMPLETE/FAIL events go, an HTTP
    # endpoint (http(s)://marquez:5000) or a file (file:///path/events.jsonl); unset: none.
    openlineage_url: str | None = None
    openlineage_namespace: str = "groundswell"

    # Metrics: prometheus_client multiprocess directory for prefork workers.
    metrics_dir: str | None = None
    # The API's /metrics needs no key and reads Redis: scrapes within this many seconds get
    # the same answer, made once (0: every scrape is made anew).
    metrics_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    worker_metrics_port: int = Field(default=0, ge=0, le=65535)

    # Unit kinds from outside the package: modules (comma separated) imported when the
    # registry first loads, in workers and the API alike, each registering its kinds
    # (groundswell.shared.runs.kinds). Every process of a deployment must name the same.
    kinds_extra: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # The shared corpus used by tests and benchmarks (read at run time, never copied).
    shared_corpus: Path = REPO_ROOT.parent / "shared" / "corpus"

    @field_validator("api_key_hashes", mode="before")
    @classmethod
    def _split_hashes(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("allowed_corpora", "forwarded_allow_ips", "stream_wait_for", mode="before")
    @classmethod
    def _split_corpora(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("kinds_extra", mode="before")
    @classmethod
    def _split_modules(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.replace(",", " ").split()
        if isinstance(value, list):
            for name in value:
                if not all(part.isidentifier() for part in str(name).split(".")):
                    raise ValueError(f"{name!r} is not a module name (a.b.c)")
        return value

    @field_validator(
        "api_rate_per_key", "api_rate_per_address", "api_rate_failed_auth", "api_rate_runs"
    )
    @classmethod
    def _check_rate(cls, value: str) -> str:
        if not RATE.fullmatch(value):
            raise ValueError(
                f"a rate is 'N/second', 'N/minute' or 'N/hour': couldn't parse {value!r}"
            )
        return value

    def corpus_allowed(self, corpus: str) -> bool:
        """Whether the API may read ``corpus``: under an allowed folder (after resolving
        links, so a link cannot lead out) or an allowed s3://bucket/prefix."""
        return self.allowed_root(corpus) is not None

    def allowed_root(self, corpus: str) -> str | None:
        """The first of the allowed corpora that ``corpus`` lies under (None: none)."""
        return next((root for root in self.allowed_corpora if corpus_under(corpus, root)), None)

    @field_validator("review_policy")
    @classmethod
    def _check_review_policy(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        try:
            return check_review_policy(value)
        except ValueError as exc:
            raise ValueError(f"review_policy: {exc}") from None

    @field_validator("api_key_hashes")
    @classmethod
    def _check_hashes(cls, value: list[str]) -> list[str]:
        keys = [parse_api_key(item) for item in value]
        for attr in ("digest", "name"):
            seen = [getattr(k, attr) for k in keys]
            twice = sorted({v for v in seen if seen.count(v) > 1})
            if twice:
                raise ValueError(f"api_key_hashes: the {attr} {twice[0]} is given twice")
        return value

    @model_validator(mode="after")
    def _check_key_corpora(self) -> Settings:
        for key in self.api_keys:
            for corpus in key.corpora:
                if not self.corpus_allowed(corpus):
                    raise ValueError(
                        f"api_key_hashes: key {key.name}: the corpus {corpus[:200]} is not "
                        "under GROUNDSWELL_ALLOWED_CORPORA (a key's corpora lie within them)"
                    )
        return self

    @property
    def api_keys(self) -> list[ApiKey]:
        """The configured keys with their names and scopes."""
        return [parse_api_key(item) for item in self.api_key_hashes]

    @model_validator(mode="after")
    def _check_limits(self) -> Settings:
        if self.task_soft_time_limit >= self.task_time_limit:
            raise ValueError("task_soft_time_limit must be below task_time_limit")
        if self.visibility_timeout <= self.task_time_limit:
            # Otherwise Redis redelivers a task that is still running (celery-notes 1.3).
            raise ValueError("visibility_timeout must exceed task_time_limit")
        if self.broker_is_amqp and self.broker_consumer_timeout <= self.task_time_limit:
            # Otherwise RabbitMQ closes the channel of a task that is still running.
            raise ValueError("broker_consumer_timeout must exceed task_time_limit")
        return self

    @property
    def broker_is_amqp(self) -> bool:
        return (self.broker_url or "").split("://", 1)[0] in ("amqp", "amqps", "pyamqp")

    @property
    def state_redis_url(self) -> str:
        if self.redis_url:
            return self.redis_url
        if self.broker_url and not self.broker_is_amqp:
            return self.broker_url
        raise NotConfigured(
            "no Redis for run state: set GROUNDSWELL_REDIS_URL (or a redis:// "
            "GROUNDSWELL_BROKER_URL)"
        )

    @property
    def ledger_database_url(self) -> str:
        """The ledger's URL: ``ledger_url``, or the embedded SQLite file by default."""
        if self.ledger_url:
            return self.ledger_url
        import platformdirs

        return f"sqlite:///{platformdirs.user_data_path('groundswell') / 'ledger.sqlite3'}"

    @property
    def queued_lease_seconds(self) -> float:
        return self.queue_lease_seconds or float(self.visibility_timeout)

    @property
    def plan_step_seconds(self) -> float:
        return self.step_seconds or min(60.0, self.task_soft_time_limit / 3)

    @property
    def finalize_step_seconds(self) -> float:
        return self.plan_step_seconds


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
