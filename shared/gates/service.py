"""Checking a finished run's summary against a gate, with its baselines.

Everything here reads summaries (plain dicts, as ``summary.json`` holds them) and the run
catalog in the output store; nothing touches a unit or the execution side.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from groundswell.shared.gates.models import (
    EXIT_OF,
    Bounds,
    Check,
    CheckResult,
    GateResult,
    GateSpec,
)
from groundswell.shared.runs.layout import CATALOG_RUNS, catalog_key, run_id_of_catalog_key
from groundswell.shared.storage import ObjectStore

if TYPE_CHECKING:
    from groundswell.shared.runs.service import RunService

Summary = dict[str, Any]
SummaryOf = Callable[[str], Summary | None]


def _rate(*path: str) -> Callable[[Summary], float | None]:
    def read(summary: Summary) -> float | None:
        value: Any = summary.get("rates") or {}
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    return read


def _failed_share(summary: Summary) -> float | None:
    units = (summary.get("index") or {}).get("units") or 0
    return round(summary.get("failed_units", 0) / units, 6) if units else None


# metric -> how to read it from a summary. Shares are in 0..1; counts are counts.
METRICS: dict[str, Callable[[Summary], float | None]] = {
    "grounding_rate": _rate("claims_accepted"),
    "claims_escape_rate": _rate("claims_escape_rate"),
    "escape_rate": _rate("candidates_escape_rate"),
    "admitted_share": _rate("candidates", "admitted"),
    "review_share": _rate("candidates", "needs_verification"),
    "rejected_share": _rate("candidates", "rejected"),
    "right_admitted_rate": _rate("right_values_admitted"),
    "false_rejection_rate": _rate("right_values_rejected"),
    "failed_units": lambda s: s.get("failed_units"),
    "failed_unit_share": _failed_share,
    "errors": lambda s: s.get("errors_total"),
    "disagreement_rate": lambda s: _disagreement_rate(s),
}
# Why a metric may have no value (a skipped check says so).
ABSENT = {
    "grounding_rate": "the run has no claims",
    "claims_escape_rate": "no claim is labelled fabricated (no labels)",
    "escape_rate": "no candidate is labelled wrong (no labels)",
    "right_admitted_rate": "no candidate is labelled right (no labels)",
    "false_rejection_rate": "no candidate is labelled right (no labels)",
    "failed_unit_share": "the run has no units",
    "disagreement_rate": "no claim carries its producer's alignment",
}
_OUTCOME_OF = {
    "admitted_share": "admitted",
    "review_share": "needs_verification",
    "rejected_share": "rejected",
}
FIELD_METRICS = (*_OUTCOME_OF, "escape_rate")
# metric -> the producer's rate it is (shared/producers.py ``rates``), or its outcome share.
PRODUCER_METRICS = {
    "grounding_rate": "grounding_rate",
    "claims_escape_rate": "claims_escape_rate",
    "escape_rate": "candidates_escape_rate",
    "admitted_share": None,
    "review_share": "review_rate",
    "rejected_share": "rejected_rate",
    "disagreement_rate": "disagreement_rate",
}
EACH_PRODUCER = "*"


def _disagreement_rate(summary: Summary) -> float | None:
    """Over every producer: claims whose producer's alignment the verifier contradicts."""
    parts = [p.get("counts") or {} for p in (summary.get("producers") or {}).values()]
    aligned = sum(c.get("claims.aligned", 0) for c in parts)
    found = sum(n for c in parts for k, n in c.items() if k.startswith("disagree."))
    return _share(found, aligned)


def _producer_value(summary: Summary, check: Check) -> float | None:
    entry = (summary.get("producers") or {}).get(check.producer)
    if not isinstance(entry, dict):
        return None
    rate = PRODUCER_METRICS[check.metric]
    if rate is None:
        counts = entry.get("counts") or {}
        return _share(counts.get("candidates.outcome.admitted", 0), counts.get("candidates", 0))
    value = (entry.get("rates") or {}).get(rate)
    return None if value is None else float(value)


def _share(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def metric_value(summary: Summary, check: Check) -> float | None:
    """The value a check reads from a summary (None when it does not exist there)."""
    if check.producer is not None:
        return _producer_value(summary, check)
    if check.field is None:
        value = METRICS[check.metric](summary)
        return None if value is None else float(value)
    counts = summary.get("counts") or {}
    base = f"candidates.field.{check.field}"
    if check.metric == "escape_rate":
        return _share(counts.get(f"{base}.escapes", 0), counts.get(f"{base}.labelled_wrong", 0))
    outcome = _OUTCOME_OF[check.metric]
    return _share(counts.get(f"{base}.outcome.{outcome}", 0), counts.get(base, 0))


def _absent(check: Check) -> str:
    if check.producer == EACH_PRODUCER:
        return "the run names no producer"
    if check.producer is not None:
        return f"producer {check.producer}: {ABSENT.get(check.metric, 'no value for it')}"
    if check.field is not None:
        if check.metric == "escape_rate":
            return f"no candidate of field {check.field} is labelled wrong (no labels)"
        return f"the run has no candidates of field {check.field}"
    return ABSENT.get(check.metric, "the summary has no value for it")


def _fmt(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.4f}".rstrip("0")


def _crossed(
    bounds: Bounds, value: float, baseline: float | None
) -> list[tuple[str, float | None]]:
    """The bounds of one level that ``value`` crosses, as ``(text, baseline)``."""
    out: list[tuple[str, float | None]] = []
    if bounds.min is not None and value < bounds.min:
        out.append((f"min {_fmt(bounds.min)}", None))
    if bounds.max is not None and value > bounds.max:
        out.append((f"max {_fmt(bounds.max)}", None))
    if bounds.max_drop is not None and baseline is not None:
        drop = round(baseline - value, 9)
        if drop > bounds.max_drop:
            out.append((f"max_drop {_fmt(bounds.max_drop)} (dropped {_fmt(drop)})", baseline))
    return out


def _held(bounds: Bounds | None) -> list[str]:
    if bounds is None:
        return []
    parts = [
        f"{name} {_fmt(v)}"
        for name, v in (("min", bounds.min), ("max", bounds.max), ("max_drop", bounds.max_drop))
        if v is not None
    ]
    return parts


def check_one(check: Check, summary: Summary, baseline: tuple[str, Summary] | None) -> CheckResult:
    value = metric_value(summary, check)
    base_value = metric_value(baseline[1], check) if baseline else None
    base_run = baseline[0] if baseline else None
    common = {
        "check": check.label,
        "metric": check.metric,
        "field": check.field,
        "producer": check.producer,
    }
    if value is None:
        return CheckResult(
            **common, status="skipped", value=None, message=f"skipped: {_absent(check)}"
        )
    wants_drop = any(b is not None and b.max_drop is not None for b in (check.warn, check.fail))
    note = ""
    if wants_drop and base_value is None:
        note = (
            f"; max_drop not checked: no {check.against.replace('_', ' ')} run"
            if baseline is None
            else f"; max_drop not checked: run {base_run} has no value ({_absent(check)})"
        )
    for level in ("fail", "warn"):
        bounds = getattr(check, level)
        crossed = _crossed(bounds, value, base_value) if bounds is not None else []
        if crossed:
            text = "; ".join(t for t, _ in crossed)
            against = (
                f" against run {base_run} ({_fmt(base_value)})"
                if any(b is not None for _, b in crossed) and base_value is not None
                else ""
            )
            return CheckResult(
                **common,
                status=level,  # type: ignore[arg-type]
                value=value,
                bound=text,
                baseline=base_value,
                baseline_run=base_run if base_value is not None else None,
                message=f"{check.label} = {_fmt(value)}: {level}, crosses {text}{against}{note}",
            )
    held = [f"fail {t}" for t in _held(check.fail)] + [f"warn {t}" for t in _held(check.warn)]
    return CheckResult(
        **common,
        status="pass",
        value=value,
        bound=", ".join(held),
        baseline=base_value,
        baseline_run=base_run if base_value is not None else None,
        message=f"{check.label} = {_fmt(value)}: pass ({', '.join(held)}){note}",
    )


def evaluate(
    spec: GateSpec, summary: Summary, baselines: dict[str, tuple[str, Summary] | None] | None = None
) -> GateResult:
    """The gate's verdict on one summary: fail if any check fails, else warn if any warns."""
    baselines = baselines or {}
    checks = [one for c in spec.checks for one in _each(c, summary)]
    results = [check_one(c, summary, baselines.get(c.against)) for c in checks]
    statuses = {r.status for r in results}
    verdict = "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"
    return GateResult(
        run_id=summary.get("run_id"),
        status=verdict,  # type: ignore[arg-type]
        exit_code=EXIT_OF[verdict],
        checks=results,
    )


def _each(check: Check, summary: Summary) -> list[Check]:
    """A check for each producer the summary names (``producer: "*"``), or the check."""
    if check.producer != EACH_PRODUCER:
        return [check]
    keys = list(summary.get("producers") or {})
    return [check.model_copy(update={"producer": key}) for key in keys] or [check]


# How far back the catalog is searched for a baseline (runs of other corpora included).
MAX_CATALOG_SCAN = 10_000
BASELINE_STATES = ("succeeded", "partially_failed")


def _older_entries(store: ObjectStore, run_id: str, created_at: str) -> Iterator[dict[str, Any]]:
    """Catalog entries of the runs created before this one, newest first."""
    seen = 0
    start = catalog_key(run_id, created_at)
    for page in store.list_pages(CATALOG_RUNS, start_after=start):
        for info in page:
            seen += 1
            if seen > MAX_CATALOG_SCAN:
                return
            try:
                entry = json.loads(store.get(info.key))
            except (KeyError, ValueError):
                continue  # a bad entry hides no other run
            if isinstance(entry, dict) and run_id_of_catalog_key(info.key) != run_id:
                yield entry


def find_baselines(
    store: ObjectStore, summary: Summary, wanted: set[str], summary_of: SummaryOf
) -> dict[str, tuple[str, Summary] | None]:
    """For each baseline wanted: the newest earlier finished run (not a dry run) of the same
    corpus (``corpus_previous``), or of the same corpus and policy version
    (``policy_previous``), with its summary; None when there is none."""
    out: dict[str, tuple[str, Summary] | None] = dict.fromkeys(wanted)
    run_id, created = summary.get("run_id"), summary.get("created_at")
    if not wanted or not run_id or not created:
        return out
    corpus = summary.get("corpus")
    policy = (summary.get("policy") or {}).get("ref")
    for entry in _older_entries(store, run_id, created):
        if entry.get("corpus") != corpus or entry.get("dry_run"):
            continue
        if entry.get("state") not in BASELINE_STATES:
            continue
        for against in [a for a, v in out.items() if v is None]:
            if against == "policy_previous" and entry.get("policy") != policy:
                continue
            found = summary_of(str(entry.get("id")))
            if found is not None:
                out[against] = (str(entry["id"]), found)
        if all(v is not None for v in out.values()):
            break
    return out


def gate_run(
    spec: GateSpec, summary: Summary, store: ObjectStore, summary_of: SummaryOf
) -> GateResult:
    """The gate's verdict on a finished run, its baselines found in ``store``'s catalog."""
    baselines = find_baselines(store, summary, spec.needs_baseline, summary_of)
    return evaluate(spec, summary, baselines)


def render(result: GateResult) -> str:
    """One line per check, then the verdict (what the CLI prints)."""
    lines = [f"{r.status.upper():7} {r.message}" for r in result.checks]
    lines.append(f"gate {result.status} (exit {result.exit_code})")
    return "\n".join(lines)


def gate_of_run(service: RunService, run_id: str, spec: GateSpec) -> GateResult:
    """The gate's verdict on a run of ``service`` (its summary and catalog in its output);
    :class:`RunNotReady` when it has not ended with a summary."""
    from groundswell.shared.results.service import RunNotReady, finished_record
    from groundswell.shared.runs.models import RunNotFound

    record = finished_record(service, run_id, "gated")
    summary = service.summary(run_id)
    if summary is None:
        raise RunNotReady(f"run {run_id} ended {record.state} without a summary")

    def summary_of(other: str) -> Summary | None:
        try:
            return service.summary(other)
        except (RunNotFound, ValueError, KeyError):
            return None

    return gate_run(spec, summary, service.store(record.output), summary_of)
