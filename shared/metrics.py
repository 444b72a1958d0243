"""Prometheus metrics. Names ``groundswell_*``, base units, bounded labels only.

Never label by run, document or task id: per-run numbers live in summaries. Prefork
workers use prometheus_client's multiprocess mode, so ``PROMETHEUS_MULTIPROC_DIR``
must be set before this module is imported (``groundswell worker`` does that).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from groundswell.shared.producers import DISAGREEMENTS, MAX_PRODUCERS, OTHER, by_producer
from groundswell.shared.summary import OUTCOMES, REPAIR_ACTIONS, REPAIR_STAGES, REPAIRED

# The summary counter of each (gold label, outcome) of a labelled candidate.
GOLD_OUTCOMES = {
    ("right", "admitted"): "candidates.right_admitted",
    ("right", "needs_verification"): "candidates.right_reviewed",
    ("right", "rejected"): "candidates.false_rejections",
    ("wrong", "admitted"): "candidates.escapes",
    ("wrong", "needs_verification"): "candidates.wrong_reviewed",
    ("wrong", "rejected"): "candidates.wrong_rejected",
}

# Domain metrics: what was verified and admitted, under which policy. They count the work
# done: a unit whose receipt was found in the cache (a repeated run) adds nothing to them.
CLAIMS = Counter(
    "groundswell_claims",
    "Claims verified, by policy, verdict and tier (tier 'none' when unlocated).",
    ["policy", "version", "verdict", "tier"],
)
CANDIDATES = Counter(
    "groundswell_candidates",
    "Candidates decided, by policy and outcome.",
    ["policy", "version", "outcome"],
)
DECISION_CODES = Counter(
    "groundswell_decision_codes",
    "Reason, flag and info codes on admission decisions.",
    ["policy", "version", "code"],
)
LABELLED = Counter(
    "groundswell_labelled",
    "Claims and candidates that carry a gold label (the denominator of escape rates); kind "
    "'repair': labelled claims kept by a repair (the denominator of wrong repairs).",
    ["policy", "version", "kind"],
)
ESCAPES = Counter(
    "groundswell_escapes",
    "Labelled-wrong extractions that got through: fabricated quotations accepted, "
    "wrong values admitted without review.",
    ["policy", "version", "kind"],
)
LABELLED_CANDIDATES = Counter(
    "groundswell_labelled_candidates",
    "Labelled candidates by gold label (right, wrong) and outcome: right values admitted, "
    "sent to review or rejected; wrong values admitted (the escapes), sent to review or "
    "rejected. Per policy version, so two versions run on one corpus compare side by side.",
    ["policy", "version", "gold", "outcome"],
)
REPAIRS = Counter(
    "groundswell_repairs",
    "Claims through the repair cascade (policies that repair), by policy, action (accepted, "
    "normalized, salvaged, substituted, annotated, rejected) and the stage that decided it.",
    ["policy", "version", "action", "stage"],
)
WRONG_REPAIRS = Counter(
    "groundswell_wrong_repairs",
    "Claims kept by a repair (salvaged, substituted, annotated) whose gold label says the "
    'quotation is not genuine; the denominator is groundswell_labelled_total{kind="repair"}.',
    ["policy", "version", "action"],
)
# By producer (the extractor that made the records, as corpus.yaml or each record declares it):
# the label is a producer's short key, at most MAX_PRODUCERS of them per process, the rest
# "other" (producer_label).
PRODUCER_CLAIMS = Counter(
    "groundswell_producer_claims",
    "Claims verified, by policy, producer and outcome (accepted, refused).",
    ["policy", "version", "producer", "outcome"],
)
PRODUCER_CANDIDATES = Counter(
    "groundswell_producer_candidates",
    "Candidates decided, by policy, producer and outcome (admitted, needs_verification, rejected).",
    ["policy", "version", "producer", "outcome"],
)
PRODUCER_LABELLED = Counter(
    "groundswell_producer_labelled",
    "Labelled-wrong extractions by producer (kind claim: fabricated quotations; candidate: "
    "wrong values): the denominator of the producer's escape rates.",
    ["policy", "version", "producer", "kind"],
)
PRODUCER_ESCAPES = Counter(
    "groundswell_producer_escapes",
    "Labelled-wrong extractions that got through, by producer (fabricated quotations "
    "accepted, wrong values admitted without review).",
    ["policy", "version", "producer", "kind"],
)
PRODUCER_ALIGNED = Counter(
    "groundswell_producer_aligned_claims",
    "Claims that carry their producer's own alignment claim (a producer file's), by producer: "
    "the denominator of disagreements.",
    ["policy", "version", "producer"],
)
PRODUCER_DISAGREEMENTS = Counter(
    "groundswell_producer_disagreements",
    "Claims where the producer's alignment and the verifier disagree, by producer and "
    "disagreement (exact_not_verified, unaligned_located, lesser_short).",
    ["policy", "version", "producer", "disagreement"],
)
DOCUMENTS = Counter(
    "groundswell_documents",
    "Documents read by unit tasks (hashed to find their receipt, computed or cached).",
    ["kind"],
)
DOCUMENT_BYTES = Counter(
    "groundswell_document_bytes", "Bytes of documents read by unit tasks.", ["kind"]
)
UNITS = Counter(
    "groundswell_units",
    "Units finished, by kind (verify, admit) and status (computed, cached, failed); "
    "status cached counts the receipts reused.",
    ["kind", "status"],
)
INPUT_ERRORS = Counter(
    "groundswell_input_errors",
    "Malformed input found by the work done, by unit kind and scope: 'record' (a record "
    "failed alone, the rest of its file was used) or 'unit' (an input file was missing or "
    "unusable, or the unit was given up, so the whole unit failed).",
    ["kind", "scope"],
)

# Reading (PDF, HTML, XML read to text by read units). Counted when a file is read now: a
# reading found in storage reads nothing and moves none of them.
READS = Counter(
    "groundswell_reads",
    "Source files read, by format (pdf, html, xml) and status: computed, or failed (a read "
    "error, pages without a text layer, or the time limit).",
    ["format", "status"],
)
READ_SECONDS = Histogram(
    "groundswell_read_duration_seconds",
    "Wall time of reading one source file, by format.",
    ["format"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
READ_PAGES = Counter(
    "groundswell_read_pages",
    "Pages of the PDFs read (files read now, not readings found in storage).",
    ["format"],
)
OCR_PAGES = Counter(
    "groundswell_ocr_pages",
    "Pages of a long scan shared out on the read queue, by who took them (the read unit or a "
    "helper task) and how: recognised now, or loaded as another worker stored it.",
    ["role", "how"],
)

# Task machinery.
TASK_DURATION = Histogram(
    "groundswell_task_duration_seconds",
    "Wall time of one task execution.",
    ["task", "queue"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
)
TASKS = Counter(
    "groundswell_tasks",
    "Task executions by outcome (succeeded, failed, retried).",
    ["task", "queue", "status"],
)
TASK_REDELIVERIES = Counter(
    "groundswell_task_redeliveries",
    "Task messages delivered again (after a lost worker or a visibility timeout).",
    ["task", "queue"],
)
TASK_POISONED = Counter(
    "groundswell_task_poisoned",
    "Units given up after the redelivery cap.",
    ["task", "queue"],
)
BATCH_SPLITS = Counter(
    "groundswell_batch_splits",
    "Batches split in two because a delivery of them died (a poisonous unit is isolated).",
    ["task"],
)
BATCHES_RESENT = Counter(
    "groundswell_batches_resent",
    "Batches sent again by reconcile because their lease expired (lost message or worker).",
    ["task"],
)
LEASES_KEPT = Counter(
    "groundswell_leases_kept",
    "Expired leases left with their holder because its worker still runs it (a late renewal).",
    ["task"],
)
RUNS_FINISHED = Counter("groundswell_runs_finished", "Runs finalized, by state.", ["state"])

# Stored records a reader skipped because it could not read them (each is logged with its
# key); collection: schedules, beat_entries, policies, runs.
BAD_RECORDS = Counter(
    "groundswell_bad_records",
    "Stored records skipped by a reader (lists, beat, publishing), or refused where they are "
    "named (a run's routes answer 409), because they could not be read, by collection "
    "(schedules, beat_entries, policies, runs); each is logged with its key.",
    ["collection"],
)
BAD_RECORD_COLLECTIONS = ("schedules", "beat_entries", "policies", "runs")
STREAM_EVENTS = Counter(
    "groundswell_stream_events",
    "Records of S3 event notifications taken by streams, by what they did: applied, stale "
    "(duplicates and late older events: no-ops), ignored (not an input of a followed corpus), "
    "error (unreadable records), reconciled (found by listing: a lost notification).",
    ["result"],
)
STREAM_WINDOWS = Counter(
    "groundswell_stream_windows",
    "Stream windows whose run ended, by the run's state.",
    ["state"],
)
SCHEDULE_FIRES = Counter(
    "groundswell_schedule_fires",
    "Schedules fired (beat ticks and policy publications), by outcome: started (a run), "
    "skipped (its last run still going, or this trigger already fired), refused (its corpus "
    "is no longer under GROUNDSWELL_ALLOWED_CORPORA; last_error says so), unreadable.",
    ["outcome"],
)
FIRE_OUTCOMES = ("started", "skipped", "refused", "unreadable")
HOOK_DELIVERIES = Counter(
    "groundswell_hook_deliveries",
    "Attempts at run-hook deliveries, by event (finished, failed, gate_failed) and outcome: "
    "delivered, retried (an error to try again), failed (given up, or refused: a key's hook "
    "to a host that is not public and not allowed).",
    ["event", "outcome"],
)
HOOK_OUTCOMES = ("delivered", "retried", "failed")
HOOK_EVENTS = ("finished", "failed", "gate_failed")  # hooks.models.EVENTS (a test holds it)

TASK_PEAK_RSS = Gauge(
    "groundswell_task_peak_rss_bytes",
    "Peak resident memory (VmHWM, reset as each task starts) of a task execution, the "
    "largest seen per task.",
    ["task"],
    multiprocess_mode="max",
)

TASK_LAST_SUCCESS = Gauge(
    "groundswell_task_last_success_timestamp_seconds",
    "When a task of each name last succeeded, Unix time. Beat sends reconcile every "
    'GROUNDSWELL_RECONCILE_INTERVAL: task="reconcile" stops moving when beat is down.',
    ["task"],
    multiprocess_mode="max",
)

# Gauges: livesum so that dead prefork children drop out.
TASKS_IN_PROGRESS = Gauge(
    "groundswell_tasks_in_progress",
    "Tasks executing now.",
    ["task", "queue"],
    multiprocess_mode="livesum",
)


KINDS = ("verify", "admit")
UNIT_STATUSES = ("computed", "cached", "failed")
ERROR_SCOPES = ("record", "unit")
TASK_STATUSES = ("succeeded", "failed", "retried")
RUN_STATES = ("succeeded", "partially_failed", "failed", "cancelled")


def initialize(tasks: Iterable[tuple[str, str]]) -> None:
    """Create every series of the rare events at zero, for the ``(task, queue)`` pairs a
    worker serves. A counter first seen at 1 has no earlier sample, so Prometheus's
    ``increase()`` and ``rate()`` miss that first event: the first input error or failed
    task would never show on the dashboard or fire an alert."""
    tasks = list(tasks)
    kinds = [kind for kind in KINDS if any(task == kind for task, _ in tasks)]
    for task, queue in tasks:
        for status in TASK_STATUSES:
            TASKS.labels(task, queue, status)
        TASK_REDELIVERIES.labels(task, queue)
    for kind in kinds:
        TASK_POISONED.labels(kind, kind)
        BATCH_SPLITS.labels(kind)
        for status in UNIT_STATUSES:
            UNITS.labels(kind, status)
        for scope in ERROR_SCOPES:
            INPUT_ERRORS.labels(kind, scope)
    if any(task == "reconcile" for task, _ in tasks):
        for kind in KINDS:
            BATCHES_RESENT.labels(kind)
            LEASES_KEPT.labels(kind)
    if any(task == "finalize" for task, _ in tasks):
        for state in RUN_STATES:
            RUNS_FINISHED.labels(state)
    for collection in BAD_RECORD_COLLECTIONS:
        BAD_RECORDS.labels(collection)
    if any(task == "schedule" for task, _ in tasks):
        for outcome in FIRE_OUTCOMES:
            SCHEDULE_FIRES.labels(outcome)
    if any(task == "deliver" for task, _ in tasks):
        for event in HOOK_EVENTS:
            for outcome in HOOK_OUTCOMES:
                HOOK_DELIVERIES.labels(event, outcome)


def bad_record(collection: str, key: str, error: object) -> str:
    """Log and count one unreadable record a reader skips; what is wrong with it (200
    characters at most, never the record itself), for the reader to show beside the key."""
    if callable(getattr(error, "errors", None)):  # pydantic: each field and what it needs
        parts = [
            ".".join(str(p) for p in e.get("loc", ())) + ": " + str(e.get("msg"))
            for e in error.errors()  # type: ignore[attr-defined]
        ]
        message = "; ".join(p.removeprefix(": ") for p in parts)
    else:
        message = str(error).strip().split("\n", 1)[0] or type(error).__name__
    message = message[:200]
    logging.getLogger("groundswell").warning(
        "unreadable %s record %s skipped: %s", collection, key, message
    )
    BAD_RECORDS.labels(collection).inc()
    return message


def computed_now(row: dict[str, Any]) -> bool:
    """Whether a unit's row is work done now rather than a receipt found in the cache.

    The unit runner gives every unit it computes a reason ("new input", "changed input",
    ...) and a reused receipt none; a unit that failed before it had a receipt (a missing
    or unreadable input) was not served from the cache either."""
    return row.get("receipt") is None or row.get("reason") is not None


def observe_batch(
    kind: str,
    rows: list[dict[str, Any]],
    fresh: dict[str, int],
    policy: dict[str, Any],
    *,
    rowless: bool = False,
    observe: Callable[[str, str, dict[str, int]], None] | None = None,
) -> None:
    """Export one batch (once, when its recording was fresh).

    Every unit counts in ``groundswell_units_total`` by status (``cached`` is the cache hit)
    and its document in the documents read. The domain counters take ``fresh``, the summed
    counters of the units computed now, and input errors only the rows computed now: a run
    that finds every receipt moves none of them. ``rowless``: the kind's computed units leave
    no row (its batch's counters count them); ``observe``: the kind's own domain counters
    (policy name, version, ``fresh``), as its declaration names them.
    """
    name, version = policy.get("name", "?"), str(policy.get("version", "?"))
    for row in rows:
        UNITS.labels(kind, row.get("status", "?")).inc()
        if row.get("bytes") is not None:
            DOCUMENTS.labels(kind).inc()
            DOCUMENT_BYTES.labels(kind).inc(row["bytes"])
        errors = row.get("errors_total") or 0
        if errors and computed_now(row):
            scope = "unit" if row.get("status") == "failed" else "record"
            INPUT_ERRORS.labels(kind, scope).inc(errors)
    if rowless and fresh.get(f"units.{kind}.computed"):
        UNITS.labels(kind, "computed").inc(fresh[f"units.{kind}.computed"])
    if observe is not None:
        observe(name, version, fresh)


def observe_claims(name: str, version: str, fresh: dict[str, int]) -> None:
    """A verification batch's claims by verdict and tier, repairs, labels and escapes."""
    for key, value in fresh.items():
        if key.startswith("claims.at."):
            verdict, _, tier = key[len("claims.at.") :].partition(".")
            CLAIMS.labels(name, version, verdict, tier).inc(value)
    if fresh.get("repairs"):
        _observe_repairs(name, version, fresh)
    _observe_labels(name, version, fresh, "claims", "claim")
    observe_producers(name, version, fresh)


def observe_candidates(name: str, version: str, fresh: dict[str, int]) -> None:
    """An admission batch's candidates by outcome and code, by gold label, and escapes."""
    for key, value in fresh.items():
        if key.startswith("candidates.outcome."):
            CANDIDATES.labels(name, version, key[len("candidates.outcome.") :]).inc(value)
        elif key.startswith("candidates.code."):
            DECISION_CODES.labels(name, version, key[len("candidates.code.") :]).inc(value)
    for (gold, outcome), key in GOLD_OUTCOMES.items():
        if fresh.get(key):
            LABELLED_CANDIDATES.labels(name, version, gold, outcome).inc(fresh[key])
    _observe_labels(name, version, fresh, "candidates", "candidate")
    observe_producers(name, version, fresh)


# The producer labels this process has used: the first MAX_PRODUCERS keys it saw keep theirs,
# any later one is "other" (a process cannot know the volumes of the others; the summary
# ranks by volume). The series per metric stay bounded by the processes times the bound.
_PRODUCER_LABELS: set[str] = set()


def producer_label(key: str) -> str:
    if key in _PRODUCER_LABELS:
        return key
    if len(_PRODUCER_LABELS) >= MAX_PRODUCERS:
        return OTHER
    _PRODUCER_LABELS.add(key)
    return key


def observe_producers(name: str, version: str, fresh: dict[str, int]) -> None:
    """A batch's per-producer counters (``producer.<counter>@<key>``) as the producer series;
    only the fixed outcome and disagreement sets become label values."""
    for key, counts in by_producer(fresh).items():
        label = producer_label(key)
        labels = (name, version, label)
        if counts.get("claims"):
            accepted = counts.get("claims.accepted", 0)
            PRODUCER_CLAIMS.labels(*labels, "accepted").inc(accepted)
            PRODUCER_CLAIMS.labels(*labels, "refused").inc(counts["claims"] - accepted)
        for outcome in OUTCOMES:
            if counts.get(f"candidates.outcome.{outcome}"):
                n = counts[f"candidates.outcome.{outcome}"]
                PRODUCER_CANDIDATES.labels(*labels, outcome).inc(n)
        for prefix, kind, wrong in (
            ("claims", "claim", "labelled_fabricated"),
            ("candidates", "candidate", "labelled_wrong"),
        ):
            if counts.get(f"{prefix}.{wrong}"):
                PRODUCER_LABELLED.labels(*labels, kind).inc(counts[f"{prefix}.{wrong}"])
                # At zero too: the escape rate's numerator exists beside its denominator.
                PRODUCER_ESCAPES.labels(*labels, kind).inc(counts.get(f"{prefix}.escapes", 0))
        if counts.get("claims.aligned"):
            PRODUCER_ALIGNED.labels(*labels).inc(counts["claims.aligned"])
            for found in DISAGREEMENTS:
                series = PRODUCER_DISAGREEMENTS.labels(*labels, found)
                series.inc(counts.get(f"disagree.{found}", 0))


def _observe_labels(
    name: str, version: str, fresh: dict[str, int], prefix: str, label_kind: str
) -> None:
    if fresh.get(f"{prefix}.labelled"):
        LABELLED.labels(name, version, label_kind).inc(fresh[f"{prefix}.labelled"])
    if fresh.get(f"{prefix}.escapes"):
        ESCAPES.labels(name, version, label_kind).inc(fresh[f"{prefix}.escapes"])


def _observe_repairs(name: str, version: str, fresh: dict[str, int]) -> None:
    """Repair actions by stage, and wrong repairs, from a batch's counters (labels only from
    the fixed sets, so a malformed counter cannot add a series)."""
    for key, value in fresh.items():
        if key.startswith("repairs.at."):
            action, _, stage = key[len("repairs.at.") :].partition(".")
            if action in REPAIR_ACTIONS and stage in REPAIR_STAGES:
                REPAIRS.labels(name, version, action, stage).inc(value)
    labelled = 0
    for action in REPAIRED:
        labelled += fresh.get(f"repairs.labelled.{action}", 0)
        if fresh.get(f"repairs.wrong.{action}"):
            WRONG_REPAIRS.labels(name, version, action).inc(fresh[f"repairs.wrong.{action}"])
    if labelled:
        LABELLED.labels(name, version, "repair").inc(labelled)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def corpus_label(corpus: str) -> str:
    """The ``corpus`` label of a corpus URL or folder: its last path part (at most 32
    characters of ``A-Za-z0-9._-``) and the first 8 hex digits of the SHA-256 of the whole
    string, e.g. ``filings-2025-3f9a0c1d``. Readable, distinct for two corpora with the
    same last part, and it never shows the server's folders."""
    digest = hashlib.sha256(corpus.encode("utf-8")).hexdigest()[:8]
    last = corpus.rstrip("/").rsplit("/", 1)[-1].removeprefix("s3:")
    name = _UNSAFE.sub("-", last).strip("-.")[:32]
    return f"{name}-{digest}" if name else digest
