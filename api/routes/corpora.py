"""A corpus's page: GET /v1/corpora/report?corpus= (its latest runs and its rates by run and
by policy version, drawn as charts)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from fastapi.responses import HTMLResponse

from groundswell.api.deps import Principal, ServiceDep
from groundswell.shared.report.corpus import MOST_RUNS, RUNS_SHOWN, CorpusNotFound, corpus_report

router = APIRouter(prefix="/v1/corpora", tags=["runs"])


@router.get("/report", response_class=HTMLResponse, operation_id="get_corpus_report")
def read_corpus_report(
    service: ServiceDep,
    key: Principal,
    corpus: Annotated[str, Query(min_length=1, max_length=2000, description="As runs name it.")],
    runs: Annotated[int, Query(ge=1, le=MOST_RUNS, description="Latest runs shown.")] = RUNS_SHOWN,
) -> HTMLResponse:
    """An HTML page: the corpus's latest runs (newest first, each linking to its report and
    review queue) and bar charts of its grounding rate, escape rate and review load by run
    and by policy version. 404 when the key sees no run of the corpus (another team's corpus
    is as unknown as one never run)."""
    try:
        return HTMLResponse(corpus_report(service, corpus, runs, key))
    except CorpusNotFound as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from None
