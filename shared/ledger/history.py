"""The history of a fact under reprocessing: its values across runs and policy versions.

A run that loads its ledger (``ledger`` on) writes each admitted fact as a claim of the
document with a ``facts`` row naming the run, the policy version and the receipt. A
reprocessing run under another policy version adds its own claims beside the old ones, so
the facts of one (document, field, key) are its history: one entry per (policy version,
receipt), the value each gave and the last run that loaded it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from groundswell.shared.ledger.queries import (
    BadCursor,
    Page,
    _expanding,
    corpus_clause,
    decode_cursor,
    encode_cursor,
)
from groundswell.shared.ledger.store import Ledger

_HISTORY = """
SELECT f.claim_id, f.field, f.key, f.value, f.unit, f.run_id, f.policy_version,
       f.receipt_digest, c.recorded_at, e.start, e."end", e.text
FROM facts f
JOIN claims c ON c.id = f.claim_id
LEFT JOIN evidence e ON e.claim_id = f.claim_id AND e.seq = 0
WHERE c.document_id = :doc AND f.field = :field {key}
ORDER BY c.recorded_at, f.run_id, f.policy_version, f.key, f.claim_id
{page}"""


def fact_history(
    ledger: Ledger, doc_id: str, field: str, key: str | None = None
) -> list[dict[str, Any]]:
    """The facts of ``doc_id``'s ``field`` (of ``key``, when given; "" is a field with one
    value), oldest first: claim, key, value, unit, run, policy version, receipt digest, when
    it was recorded, and its evidence span."""
    return _history(ledger, doc_id, field, key, None)


def history_page(
    ledger: Ledger,
    doc_id: str,
    field: str,
    key: str | None = None,
    *,
    cursor: str | None = None,
    limit: int = 100,
    sees: Callable[[str], bool] | None = None,
) -> Page:
    """``fact_history`` a page at a time (the cursor holds the offset: a fact has as many
    entries as runs and policy versions that loaded them, a handful to some hundreds); with
    ``sees`` (a team key's), the facts of the corpora it accepts only."""
    offset = (decode_cursor(cursor, 1) or [0])[0]
    if not isinstance(offset, int) or offset < 0:
        raise BadCursor("invalid cursor")
    rows = _history(ledger, doc_id, field, key, (limit + 1, offset), sees)
    more = len(rows) > limit
    return Page(rows[:limit], encode_cursor([offset + limit]) if more else None)


def _history(
    ledger: Ledger,
    doc_id: str,
    field: str,
    key: str | None,
    page: tuple[int, int] | None,
    sees: Callable[[str], bool] | None = None,
) -> list[dict[str, Any]]:
    """The history's rows; ``page``: (limit, offset), bound like every other value."""
    params: dict[str, Any] = {"doc": doc_id, "field": field}
    paged = ""
    if page is not None:
        paged = "LIMIT :limit OFFSET :offset"
        params["limit"], params["offset"] = page
    where = ""
    if key is not None:
        where, params["key"] = "AND f.key = :key", key
    with ledger.engine.connect() as conn:
        if sees is not None:
            where += f" AND {corpus_clause(conn, sees, params)}"
        sql = _expanding(_HISTORY.format(key=where, page=paged), params)
        rows = conn.execute(sql, params).mappings().all()
    return [
        {
            "claim_id": r["claim_id"],
            "field": r["field"],
            "key": r["key"],
            "value": json.loads(r["value"]),
            "unit": r["unit"],
            "run_id": r["run_id"],
            "policy_version": r["policy_version"],
            "receipt_digest": r["receipt_digest"],
            "recorded_at": str(r["recorded_at"]),
            "span": None
            if r["start"] is None
            else {"start": r["start"], "end": r["end"], "text": r["text"]},
        }
        for r in rows
    ]
