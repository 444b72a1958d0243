"""Runs: create (202 + Location, Idempotency-Key), get with progress, list, cancel, summary."""

from __future__ import annotations

import math
import os
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query, Response, status
from fastapi.responses import HTMLResponse

from groundswell.api.deps import Principal, ServiceDep
from groundswell.api.guards import limits_for
from groundswell.api.params import run_id_or_404
from groundswell.api.schemas import (
    Pagination,
    RunCreate,
    RunLinks,
    RunList,
    RunOut,
    RunProgress,
    UnitProgress,
)
from groundswell.shared.policies import PolicyError
from groundswell.shared.report.pages import UnknownFilter
from groundswell.shared.report.service import run_report
from groundswell.shared.results.models import RunsNotComparable
from groundswell.shared.results.service import RunResults
from groundswell.shared.runs.finalize import unit_counts
from groundswell.shared.runs.models import ChangedListMissing, RunNotFinished, RunRecord
from groundswell.shared.runs.service import RunService, RunUnreadable
from groundswell.shared.settings import ApiKey, Settings

router = APIRouter(prefix="/v1/runs", tags=["runs"])
MAX_PAGE = 1_000_000


def public(data: dict) -> dict:
    """What a client sees of a run or summary: where the server keeps its files is the
    server's business when it is a local folder (an s3:// output is shown)."""
    output = data.get("output")
    if isinstance(output, str) and not output.startswith("s3://"):
        return {**data, "output": None}
    return data


def checked_corpus(settings: Settings, corpus: str, key: ApiKey) -> tuple[str, str]:
    """The corpus as checked (a folder: its absolute path, links resolved) and the allowed
    root it lies under; 403 unless it lies under GROUNDSWELL_ALLOWED_CORPORA (deny by
    default) and among the key's corpora (a team's key): the corpus is the caller's own, so
    saying why leaks nothing. What was checked is what is stored: a relative path would be
    resolved again against a worker's own working directory."""
    root = settings.allowed_root(corpus)
    if root is None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"corpus {corpus} is not under GROUNDSWELL_ALLOWED_CORPORA, the folders and "
            "s3://bucket/prefixes this API may read (none unless an operator sets them)",
        )
    if not key.sees(corpus):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"corpus {corpus} is not among the corpora of the API key {key.name!r}: "
            + ", ".join(key.corpora),
        )
    if corpus.startswith("s3://"):
        return corpus, root
    return os.path.realpath(corpus.removeprefix("file://")), root


def run_out(service: RunService, record: RunRecord) -> RunOut:
    progress = service.progress(record.id)
    base = f"/v1/runs/{record.id}"
    return RunOut(
        **public(record.model_dump(exclude={"idempotency_key_sha256"})),
        progress=RunProgress(
            planned=progress.planned,
            done=progress.done,
            failed=progress.failed,
            planning_done=progress.planning_done,
            fraction=round(progress.fraction, 6),
            units={k: UnitProgress(**v) for k, v in unit_counts(progress.counters).items()},
        ),
        waiting_for=None if record.terminal else service.waiting_for(record.id),
        links=RunLinks(self=base, summary=f"{base}/summary", receipts=f"{base}/receipts"),
    )


def get_run(service: RunService, run_id: str, key: ApiKey) -> RunRecord:
    """The run, when the key sees its corpus; else 404, as for a run that does not exist
    (another team's run ids tell nothing). A record that cannot be read is a 409 saying why,
    for a key that sees every corpus (whose run it is cannot be read: a team's key gets 404)."""
    try:
        record = service.get_or_none(run_id_or_404(run_id))
    except RunUnreadable as exc:
        if key.limited:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id}") from None
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    if record is None or not key.sees(record.corpus):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id}")
    return record


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RunOut,
    operation_id="create_run",
    responses={409: {"description": "Idempotency-Key reused with another request"}},
)
def create_run(
    body: RunCreate,
    response: Response,
    service: ServiceDep,
    principal: Principal,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> RunOut:
    limits = limits_for(service.settings)
    limits.hit(limits.runs, "runs", principal.digest)
    corpus, root = checked_corpus(service.settings, body.corpus, principal)
    body = body.model_copy(update={"corpus": corpus})
    try:
        policy = service.policies.resolve(body.policy)
    except PolicyError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None
    try:
        record, created = service.submit(body, idempotency_key, allowed_under=root)
    except ChangedListMissing as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None
    if not created:
        if record.corpus != body.corpus or record.policy.get("ref") != policy.ref:
            # Another team's run is not named: its id and corpus are not this key's to see.
            seen = f" (run {record.id}: {record.corpus} under {record.policy.get('ref')})"
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                "this Idempotency-Key was used for another request"
                + (seen if principal.sees(record.corpus) else ""),
            )
        response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/runs/{record.id}"
    return run_out(service, record)


@router.get("", response_model=RunList, operation_id="list_runs")
def list_runs(
    service: ServiceDep,
    principal: Principal,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> RunList:
    records, total = service.list_runs((page - 1) * limit, limit, principal)
    return RunList(
        items=[run_out(service, r) for r in records],
        pagination=Pagination(
            total_count=total, page=page, limit=limit, max_page=max(1, math.ceil(total / limit))
        ),
    )


@router.get("/{run_id}", response_model=RunOut, operation_id="get_run")
def read_run(run_id: str, service: ServiceDep, key: Principal) -> RunOut:
    return run_out(service, get_run(service, run_id, key))


@router.post("/{run_id}/cancel", response_model=RunOut, operation_id="cancel_run")
def cancel_run(run_id: str, service: ServiceDep, key: Principal) -> RunOut:
    record = get_run(service, run_id, key)
    if record.terminal and record.state != "cancelled":
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"run {run_id} already ended {record.state}: nothing to cancel",
        )
    return run_out(service, service.cancel(run_id))


@router.get("/{run_a}/diff/{run_b}", operation_id="diff_runs")
def diff_runs(
    run_a: str,
    run_b: str,
    service: ServiceDep,
    key: Principal,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict:
    """Run B against run A: rates side by side (change in points), and what moved (paginated)."""
    get_run(service, run_a, key)
    get_run(service, run_b, key)
    try:
        diff = RunResults(service).diff(run_a, run_b, (page - 1) * limit, limit)
    except RunNotFinished as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    except RunsNotComparable as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None
    total = diff["moved_total"]
    diff["pagination"] = Pagination(
        total_count=total, page=page, limit=limit, max_page=max(1, math.ceil(total / limit))
    ).model_dump()
    return diff


@router.get("/{run_id}/report", response_class=HTMLResponse, operation_id="get_run_report")
def read_report(
    run_id: str,
    service: ServiceDep,
    key: Principal,
    documents: Annotated[int, Query(ge=1, le=1000, description="Documents a page.")] = 50,
    verdict: Annotated[str | None, Query(max_length=100)] = None,
    outcome: Annotated[str | None, Query(max_length=100)] = None,
    code: Annotated[str | None, Query(max_length=200)] = None,
    document: Annotated[str | None, Query(max_length=1000)] = None,
    after: Annotated[str | None, Query(max_length=1000, description="Next page.")] = None,
    before: Annotated[str | None, Query(max_length=1000, description="Previous page.")] = None,
) -> HTMLResponse:
    """An HTML page: a table of contents, the summary, the codes (each linking to its
    decisions), a page of documents in id order with their counts and spans highlighted in
    the source (filtered by claim verdict, candidate outcome, code or document; paged with
    ``after``/``before`` cursors), and the failed units with their errors."""
    get_run(service, run_id, key)
    query = {
        "verdict": verdict,
        "outcome": outcome,
        "code": code,
        "document": document,
        "after": after,
        "before": before,
    }
    try:
        return HTMLResponse(
            run_report(service, run_id, documents, **{k: v for k, v in query.items() if v})
        )
    except RunNotFinished as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    except UnknownFilter as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None


@router.get("/{run_id}/summary", operation_id="get_run_summary")
def read_summary(run_id: str, service: ServiceDep, key: Principal) -> dict:
    return public(_finished_summary(service, run_id, key))


@router.get("/{run_id}/producers", operation_id="get_run_producers")
def read_producers(run_id: str, service: ServiceDep, key: Principal) -> dict:
    """A finished run by producer (the extractor that made its records, as its corpus or each
    record declares it): per producer, largest first, its counters and rates (grounding,
    escapes, review load, producer/verifier disagreement); at most ``bound`` producers by
    name, the rest summed as ``other``. Empty when the corpus declares no producer."""
    from groundswell.shared.producers import MAX_PRODUCERS

    summary = _finished_summary(service, run_id, key)
    rows = [{"producer": k, **v} for k, v in (summary.get("producers") or {}).items()]
    return {"run_id": run_id, "bound": MAX_PRODUCERS, "producers": rows}


def _finished_summary(service: RunService, run_id: str, key: ApiKey) -> dict:
    record = get_run(service, run_id, key)
    summary = service.summary(run_id)
    if summary is None:
        detail = (
            f"run {run_id} was cancelled: it has no summary"
            if record.state == "cancelled"
            else f"run {run_id} is {record.state}: its summary is written when it finishes"
        )
        raise HTTPException(status.HTTP_409_CONFLICT, detail)
    return summary
