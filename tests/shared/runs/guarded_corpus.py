"""A tiny labelled corpus on which the ``guarded`` admission policy catches what ``default``
lets through: a value taken from the neighbouring column of its table row.

Each document is a statement with a tab-separated table (two years side by side) and three
candidates for this year's figures: the right cell (admitted under both policies), the cell
of the year before (labelled wrong: groundgate admits it, the column guard sends it to review
with VALUE_NOT_IN_COLUMN) and a number the document does not hold (rejected under both).
"""

from __future__ import annotations

import json
from typing import Any

from groundswell.shared.storage import ObjectStore

SCHEMA = {
    "fields": {
        "net_sales_2024": {"type": "number", "aliases": ["Net sales", "2024"]},
        "cost_of_sales_2024": {"type": "number", "aliases": ["Cost of sales", "2024"]},
        "gross_margin_2024": {"type": "number", "aliases": ["Gross margin", "2024"]},
    }
}
# doc id -> (net sales, cost of sales, gross margin) for 2024, then for 2023
FIGURES = {
    "acme-2024": ((391035, 210352, 180683), (383285, 214137, 169148)),
    "birch-2024": ((52410, 31877, 20533), (49902, 30611, 19291)),
    "cobalt-2024": ((8761, 5120, 3641), (8112, 4987, 3125)),
}
# Per document: one right value admitted, one escape under default caught by the guard, one
# wrong value rejected by both.
RIGHT, NEIGHBOUR, ABSENT = "right", "neighbour-column", "absent"


def document(this_year: tuple[int, ...], last_year: tuple[int, ...]) -> str:
    rows = zip(("Net sales", "Cost of sales", "Gross margin"), this_year, last_year, strict=True)
    lines = [f"{label}\t{a:,}\t{b:,}" for label, a, b in rows]
    return (
        "Consolidated Statements of Operations\n\n\t2024\t2023\n"
        + "\n".join(lines)
        + "\n\nThe table compares the fiscal year with the one before.\n"
    )


def candidates(doc_id: str, this_year: tuple[int, ...], last_year: tuple[int, ...]) -> list:
    def cand(kind: str, field: str, value: int) -> dict[str, Any]:
        written = f"{value:,}"
        return {
            "id": f"{doc_id}:{kind}",
            "field": field,
            "value": str(value),
            "evidence": {"text": written},
        }

    return [
        cand(RIGHT, "net_sales_2024", this_year[0]),
        cand(NEIGHBOUR, "cost_of_sales_2024", last_year[1]),  # the 2023 cell of its row
        cand(ABSENT, "gross_margin_2024", this_year[2] + 7),
    ]


def write_guarded_corpus(store: ObjectStore) -> dict[str, dict[str, bool]]:
    """Write the corpus (documents, candidates, one claim each, labels, schema) into
    ``store``; returns the candidate labels by document."""
    store.put("schema.json", json.dumps(SCHEMA).encode())
    labels: dict[str, dict[str, bool]] = {}
    for doc_id, (this_year, last_year) in FIGURES.items():
        store.put(f"documents/{doc_id}.txt", document(this_year, last_year).encode())
        store.put(
            f"candidates/{doc_id}.json",
            json.dumps(candidates(doc_id, this_year, last_year)).encode(),
        )
        claim = {"id": f"{doc_id}:q", "claim": "Consolidated Statements of Operations"}
        store.put(f"claims/{doc_id}.jsonl", (json.dumps(claim) + "\n").encode())
        gold = {f"{doc_id}:{RIGHT}": True, f"{doc_id}:{NEIGHBOUR}": False}
        gold[f"{doc_id}:{ABSENT}"] = False
        labels[doc_id] = gold
        store.put(
            f"labels/{doc_id}.json",
            json.dumps({"claims": {claim["id"]: True}, "candidates": gold}).encode(),
        )
    return labels
