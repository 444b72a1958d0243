"""The claims ledger over HTTP: claims, disagreements, paths, search, a fact's history, the
review queue of held merges, read a page at a time (``cursor`` from the previous page's
``next_cursor``), and answers to that queue; its state; exports, streamed. Keys with the
``runs`` scope; answering the review queue (changing entity merges) needs ``review``;
recording a claim (``POST /claims``, checked as an import checks its line) ``record``."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from groundswell.api.deps import Principal, Recorder, Reviewer, SettingsDep, require_api_key
from groundswell.api.params import Cursor
from groundswell.api.streaming import streamed
from groundswell.shared.settings import ApiKey, Settings

if TYPE_CHECKING:
    from starlette.responses import Response

    from groundswell.shared.ledger.store import Ledger


class LedgerRoute(APIRoute):
    """A ledger route whose database went away answers 503 (``unavailable``). Caught here,
    not by an app-wide exception handler, so that the API loads SQLAlchemy and psycopg with
    the first ledger request, not at start-up: an API that serves no ledger stays small."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answered(request: Request) -> Response:
            try:
                return await handler(request)
            except unavailable_errors() as exc:
                return unavailable(request, exc)

        return answered


router = APIRouter(prefix="/v1/ledger", tags=["ledger"], route_class=LedgerRoute)
log = logging.getLogger(__name__)

_ledgers: dict[str, Ledger] = {}


def open_ledger(settings: SettingsDep, _key: Annotated[ApiKey, Depends(require_api_key)]) -> Ledger:
    """One open ledger (an engine and its pool) per URL, migrated when first opened. Only for
    a caller with a key (the dependency is the routes' own, run once a request), and a 503
    that says no more than that: the database's host, port and user are logged here."""
    from groundswell.shared.ledger.store import Ledger

    url = settings.ledger_database_url
    found = _ledgers.get(url)
    if found is None:
        try:
            found = _ledgers[url] = Ledger.open(url)
        except Exception as exc:
            log.warning("the ledger %s cannot be opened: %s", _shown(url), exc)
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, UNAVAILABLE) from None
    return found


UNAVAILABLE = "ledger database unavailable"


def unavailable_errors() -> tuple[type[Exception], ...]:
    """What a ledger that cannot be reached raises in a route (SQLAlchemy's, and psycopg's
    own from the path search's raw cursor)."""
    import psycopg
    from sqlalchemy.exc import OperationalError

    return OperationalError, psycopg.OperationalError


def unavailable(_request: Request, exc: Exception) -> JSONResponse:
    """The app's answer to ``unavailable_errors``: a 503 that names no host, port or user;
    the cause (the driver's first line: host and port, never the password) goes to the log."""
    log.warning("the ledger database is unavailable: %s", str(exc).splitlines()[0])
    return JSONResponse(
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE, content={"detail": UNAVAILABLE}
    )


def _shown(url: str) -> str:
    """``url`` for a log line, without its password."""
    from sqlalchemy.engine import make_url

    from groundswell.shared.ledger.store import database_url

    try:
        return make_url(database_url(url)).render_as_string(hide_password=True)
    except Exception:
        return "(an unreadable URL)"


# Every route shows a team's key only its corpora's claims (``_sees``).
LedgerDep = Annotated["Ledger", Depends(open_ledger)]
Limit = Annotated[int, Query(ge=1, le=1000)]


def _sees(key: ApiKey):
    """What a team's key sees of the ledger's claims (None: a key without corpora, all)."""
    return key.sees if key.limited else None


def _paged(query) -> dict[str, Any]:
    from groundswell.shared.ledger.queries import BadCursor

    try:
        return query().as_dict()
    except BadCursor as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None


@router.get("/claims", operation_id="ledger_claims")
def list_claims(
    key: Principal,  # the scope before the ledger: a refusal never waits for the database
    ledger: LedgerDep,
    document: str | None = None,
    relation: str | None = None,
    entity: Annotated[str | None, Query(description="an entity id or label, either side")] = None,
    modality: str | None = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """Claims in id order, each with its asserter, modality, document and span; for a team's
    key, the claims of its corpora only."""
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
            sees=_sees(key),
        )
    )


@router.get("/disagreements", operation_id="ledger_disagreements")
def list_disagreements(
    key: Principal,
    ledger: LedgerDep,
    kind: Literal["contradiction", "objects", "facts"] = "contradiction",
    subject: Annotated[
        str | None, Query(description="only about this entity (a label or an entity id)")
    ] = None,
    relation: Annotated[str | None, Query(description="a relation (for facts: a field)")] = None,
    resolved: Annotated[bool, Query(description="entities resolve grouped are one")] = False,
    sides: Annotated[
        int | None, Query(ge=1, le=1000, description="objects, facts: the sides a row shows (20)")
    ] = None,
    claims_per_side: Annotated[
        int | None,
        Query(ge=1, le=1000, description="objects, facts: the claims each side shows (10)"),
    ] = None,
    cursor: Cursor = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Disagreements of one kind, each side with its asserter, modality, document and span
    (an objects or facts row: its best-supported sides, the first claims of each, and the
    counts of all in ``sides_total`` and ``claims_total``). For a team's key, only its
    corpora's claims are sides: a disagreement with fewer than two of them is not listed."""
    from groundswell.shared.ledger.queries import MAX_CLAIMS, MAX_SIDES, disagreements

    return _paged(
        lambda: disagreements(
            ledger,
            kind,
            subject=subject,
            relation=relation,
            resolved=resolved,
            cursor=cursor,
            limit=limit,
            max_sides=sides or MAX_SIDES,
            max_claims=claims_per_side or MAX_CLAIMS,
            sees=_sees(key),
        )
    )


@router.get("/path", operation_id="ledger_path")
def find_path(
    key: Principal,
    ledger: LedgerDep,
    settings: SettingsDep,
    start: str,
    goal: str,
    modality: Annotated[list[str] | None, Query()] = None,
    relation: Annotated[list[str] | None, Query()] = None,
    max_hops: Annotated[int, Query(ge=1, le=32)] = 8,
) -> dict[str, Any]:
    """The shortest chain of claims between two entities (``found`` false, with the reason,
    when there is none; ``stopped`` true too when the search read its budget of claims,
    ``GROUNDSWELL_LEDGER_PATH_BUDGET``, before it could answer). For a team's key, only its
    corpora's claims are walked (an entity no such claim names is unknown)."""
    from groundswell.shared.ledger.path import path

    return path(
        ledger,
        start,
        goal,
        modality=modality,
        relations=relation,
        max_hops=max_hops,
        budget=settings.ledger_path_budget,
        sees=_sees(key),
    ).as_dict()


@router.get("/search", operation_id="ledger_search")
def search_claims(
    key: Principal,
    ledger: LedgerDep,
    q: Annotated[str, Query(min_length=1, max_length=1000)],
    cursor: Cursor = None,
    limit: Limit = 15,
) -> dict[str, Any]:
    """Claims whose evidence quote has any word of ``q`` (stemmed), best first; for a team's
    key, the claims of its corpora only."""
    from groundswell.shared.ledger.search import search

    try:
        return search(ledger, q, cursor=cursor, limit=limit, sees=_sees(key)).as_dict()
    except ValueError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None


@router.get("/history", operation_id="ledger_history")
def fact_history(
    principal: Principal,
    ledger: LedgerDep,
    document: str,
    field: str,
    key: Annotated[str | None, Query(description='the key ("": a field of one value)')] = None,
    cursor: Cursor = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """The values one document's field (and key) had across the runs and policy versions that
    loaded them, oldest first, each with its run, policy version, receipt digest and span (for
    a team's key, of its corpora only)."""
    from groundswell.shared.ledger.history import history_page

    sees = _sees(principal)
    return _paged(
        lambda: history_page(ledger, document, field, key, cursor=cursor, limit=limit, sees=sees)
    )


@router.get("/state", operation_id="ledger_state")
def ledger_state(key: Principal, ledger: LedgerDep) -> dict[str, Any]:
    """What the ledger holds: claims by audit state, modality and tier; documents, entities,
    evidence spans, vocabularies; its schema revision and the builds a bulk load left. For a
    team's key, the counts are of its corpora's claims."""
    from groundswell.shared.ledger.queries import state

    return state(ledger, _sees(key))


ExportFormat = Literal["jsonld", "graphml", "cypher", "csv-nodes", "csv-edges"]
_EXPORTED = {
    "jsonld": ("application/ld+json", "jsonld"),
    "graphml": ("application/graphml+xml", "graphml"),
    "cypher": ("text/plain; charset=utf-8", "cypher"),
    "csv-nodes": ("text/csv; charset=utf-8", "nodes.csv"),
    "csv-edges": ("text/csv; charset=utf-8", "edges.csv"),
}


@router.get(
    "/export",
    operation_id="ledger_export",
    response_class=StreamingResponse,
    responses={200: {"content": {m: {} for m, _ in _EXPORTED.values()}}},
)
def export(
    key: Principal,
    ledger: LedgerDep,
    format: ExportFormat,
) -> StreamingResponse:
    """The whole ledger as ``groundswell ledger export`` writes it (the CSV pair as two
    formats), streamed a page of claims at a time: every claim with its provenance (source
    document, spans, asserter, modality, verdict, run, receipt and policy version). For a
    team's key, its corpora's claims and the entities they name only."""
    from groundswell.shared.ledger.export import (
        WRITERS,
        LedgerReader,
        write_csv_edges,
        write_csv_nodes,
    )

    writer = {**WRITERS, "csv-nodes": write_csv_nodes, "csv-edges": write_csv_edges}[format]
    media, suffix = _EXPORTED[format]
    return StreamingResponse(
        streamed(lambda out: writer(LedgerReader(ledger, sees=_sees(key)), out)),
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="ledger.{suffix}"'},
    )


# -- review: the merges resolve held, and answering them -------------------------------------

ReviewStatus = Literal["open", "deferred"]


@router.get("/review", operation_id="ledger_review")
def list_review(
    key: Principal,
    ledger: LedgerDep,
    status_: Annotated[list[ReviewStatus] | None, Query(alias="status")] = None,
    cursor: Cursor = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """The merges the last ``resolve`` held (open and deferred, or ``status``), weightiest
    first, each with its id (``merge:<Type>/<key>``), the group it would join, why it was held
    and the claims the answer moves; ``queue`` counts them by status and the ids decided.
    For a team's key, only the merges whose claims are all its corpora's (entities are
    shared: a merge moving another team's claims is not its to see or answer)."""
    from groundswell.shared.ledger import review

    sees = _sees(key)
    status_ = status_ or list(review.LISTED)
    page = _paged(
        lambda: review.listed(ledger, status=status_, cursor=cursor, limit=limit, sees=sees)
    )
    return {**page, "queue": review.queue(ledger, sees)}


class DecisionIn(BaseModel):
    """One answer, as a row of a decisions file (its ``_`` context fields are ignored). Who
    decided and when are never the body's: the key's name and the server's date, as review
    answers are."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    verdict: str | None = Field(None, description="accept, reject or defer; blank: no answer")
    reason: str | None = None
    # Declared only to be refused by name (a runs key once recorded a reject as another
    # reviewer's, dated 2020).
    by: Any = Field(None, description="refused: the decider is the API key's name")
    date: Any = Field(None, description="refused: the date is the server's")

    @model_validator(mode="before")
    @classmethod
    def _without_context(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not str(k).startswith("_")}
        return data

    @field_validator("by")
    @classmethod
    def _no_decider(cls, _value: Any) -> Any:
        raise ValueError("the decider is the API key's name: leave out `by`")

    @field_validator("date")
    @classmethod
    def _no_date(cls, _value: Any) -> Any:
        raise ValueError("the date of an answer is the server's: leave out `date`")


class DecisionsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decisions: list[DecisionIn] = Field(max_length=10_000)


@router.post("/review", operation_id="ledger_review_answer", responses={422: {}})
def answer_review(key: Reviewer, body: DecisionsIn, ledger: LedgerDep) -> dict[str, Any]:
    """Record answers to held merges (keys with the ``review`` or ``admin`` scope), checked
    as ``ledger review --apply`` checks a file: any problem is a 422 listing every one
    (``errors``, each ``loc`` naming the decision and its field) and nothing is written. Each
    answer is the key's (its name the decider) and dated by the server; a body naming
    ``by`` or ``date`` is refused. Otherwise ``{recorded, new, changed, unchanged}``; the
    next resolve obeys them. A team's key answers only the merges it lists: one that moves
    another team's claims is a 403 naming it, and nothing is written."""
    from groundswell.shared.ledger import review

    if key.limited:
        ids = [d.id for d in body.decisions if d.id and d.verdict and d.verdict.strip()]
        outside = review.unseen(ledger, ids, key.sees)
        if outside:
            shown = ", ".join(outside[:5]) + (
                f" and {len(outside) - 5} more" if len(outside) > 5 else ""
            )
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                f"the API key {key.name!r} sees only its corpora: the merge {shown} moves "
                "claims of other corpora (entities are shared between teams) or is not held; "
                "a key without corpora answers it",
            )
    today = dt.datetime.now(dt.UTC).date()
    rows = [
        (n, {**d.model_dump(exclude_none=True), "by": key.name, "date": today})
        for n, d in enumerate(body.decisions, start=1)
    ]
    try:
        answers = review.load(ledger, rows)
    except review.DecisionsError as exc:
        # The app's 422 for a body that does not validate: every problem, with its place.
        raise RequestValidationError(
            [
                {
                    "loc": (
                        "body",
                        "decisions",
                        p.line - 1,
                        *([p.field] if p.field != "-" else []),
                    ),
                    "msg": p.message,
                    "type": "value_error",
                }
                for p in exc.problems
            ]
        ) from None
    if not answers:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY, "every verdict is blank — nothing written"
        )
    stats = review.save(ledger, answers, f"api:{key.name}", lines=False)
    return {"recorded": len(answers), **stats}


# -- recording: an agent's claim, checked as an import checks it ---------------------------


class ClaimRecordIn(BaseModel):
    """A claim to record: the corpus and document it quotes, and the claim as a line of a
    relations file (``claim_id`` optional: one is derived from the claim)."""

    model_config = ConfigDict(extra="forbid")

    corpus: str = Field(min_length=1, max_length=2000)
    document_id: str = Field(min_length=1, max_length=200)
    claim: dict[str, Any]


def source_for(settings: Settings, key: ApiKey, corpus: str, document_id: str):
    """The document a claim is recorded against: 403 unless the corpus is one this API may
    read and the key's (as for a run), 404 without the document."""
    from groundswell.api.routes.runs import checked_corpus
    from groundswell.shared.ledger.record import NoDocument, open_source

    checked, _ = checked_corpus(settings, corpus, key)
    try:
        return open_source(checked, document_id)
    except NoDocument as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None


@router.post(
    "/claims",
    operation_id="ledger_record_claim",
    status_code=status.HTTP_201_CREATED,
    responses={200: {"description": "recorded already (the same claim)"}, 422: {}},
)
def record_claim(
    key: Recorder, body: ClaimRecordIn, settings: SettingsDep, ledger: LedgerDep
) -> JSONResponse:
    """Record one claim (keys with the ``record`` or ``admin`` scope), refused exactly as an
    import refuses its line: a quote not in the document (with the closest span of it,
    ``nearest``, for a near miss), a relation outside the corpus's vocabulary, a bad
    modality... as a 422 ``{ok: false, error, field, message}``. Stored as
    ``<document_id>:<claim_id>``, create-once: 201 when new, 200 for the same claim again,
    and 422 ``exists`` for another claim under a recorded id. A ``reported`` claim whose
    quote does not name its asserter is stored, with ``warnings``."""
    from groundswell.shared.ledger.record import record_claim as record

    source = source_for(settings, key, body.corpus, body.document_id)
    done = record(ledger, source, body.claim, recorder=key.name)
    code = status.HTTP_201_CREATED if done.created else status.HTTP_200_OK
    if not done.ok:
        code = status.HTTP_422_UNPROCESSABLE_ENTITY
    return JSONResponse(status_code=code, content=done.as_dict())


def close_ledgers(_settings: Settings | None = None) -> None:
    """Dispose of the open ledgers (tests, shutdown)."""
    while _ledgers:
        _ledgers.popitem()[1].close()
