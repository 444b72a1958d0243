"""Receipts of a run: the index with cursor pagination, and one document's receipts."""

from __future__ import annotations

import base64
import json
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from api.deps import Principal, ServiceDep
from api.routes.runs import get_run
from api.schemas import DocumentReceipts, ReceiptPage, ReceiptRow
from shared.receipts import ReceiptError, open_receipt
from shared.runs.finalize import run_prefix
from shared.runs.units import unit_key
from shared.storage import open_store

router = APIRouter(prefix="/v1/runs/{run_id}", tags=["receipts"])


def _encode(unit: str) -> str:
    return base64.urlsafe_b64encode(unit.encode()).decode().rstrip("=")


def _decode(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid cursor") from None


@router.get("/receipts", response_model=ReceiptPage, operation_id="list_receipts")
def list_receipts(
    run_id: str,
    service: ServiceDep,
    _: Principal,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ReceiptPage:
    record = get_run(service, run_id)
    store = open_store(record.output, service.settings)
    rows = _index_rows(store, run_id)
    if rows is None:
        # Still running: the units done so far, from the coordination state.
        rows = sorted(
            ({"unit": u, **e} for u, e in service.runs.done_entries(run_id)),
            key=lambda r: r["unit"],
        )
    after = _decode(cursor) if cursor else None
    if after is not None:
        rows = [r for r in rows if r["unit"] > after]
    page = rows[:limit]
    more = len(rows) > limit
    return ReceiptPage(
        items=[
            ReceiptRow(**{k: r.get(k) for k in ReceiptRow.model_fields if k in r}) for r in page
        ],
        next_cursor=_encode(page[-1]["unit"]) if more and page else None,
        has_next_page=more,
    )


def _index_rows(store, run_id: str) -> list[dict] | None:
    try:
        data = store.get(run_prefix(run_id) + "index.jsonl")
    except KeyError:
        return None
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@router.get(
    "/documents/{doc_id}/receipts",
    response_model=DocumentReceipts,
    operation_id="document_receipts",
)
def document_receipts(
    run_id: str, doc_id: str, service: ServiceDep, _: Principal
) -> DocumentReceipts:
    """The verification and admission receipts of one document in a run."""
    record = get_run(service, run_id)
    store = open_store(record.output, service.settings)
    index: list[dict] | None = None
    units: dict[str, dict] = {}
    receipts: dict[str, dict | None] = {"verify": None, "admit": None}
    for kind in receipts:
        unit = unit_key(kind, doc_id)
        entry = service.runs.done_entry(run_id, unit)
        if entry is None:  # after a finished run's state expired: the index has it
            index = _index_rows(store, run_id) if index is None else index
            entry = next((r for r in index or () if r.get("unit") == unit), None)
        if entry is None:
            continue
        units[kind] = entry
        key = entry.get("receipt")
        if key:
            try:
                receipts[kind] = open_receipt(store.get(key), key)
            except (KeyError, ReceiptError) as exc:
                raise HTTPException(
                    status.HTTP_500_INTERNAL_SERVER_ERROR, f"receipt {key}: {exc}"
                ) from None
    if not units:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"run {run_id} has no unit for document {doc_id}"
        )
    return DocumentReceipts(run_id=run_id, doc_id=doc_id, units=units, **receipts)
