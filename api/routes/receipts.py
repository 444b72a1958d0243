"""Receipts of a run: the index with cursor pagination, and one document's receipts."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Response, status
from pydantic import ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.params import Cursor, decode_cursor
from groundswell.api.routes.runs import get_run
from groundswell.api.schemas import DocumentReceipts, ReceiptPage, ReceiptRow
from groundswell.shared.receipts import ReceiptError
from groundswell.shared.results.service import RunResults

router = APIRouter(prefix="/v1/runs/{run_id}", tags=["receipts"])


def _encode(cursor: dict[str, Any]) -> str:
    data = json.dumps(cursor, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class _IndexCursor(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    k: Annotated[list[str], Field(min_length=2, max_length=2)]  # the last (doc_id, kind)


class _LiveCursor(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    s: str | None  # the listing key before a group of segments
    o: Annotated[int, Field(ge=0, le=10**9)]  # rows of that group already shown


_CURSOR = TypeAdapter(_IndexCursor | _LiveCursor)


def _decode(cursor: str) -> dict[str, Any]:
    return dict(decode_cursor(cursor, _CURSOR))


@router.get("/receipts", response_model=ReceiptPage, operation_id="list_receipts")
def list_receipts(
    run_id: str,
    service: ServiceDep,
    key: Principal,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ReceiptPage:
    """A finished run's units in (doc_id, kind) order; a running run's units recorded so far,
    in batch order. Each page reads one piece of the index (or a few segments)."""
    get_run(service, run_id, key)
    rows, following = RunResults(service).receipts_page(
        run_id, _decode(cursor) if cursor else None, limit
    )
    return ReceiptPage(
        items=[
            ReceiptRow(**{k: r.get(k) for k in ReceiptRow.model_fields if k in r}) for r in rows
        ],
        next_cursor=_encode(following) if following else None,
        has_next_page=following is not None,
    )


@router.get(
    "/documents/{doc_id}/receipts",
    response_model=DocumentReceipts,
    operation_id="document_receipts",
)
def document_receipts(
    run_id: str, doc_id: str, service: ServiceDep, key: Principal
) -> DocumentReceipts:
    """The verification and admission receipts of one document in a run."""
    get_run(service, run_id, key)
    try:
        found = RunResults(service).document_receipts(run_id, doc_id)
    except ReceiptError as exc:
        raise HTTPException(status.HTTP_500_INTERNAL_SERVER_ERROR, str(exc)) from None
    if not found["units"]:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"run {run_id} has no unit for document {doc_id}"
        )
    return DocumentReceipts(**found)


@router.get(
    "/documents/{doc_id}/pages/{page}.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
    operation_id="document_page_image",
)
def document_page_image(
    run_id: str,
    doc_id: str,
    page: Annotated[int, Path(ge=1, le=100_000)],
    service: ServiceDep,
    key: Principal,
) -> Response:
    """Page ``page`` of the PDF the document was read from, as a PNG (the run report's page
    images): rendered once per source sha256, page and GROUNDSWELL_PAGE_IMAGE_DPI and kept;
    503 with Retry-After while every render slot is taken."""
    from groundswell.api.routes.review_page import page_png

    return page_png(service, get_run(service, run_id, key), doc_id, page)
