"""The claims ledger over HTTP: claims, disagreements, paths and search, read a page at a time
(``cursor`` from the previous page's ``next_cursor``). Keys with the ``runs`` scope."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, status

from groundswell.api.deps import Principal, SettingsDep
from groundswell.shared.ledger.queries import BadCursor
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.settings import Settings

router = APIRouter(prefix="/v1/ledger", tags=["ledger"])

_ledgers: dict[str, Ledger] = {}


def get_ledger(settings: SettingsDep) -> Ledger:
    """One open ledger (an engine and its pool) per URL, migrated when first opened."""
    url = settings.ledger_database_url
    found = _ledgers.get(url)
    if found is None:
        try:
            found = _ledgers[url] = Ledger.open(url)
        except Exception as exc:
            raise HTTPException(
                status.HTTP_503_SERVICE_UNAVAILABLE, f"the ledger cannot be opened: {exc}"
            ) from exc
    return found


LedgerDep = Annotated[Ledger, Depends(get_ledger)]
Limit = Annotated[int, Query(ge=1, le=1000)]


def _paged(query) -> dict[str, Any]:
    try:
        return query().as_dict()
    except BadCursor as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None


@router.get("/claims", operation_id="ledger_claims")
def list_claims(
    ledger: LedgerDep,
    _: Principal,
    document: str | None = None,
    relation: str | None = None,
    entity: Annotated[str | None, Query(description="an entity id or label, either side")] = None,
    modality: str | None = None,
    cursor: str | None = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """Claims in id order, each with its asserter, modality, document and span."""
    from groundswell.shared.ledger.queries import claims

    return _paged(
        lambda: claims(
            ledger,
            document=document,
            relation=relation,
            entity=entity,
            modality=modality,
            cursor=cursor,
            limit=limit,
        )
    )


@router.get("/disagreements", operation_id="ledger_disagreements")
def list_disagreements(
    ledger: LedgerDep,
    _: Principal,
    kind: Literal["contradiction", "objects", "facts"] = "contradiction",
    subject: Annotated[
        str | None, Query(description="only about this entity (a label or an entity id)")
    ] = None,
    relation: Annotated[str | None, Query(description="a relation (for facts: a field)")] = None,
    resolved: Annotated[bool, Query(description="entities resolve grouped are one")] = False,
    cursor: str | None = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Disagreements of one kind, each side with its asserter, modality, document and span."""
    from groundswell.shared.ledger.queries import disagreements

    return _paged(
        lambda: disagreements(
            ledger,
            kind,
            subject=subject,
            relation=relation,
            resolved=resolved,
            cursor=cursor,
            limit=limit,
        )
    )


@router.get("/path", operation_id="ledger_path")
def find_path(
    ledger: LedgerDep,
    _: Principal,
    start: str,
    goal: str,
    modality: Annotated[list[str] | None, Query()] = None,
    relation: Annotated[list[str] | None, Query()] = None,
    max_hops: Annotated[int, Query(ge=1, le=32)] = 8,
) -> dict[str, Any]:
    """The shortest chain of claims between two entities (``found`` false, with the reason,
    when there is none)."""
    from groundswell.shared.ledger.path import path

    return path(
        ledger, start, goal, modality=modality, relations=relation, max_hops=max_hops
    ).as_dict()


@router.get("/search", operation_id="ledger_search")
def search_claims(
    ledger: LedgerDep,
    _: Principal,
    q: Annotated[str, Query(min_length=1, max_length=1000)],
    cursor: str | None = None,
    limit: Limit = 15,
) -> dict[str, Any]:
    """Claims whose evidence quote has any word of ``q`` (stemmed), best first."""
    from groundswell.shared.ledger.search import search

    try:
        return search(ledger, q, cursor=cursor, limit=limit).as_dict()
    except ValueError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None


def close_ledgers(_settings: Settings | None = None) -> None:
    """Dispose of the open ledgers (tests, shutdown)."""
    while _ledgers:
        _ledgers.popitem()[1].close()
