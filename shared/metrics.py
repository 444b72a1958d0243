"""Prometheus metrics. Names ``groundswell_*``, base units, bounded labels only.

Never label by run, document or task id: per-run numbers live in summaries. Prefork
workers use prometheus_client's multiprocess mode, so ``PROMETHEUS_MULTIPROC_DIR``
must be set before this module is imported (``groundswell worker`` does that).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# Domain metrics: what was verified and admitted, under which policy.
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
    "Claims and candidates that carry a gold label (the denominator of escape rates).",
    ["policy", "version", "kind"],
)
ESCAPES = Counter(
    "groundswell_escapes",
    "Labelled-wrong extractions that got through: fabricated quotations accepted, "
    "wrong values admitted without review.",
    ["policy", "version", "kind"],
)
DOCUMENTS = Counter("groundswell_documents", "Documents processed by unit tasks.", ["kind"])
DOCUMENT_BYTES = Counter(
    "groundswell_document_bytes", "Bytes of documents processed by unit tasks.", ["kind"]
)
UNITS = Counter(
    "groundswell_units",
    "Units finished, by kind (verify, admit) and status (computed, cached, failed).",
    ["kind", "status"],
)
INPUT_ERRORS = Counter(
    "groundswell_input_errors", "Malformed input records and files, by unit kind.", ["kind"]
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
RUNS_FINISHED = Counter("groundswell_runs_finished", "Runs finalized, by state.", ["state"])

TASK_PEAK_RSS = Gauge(
    "groundswell_task_peak_rss_bytes",
    "Peak resident memory (VmHWM, reset as each task starts) of a task execution, the "
    "largest seen per task.",
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


def observe_batch(
    kind: str, rows: list[dict], counts: dict[str, int], policy: dict, cached: bool = False
) -> None:
    """Export one batch's units and summed counters (once, when its recording was fresh)."""
    name, version = policy.get("name", "?"), str(policy.get("version", "?"))
    for row in rows:
        UNITS.labels(kind, row.get("status", "?")).inc()
        if row.get("bytes") is not None:
            DOCUMENTS.labels(kind).inc()
            DOCUMENT_BYTES.labels(kind).inc(row["bytes"])
    if counts.get("errors"):
        INPUT_ERRORS.labels(kind).inc(counts["errors"])
    if kind == "verify":
        for key, value in counts.items():
            if key.startswith("claims.at."):
                verdict, _, tier = key[len("claims.at.") :].partition(".")
                CLAIMS.labels(name, version, verdict, tier).inc(value)
    else:
        for key, value in counts.items():
            if key.startswith("candidates.outcome."):
                CANDIDATES.labels(name, version, key[len("candidates.outcome.") :]).inc(value)
            elif key.startswith("candidates.code."):
                DECISION_CODES.labels(name, version, key[len("candidates.code.") :]).inc(value)
    prefix = "claims" if kind == "verify" else "candidates"
    label_kind = "claim" if kind == "verify" else "candidate"
    if counts.get(f"{prefix}.labelled"):
        LABELLED.labels(name, version, label_kind).inc(counts[f"{prefix}.labelled"])
    if counts.get(f"{prefix}.escapes"):
        ESCAPES.labels(name, version, label_kind).inc(counts[f"{prefix}.escapes"])
