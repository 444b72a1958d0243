"""A run's index and summary, built the same way for the pipeline and the in-process runner."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from shared.canonical import canonical_json
from shared.summary import merkle_root, rates

MAX_SUMMARY_ERRORS = 100


def run_prefix(run_id: str) -> str:
    return f"runs/{run_id}/"


def unit_counts(counters: dict[str, int]) -> dict[str, dict[str, int]]:
    """``units.<kind>.<status>`` counters as ``{kind: {planned, computed, cached, failed, done}}``."""
    out: dict[str, dict[str, int]] = {}
    for kind in ("verify", "admit"):
        row = {s: counters.get(f"units.{kind}.{s}", 0) for s in ("computed", "cached", "failed")}
        would = {s: counters.get(f"units.{kind}.{s}", 0) for s in ("would_compute", "would_reuse")}
        row["done"] = sum(row.values()) + sum(would.values())
        if any(would.values()):
            row.update(would)
        row["planned"] = counters.get(f"units.{kind}.planned", row["done"])
        out[kind] = row
    return out


def build_index(entries: Iterable[tuple[str, dict[str, Any]]]) -> tuple[bytes, str, list[dict]]:
    """The run index (JSON Lines sorted by unit) and its Merkle root.

    The root covers what a run produced (unit, receipt digest, failure), not whether a
    receipt was computed or reused, so two runs with identical outputs share a root.
    """
    rows = [{"unit": unit, **entry} for unit, entry in sorted(entries, key=lambda e: e[0])]
    lines = b"".join(canonical_json(row) + b"\n" for row in rows)
    leaves = (
        canonical_json(
            {
                "unit": r["unit"],
                "receipt_sha256": r.get("receipt_sha256"),
                "failed": r["status"] == "failed",
            }
        )
        for r in rows
    )
    return lines, merkle_root(leaves), rows


def build_summary(
    run: dict[str, Any], counters: dict[str, int], rows: list[dict[str, Any]], merkle: str
) -> dict[str, Any]:
    counts = {
        k: v for k, v in sorted(counters.items()) if v and not k.startswith(("units.", "reasons."))
    }
    reasons: dict[str, dict[str, int]] = {}
    for key, value in counters.items():
        if key.startswith("reasons.") and value:
            kind, _, reason = key[len("reasons.") :].partition(".")
            reasons.setdefault(kind, {})[reason] = value
    documents: dict[str, int] = {}
    for row in rows:
        if row.get("bytes") is not None:
            documents[row["doc_id"]] = row["bytes"]
    errors: list[dict[str, Any]] = []
    for row in rows:
        for error in row.get("errors", ()):
            if len(errors) < MAX_SUMMARY_ERRORS:
                errors.append({"unit": row["unit"], **error})
    failed_units = sum(1 for r in rows if r["status"] == "failed")
    return {
        "run_id": run.get("id"),
        "corpus": run.get("corpus"),
        "output": run.get("output"),
        "policy": run.get("policy"),
        "engines": run.get("engines"),
        "documents": len(documents),
        "bytes": sum(documents.values()),
        "units": unit_counts(counters),
        "reasons": reasons,
        "failed_units": failed_units,
        "counts": counts,
        "rates": rates(counts),
        "errors_total": counts.get("errors", 0),
        "errors": errors,
        "index": {
            "key": run_prefix(run["id"]) + "index.jsonl" if run.get("id") else None,
            "units": len(rows),
            "merkle_root": merkle,
        },
    }


def final_state(summary: dict[str, Any]) -> str:
    units = summary["index"]["units"]
    if units and summary["failed_units"] == units:
        return "failed"
    if summary["failed_units"] or summary["errors_total"]:
        return "partially_failed"
    return "succeeded"


def dumps(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
