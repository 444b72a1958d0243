"""What changed between two runs of one corpus: rates side by side, and what moved.

This is gtrex's ``sensitivity`` at corpus scale, and what a user looks at before adopting a
policy version. Units whose receipt is the same in both runs cannot have moved, so only the
receipts that differ are read. Both indexes are sorted by (doc_id, kind), so the diff is a
merge join in flat memory, written once in pieces; its pages then cost a piece read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from groundswell.shared.runs.index import row_key
from groundswell.shared.storage import ObjectStore
from groundswell.shared.summary import OUTCOMES, RIGHT_OUTCOMES, TIERS

DIFF_PIECE_ITEMS = 4096


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
    for name, _ in RIGHT_OUTCOMES:  # what each policy does with the values labelled right
        key = f"right_values_{name}"
        rows.append((f"right values {name.replace('_', ' ')}", ra.get(key), rb.get(key)))
    if "repairs_kept" in ra or "repairs_kept" in rb:  # a run under a policy that repairs
        rows.append(("claims kept by repair", ra.get("repairs_kept"), rb.get("repairs_kept")))
        rows.append(("wrong repair rate", ra.get("wrong_repair_rate"), rb.get("wrong_repair_rate")))
    return [{"rate": name, "a": x, "b": y, "change_pp": _pp(x, y)} for name, x, y in rows]


# The labelled candidates side by side, as counts: (row name, counter).
LABELLED_ROWS = (
    ("candidates labelled right", "candidates.labelled_right"),
    ("right values admitted", "candidates.right_admitted"),
    ("right values to review", "candidates.right_reviewed"),
    ("right values rejected", "candidates.false_rejections"),
    ("candidates labelled wrong", "candidates.labelled_wrong"),
    ("escapes (wrong values admitted)", "candidates.escapes"),
    ("wrong values to review", "candidates.wrong_reviewed"),
    ("wrong values rejected", "candidates.wrong_rejected"),
    ("reviews (needs_verification)", "candidates.outcome.needs_verification"),
)


def labelled_rows(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """What each run did with the candidates its gold labels judge, as counts side by side
    with the change (B minus A): escapes, right values admitted, sent to review, rejected.
    Empty when neither run has a labelled candidate."""
    ca, cb = a.get("counts", {}), b.get("counts", {})
    if not (ca.get("candidates.labelled") or cb.get("candidates.labelled")):
        return []
    return [
        {
            "count": name,
            "a": ca.get(key, 0),
            "b": cb.get(key, 0),
            "change": cb.get(key, 0) - ca.get(key, 0),
        }
        for name, key in LABELLED_ROWS
    ]


# Per producer, the rates side by side (producers.rates' names), with their row names.
PRODUCER_RATES = (
    ("grounding rate", "grounding_rate"),
    ("claim escape rate", "claims_escape_rate"),
    ("candidate escape rate", "candidates_escape_rate"),
    ("review rate", "review_rate"),
    ("rejected rate", "rejected_rate"),
    ("disagreement rate", "disagreement_rate"),
)


def producer_rows(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Each producer's rates in run A and run B (a producer only one run has: None on the
    other side), A's producers first, in the summaries' order (largest first); the rows
    whose rate neither run has are left out. Empty when neither run names a producer."""
    pa, pb = a.get("producers") or {}, b.get("producers") or {}
    rows = []
    for key in [*pa, *(k for k in pb if k not in pa)]:
        ra, rb = (pa.get(key) or {}).get("rates", {}), (pb.get(key) or {}).get("rates", {})
        for name, rate in PRODUCER_RATES:
            x, y = ra.get(rate), rb.get(rate)
            if x is not None or y is not None:
                rows.append({"producer": key, "rate": name, "a": x, "b": y, "change_pp": _pp(x, y)})
    return rows


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
        if "repair" in row:  # under a policy that repairs: what the cascade did
            out[key]["repair"] = row["repair"].get("action")
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
        if x is not None and y is not None and all(x.get(k) == y.get(k) for k in keys):
            continue
        change = (
            "added"
            if x is None
            else "removed"
            if y is None
            else next(k for k in keys if x.get(k) != y.get(k))
        )
        out.append(
            {"doc_id": doc_id, "kind": kind, "id": item_id, "change": change, "a": x, "b": y}
        )
    return out


def _join(
    a: Iterator[dict[str, Any]], b: Iterator[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """Pair the rows of two indexes sorted by (doc_id, kind): a merge join, one row each."""
    ra, rb = next(a, None), next(b, None)
    while ra is not None or rb is not None:
        ka = row_key(ra) if ra is not None else None
        kb = row_key(rb) if rb is not None else None
        if kb is None or (ka is not None and ka < kb):
            yield ra, None
            ra = next(a, None)
        elif ka is None or kb < ka:
            yield None, rb
            rb = next(b, None)
        else:
            yield ra, rb
            ra, rb = next(a, None), next(b, None)


def moved_items(
    rows_a: Iterator[dict[str, Any]],
    rows_b: Iterator[dict[str, Any]],
    load: Callable[[str], dict[str, Any] | None],
) -> Iterator[dict[str, Any]]:
    """What moved from run A to run B, document by document; only differing receipts are read."""
    for ea, eb in _join(rows_a, rows_b):
        if ea and eb and ea.get("receipt_sha256") == eb.get("receipt_sha256"):
            continue
        row = ea or eb
        assert row is not None
        kind, doc_id = row["kind"], row["doc_id"]
        ra = load(ea["receipt"]) if ea and ea.get("receipt") else None
        rb = load(eb["receipt"]) if eb and eb.get("receipt") else None
        if kind == "verify":
            keys = ("verdict", "tier", "repair")
            yield from _moved(doc_id, "claim", _claims(ra), _claims(rb), keys)
        else:
            yield from _moved(doc_id, "candidate", _decisions(ra), _decisions(rb), ("outcome",))


def build_diff(
    store: ObjectStore,
    prefix: str,
    summary_a: dict[str, Any],
    summary_b: dict[str, Any],
    items: Iterable[dict[str, Any]],
) -> dict[str, Any]:
    """Write the moved items in pieces under ``prefix`` and a manifest; return the manifest.

    Streams: one piece is held at a time, so a diff of two runs of millions of units costs
    a read of both indexes and of the receipts that differ, and flat memory.
    """
    pieces: list[dict[str, Any]] = []
    buffer: list[bytes] = []
    total, documents, last_doc = 0, 0, None

    def flush() -> None:
        key = f"{prefix}{len(pieces):06d}.jsonl"
        store.put(key, b"".join(buffer))
        pieces.append({"key": key, "items": len(buffer)})
        buffer.clear()

    for item in items:
        total += 1
        if item["doc_id"] != last_doc:
            documents, last_doc = documents + 1, item["doc_id"]
        buffer.append(json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n")
        if len(buffer) >= DIFF_PIECE_ITEMS:
            flush()
    if buffer:
        flush()
    manifest = {
        "run_a": summary_a.get("run_id"),
        "run_b": summary_b.get("run_id"),
        "corpus": summary_b.get("corpus"),
        "policy_a": summary_a.get("policy"),
        "policy_b": summary_b.get("policy"),
        "rates": rate_rows(summary_a, summary_b),
        "labelled": labelled_rows(summary_a, summary_b),
        **({"producers": rows} if (rows := producer_rows(summary_a, summary_b)) else {}),
        "moved_total": total,
        "documents_moved": documents,
        "pieces": pieces,
    }
    store.put(prefix + "manifest.json", json.dumps(manifest, indent=1).encode())
    return manifest


def diff_page(
    store: ObjectStore, manifest: dict[str, Any], offset: int, limit: int
) -> list[dict[str, Any]]:
    """Moved items ``offset`` to ``offset + limit``: only the pieces that hold them are read."""
    out: list[dict[str, Any]] = []
    start = 0
    for piece in manifest["pieces"]:
        end = start + piece["items"]
        if end > offset and start < offset + limit:
            lines = store.get(piece["key"]).splitlines()
            lo, hi = max(0, offset - start), min(piece["items"], offset + limit - start)
            out += [json.loads(line) for line in lines[lo:hi]]
        if end >= offset + limit:
            break
        start = end
    return out
