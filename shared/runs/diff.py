"""What changed between two runs of one corpus: rates side by side, and what moved.

This is gtrex's ``sensitivity`` at corpus scale, and what a user looks at before adopting a
policy version. Units whose receipt is the same in both runs cannot have moved, so only the
receipts that differ are read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shared.summary import OUTCOMES, TIERS


def _pp(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 100, 2)


def rate_rows(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    ra, rb = a.get("rates", {}), b.get("rates", {})
    rows: list[tuple[str, float | None, float | None]] = [
        ("claims accepted", ra.get("claims_accepted"), rb.get("claims_accepted"))
    ]
    for tier in TIERS:
        rows.append(
            (
                f"claims located through {tier}",
                ra.get("claims_located_through_tier", {}).get(tier),
                rb.get("claims_located_through_tier", {}).get(tier),
            )
        )
    for outcome in OUTCOMES:
        rows.append(
            (
                f"candidates {outcome}",
                ra.get("candidates", {}).get(outcome),
                rb.get("candidates", {}).get(outcome),
            )
        )
    rows.append(("claim escape rate", ra.get("claims_escape_rate"), rb.get("claims_escape_rate")))
    rows.append(
        (
            "candidate escape rate",
            ra.get("candidates_escape_rate"),
            rb.get("candidates_escape_rate"),
        )
    )
    return [{"rate": name, "a": x, "b": y, "change_pp": _pp(x, y)} for name, x, y in rows]


def _claims(receipt: dict[str, Any] | None) -> dict[Any, dict[str, Any]]:
    out: dict[Any, dict[str, Any]] = {}
    for row in (receipt or {}).get("records", ()):
        record, cert = row["record"], row["certificate"]
        key = record.get("id") if record.get("id") is not None else f"line {row.get('line')}"
        out[key] = {
            "claim": record.get("claim"),
            "verdict": cert.get("verdict"),
            "tier": cert.get("tier"),
        }
    return out


def _decisions(receipt: dict[str, Any] | None) -> dict[Any, dict[str, Any]]:
    out: dict[Any, dict[str, Any]] = {}
    seen: dict[Any, int] = {}
    for decision in ((receipt or {}).get("receipt") or {}).get("decisions", ()):
        cid = decision.get("candidate_id")
        n = seen[cid] = seen.get(cid, 0) + 1
        key = cid if n == 1 else f"{cid}#{n}"
        out[key] = {
            "field": decision.get("field"),
            "outcome": decision.get("outcome"),
            "codes": decision.get("codes", []),
        }
    return out


def _moved(
    doc_id: str, kind: str, a: dict[Any, dict], b: dict[Any, dict], keys: tuple[str, ...]
) -> list[dict[str, Any]]:
    out = []
    for item_id in sorted(set(a) | set(b), key=str):
        x, y = a.get(item_id), b.get(item_id)
        if x is not None and y is not None and all(x[k] == y[k] for k in keys):
            continue
        change = (
            "added"
            if x is None
            else "removed"
            if y is None
            else next(k for k in keys if x[k] != y[k])
        )
        out.append(
            {"doc_id": doc_id, "kind": kind, "id": item_id, "change": change, "a": x, "b": y}
        )
    return out


def diff_runs(
    summary_a: dict[str, Any],
    summary_b: dict[str, Any],
    index_a: Iterable[dict[str, Any]],
    index_b: Iterable[dict[str, Any]],
    load: Callable[[str], dict[str, Any] | None],
) -> dict[str, Any]:
    """The diff of run B against run A. ``load(receipt_key)`` reads a receipt of either run."""
    rows_a = {r["unit"]: r for r in index_a}
    rows_b = {r["unit"]: r for r in index_b}
    moved: list[dict[str, Any]] = []
    for unit in sorted(set(rows_a) | set(rows_b)):
        ea, eb = rows_a.get(unit), rows_b.get(unit)
        if ea and eb and ea.get("receipt_sha256") == eb.get("receipt_sha256"):
            continue
        kind, _, doc_id = unit.partition("/")
        ra = load(ea["receipt"]) if ea and ea.get("receipt") else None
        rb = load(eb["receipt"]) if eb and eb.get("receipt") else None
        if kind == "verify":
            moved += _moved(doc_id, "claim", _claims(ra), _claims(rb), ("verdict", "tier"))
        else:
            moved += _moved(doc_id, "candidate", _decisions(ra), _decisions(rb), ("outcome",))
    return {
        "run_a": summary_a.get("run_id"),
        "run_b": summary_b.get("run_id"),
        "corpus": summary_b.get("corpus"),
        "policy_a": summary_a.get("policy"),
        "policy_b": summary_b.get("policy"),
        "rates": rate_rows(summary_a, summary_b),
        "moved_total": len(moved),
        "documents_moved": len({m["doc_id"] for m in moved}),
        "moved": moved,
    }
