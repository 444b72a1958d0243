"""Finishing a run: build its index in resumable steps, then its summary, then tidy up.

The summary's counters are summed from the segments themselves, so they equal what the
index holds whatever happened to Redis on the way.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from groundswell.shared import metrics, tracing
from groundswell.shared.runs.finalize import (
    IndexBuild,
    build_summary,
    delete_prefixes,
    dumps,
    final_state,
)
from groundswell.shared.runs.layout import (
    active_key,
    catalog_key,
    finalize_prefix,
    plan_prefix,
    run_json,
    segment_prefix,
    summary_key,
)
from groundswell.shared.runs.models import RunRecord, iso, utcnow
from groundswell.shared.storage import ObjectStore
from groundswell.shared.summary import policy_rates

if TYPE_CHECKING:
    from groundswell.shared.runs.service import RunService

log = logging.getLogger("groundswell.runs")


def catalog_entry(record: RunRecord, summary: dict[str, Any] | None = None) -> bytes:
    """The small object that lists a run in storage (and rebuilds the run list after a loss)."""
    entry: dict[str, Any] = {
        "id": record.id,
        "corpus": record.corpus,
        "policy": record.policy.get("ref"),
        "dry_run": record.dry_run,
        "state": record.state,
        "created_at": record.created_at,
        "finished_at": record.finished_at,
    }
    if summary is not None:
        entry["rates"] = policy_rates(summary)
    return json.dumps(entry).encode()


def write_record(store: ObjectStore, record: RunRecord, summary: dict[str, Any] | None = None):
    store.put(run_json(record.id), dumps(record.model_dump()))
    store.put(catalog_key(record.id, record.created_at), catalog_entry(record, summary))
    if record.terminal:
        store.delete(active_key(record.id))
    else:
        store.put(active_key(record.id), b"{}")


def cleanup(store: ObjectStore, run_id: str) -> None:
    """Drop what only building the index needed: segments, plan steps, sorted runs."""
    delete_prefixes(store, [finalize_prefix(run_id), segment_prefix(run_id), plan_prefix(run_id)])


def finalize_run(service: RunService, run_id: str) -> dict[str, Any] | None:
    """One finalize step; the summary once the run is finished. Idempotent."""
    from groundswell.shared.runs.service import FINALIZE

    runs, settings = service.runs, service.settings
    record = runs.get(run_id)
    if record is None or record.terminal:
        return None
    plan = runs.plan_state(run_id)
    if not plan.done or plan.outstanding:
        return None
    if not runs.claim_finalize(run_id, ttl=settings.task_time_limit):
        return None
    more = False
    try:
        if record.state != "finalizing":
            record = runs.update(run_id, state="finalizing") or record
        output = service.store(record.output)
        summary = read_summary(output, run_id)
        if summary is None:
            build = IndexBuild(output, run_id)
            manifest = build.step(time.monotonic() + settings.finalize_step_seconds)
            runs.touch(run_id)
            if manifest is None:
                more = True  # the next step, sent once the lock is free
                return None
            # Inputs that made no unit are counted while planning (in Redis, and in the plan
            # steps a rebuild reads); the rest of the counts come from the segments.
            planned = {
                k: v
                for k, v in runs.counters(run_id).items()
                if k.startswith(("ignored.", "documents.format."))
            }
            summary = _summary(
                output, record, {**build.counters, **planned}, manifest, service.store
            )
        state, finished = summary["state"], summary["finished_at"]
        if not record.dry_run:
            # Summaries are kept per policy version too; the gauges read the latest.
            policy = record.policy
            output.put(
                f"summaries/{policy['name']}/{policy['version']}/{run_id}.json", dumps(summary)
            )
            runs.set_corpus_latest(record.corpus, run_id)
            runs.set_policy_latest(record.corpus, policy["ref"], run_id, policy_rates(summary))
        updated = record.model_copy(
            update={"state": state, "finished_at": finished, "error": summary.get("error")}
        )
        cleanup(output, run_id)
        write_record(output, updated, summary)
        runs.finish(updated)
        metrics.RUNS_FINISHED.labels(state).inc()
        log.info("run %s finished: %s, %d units", run_id, state, summary["index"]["units"])
        tracing.annotate(state=state, units=summary["index"]["units"])
        service.finished(updated)
        return summary
    finally:
        runs.release_finalize(run_id)
        if more:
            service.enqueue(FINALIZE, [run_id])


def fail_run(
    service: RunService, record: RunRecord, message: str, errors: list[dict[str, Any]]
) -> RunRecord:
    """End a run that cannot go on (its corpus cannot be listed, its schema is invalid, it
    has nothing to do): state ``failed``, the cause in its record and in a summary."""
    import hashlib

    from groundswell.shared.runs.index import INDEX_FORMAT

    output = service.store(record.output)
    manifest = {
        "format": INDEX_FORMAT,
        "order": ["doc_id", "kind"],
        "units": 0,
        "failed_units": 0,
        "documents": 0,
        "bytes": 0,
        "merkle_root": hashlib.sha256(b"").hexdigest(),
        "pieces": [],
        "errors": errors,
    }
    finished = iso(utcnow())
    summary = build_summary(record.model_dump(), {}, manifest)
    summary.update(
        state="failed",
        error=message,
        created_at=record.created_at,
        started_at=record.started_at,
        finished_at=finished,
    )
    output.put(summary_key(record.id), dumps(summary), create_only=True)
    updated = record.model_copy(
        update={"state": "failed", "finished_at": finished, "error": message}
    )
    cleanup(output, record.id)
    write_record(output, updated, summary)
    service.runs.finish(updated)
    metrics.RUNS_FINISHED.labels("failed").inc()
    log.warning("run %s failed: %s", record.id, message)
    service.finished(updated)
    return updated


def read_summary(output: ObjectStore, run_id: str) -> dict[str, Any] | None:
    try:
        return json.loads(output.get(summary_key(run_id)))
    except KeyError:
        return None


def _summary(
    output: ObjectStore,
    record: RunRecord,
    counters: dict[str, int],
    manifest: dict[str, Any],
    open_store: Callable[[str], ObjectStore],
) -> dict[str, Any]:
    """Write the summary once (create-once: a racing finalizer reuses the first one)."""
    key = summary_key(record.id)
    summary = build_summary(record.model_dump(), counters, manifest)
    summary.update(
        state=final_state(summary),
        created_at=record.created_at,
        started_at=record.started_at,
        finished_at=iso(utcnow()),
    )
    if summary["state"] == "failed" and not any(
        k.startswith("documents.format.") for k in counters
    ):
        summary["error"] = no_documents(record, open_store)
    if not output.put(key, dumps(summary), create_only=True):
        return json.loads(output.get(key))
    return summary


def no_documents(record: RunRecord, open_store: Callable[[str], ObjectStore]) -> str:
    """Why every unit of a run failed when its corpus holds claims or candidates but no
    document at all: what was found instead (``document/``, a flat folder), in the words
    a run that planned nothing uses."""
    from groundswell.shared.runs.plan import SURVEY_KEYS, survey

    try:
        keys, hints = survey(open_store(record.corpus))
    except Exception:  # the corpus went away since planning: say only what is known
        keys, hints = [], []
    many = f"{len(keys)}+" if len(keys) >= SURVEY_KEYS else str(len(keys))
    return (
        f"no documents in {record.corpus}: its claims or candidates name documents that "
        f"documents/ does not hold (found {many} {'file' if len(keys) == 1 else 'files'}"
        + "".join(f"; {h}" for h in hints)
        + ")"
    )
