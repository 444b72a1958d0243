"""Review: the tasks of a run, answers to them, the run's resolution and measures (issue 15).

Every route needs a key with the ``review`` scope (or ``admin``); the reviewer of an answer
is the key's name and its time the server's clock, never the body's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, status
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator
from pydantic_core import PydanticCustomError

from groundswell.api.deps import Reviewer, ServiceDep
from groundswell.api.routes.runs import get_run
from groundswell.shared.canonical import canonical_text
from groundswell.shared.report.pages import UnknownFilter, check_filter
from groundswell.shared.review.formats import DEFAULT_REVIEW_POLICY, chain
from groundswell.shared.review.store import (
    MAX_NOTE_CHARS,
    InputsChanged,
    ReviewStore,
    ReviewUnavailable,
    RunReview,
    TooManyAnswers,
    UnknownTask,
    latest_by_reviewer,
    task_state,
    utc_time,
)
from groundswell.shared.runs.service import RunUnreadable
from groundswell.shared.settings import ApiKey

router = APIRouter(tags=["review"])

SERVER_MEMBERS = ("format", "task", "reviewer", "time", "sequence", "previous", "entry_sha256")
Code = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]*$", max_length=100)]
Short = Annotated[str, Field(max_length=1000)]
# A correction is one value and its evidence: a few hundred bytes, rarely a few thousand.
MAX_CANDIDATE_BYTES = 16_384


class SpanIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: StrictInt
    end: StrictInt


class EvidenceIn(BaseModel):
    """One evidence item of a candidate (groundgate's spec, section 2.5): its members only."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["document", "reference", "external", "knowledge"] | None = None
    role: Literal["value", "sign", "scale", "unit", "key", "field"] | None = None
    ref: Short | None = None
    start: StrictInt | None = None
    end: StrictInt | None = None
    text: str | None = None
    url: Short | None = None
    retrieved: Short | None = None


class CorrectionIn(BaseModel):
    """The candidate of a correction: a candidate's members (groundgate's section 2.5) and
    ``proposer``, which the server sets (the key's name), at most MAX_CANDIDATE_BYTES."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(max_length=200)] | StrictInt | None = None
    proposer: Short | None = None
    field: Short
    value: StrictInt | Annotated[str, Field(max_length=10_000)]
    unit: Short | None = None
    key: Short | None = None
    evidence: EvidenceIn | Annotated[list[EvidenceIn], Field(max_length=16)] | None = None
    search_region: SpanIn | None = None
    confidence: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _bounded(self) -> CorrectionIn:
        size = len(canonical_text(self.given()).encode("utf-8"))
        if size > MAX_CANDIDATE_BYTES:
            raise PydanticCustomError(
                "candidate_size",
                "{size} bytes of JSON, at most {most}: a correction is one value and its evidence",
                {"size": size, "most": MAX_CANDIDATE_BYTES},
            )
        return self

    def given(self) -> dict[str, Any]:
        """The candidate as given (members left out stay out: they are part of its digest)."""
        return self.model_dump(exclude_unset=True)


class AnswerIn(BaseModel):
    """An answer@1 without what the server sets (format, task, reviewer, time): the verdict,
    the chosen decision (choose), the corrected candidate (correct, adjust_span), the codes
    of a correction the reviewer saw and kept, and how it was given (for the measures)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["confirm", "choose", "correct", "adjust_span", "not_in_document", "unsure"]
    decision: StrictInt | None = Field(default=None, ge=0)
    candidate: CorrectionIn | None = None
    codes_kept: list[Code] = Field(default_factory=list, max_length=100)
    reason_seen: StrictBool = False
    keys: StrictInt = Field(default=0, ge=0, le=1_000_000)
    ms: StrictInt = Field(default=0, ge=0, le=1_000_000_000)
    statements: None = None
    nodes: None = None
    # Not a member of answer@1: a reviewer's words on the answer ("not in the document: the
    # filing gives only a range"), kept beside it (ReviewStore.add_note) and shown with it.
    note: Annotated[str, Field(max_length=MAX_NOTE_CHARS)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_server_members(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for member in SERVER_MEMBERS:
                if member in value:
                    raise PydanticCustomError(
                        "set_by_server",
                        "{member}: set by the server (the reviewer is the API key's name, the "
                        "time the server's clock), not by the answer",
                        {"member": member},
                    )
        return value


def run_review(service: Any, run_id: str, key: ApiKey) -> RunReview:
    """The run's review, when the key sees the run's corpus (else 404, as for no run)."""
    return RunReview(service, get_run(service, run_id, key))


def _conflict(exc: Exception) -> HTTPException:
    return HTTPException(status.HTTP_409_CONFLICT, str(exc))


def run_manifest(review: RunReview) -> dict[str, Any]:
    try:
        return review.manifest()
    except (ReviewUnavailable, InputsChanged) as exc:
        raise _conflict(exc) from None


def _run_step(service: Any, run_id: str, key: ApiKey, step: Any) -> dict[str, Any]:
    """``step(review)`` of a run's review; 409 when its tasks cannot be made (yet)."""
    review = run_review(service, run_id, key)
    run_manifest(review)
    try:
        return step(review)
    except InputsChanged as exc:
        raise _conflict(exc) from None


def review_store(service: Any) -> ReviewStore:
    """The review objects of this deployment's output store: tasks and answers are filed by
    key, whichever run made them."""
    settings = service.settings
    output = service.store(service.output_url)
    return ReviewStore(output, settings.list_page_size, settings.review_max_answers)


def stored_task(service: Any, store: ReviewStore, task_key: str, key: ApiKey) -> dict[str, Any]:
    """The stored task, when the key sees the corpus of the run that made it (else 404, as
    for no task: another team's tasks are not there)."""
    try:
        stored = store.task(task_key)
    except ValueError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_key[:80]}: {exc}") from None
    except UnknownTask:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_key}") from None
    if key.limited:
        try:
            record = service.get_or_none(stored["origin"]["run"])
        except RunUnreadable:  # whose run it is cannot be read
            record = None
        if record is None or not key.sees(record.corpus):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_key}")
    return stored


def _latest_run(service: Any, policy: str, key: ApiKey, most: int = 1000) -> str:
    """The newest finished run under the policy version ``policy`` (or NAME@latest) among
    the runs the key sees."""
    ref = service.policies.resolve(policy).ref
    for offset in range(0, most, 100):
        records, total = service.list_runs(offset, 100, key)
        for record in records:
            finished = record.state in ("succeeded", "partially_failed")
            if finished and record.policy.get("ref") == ref:
                return record.id
        if offset + 100 >= total:
            break
    raise HTTPException(status.HTTP_404_NOT_FOUND, f"no finished run under {ref}")


@router.get("/v1/review/tasks", operation_id="list_review_tasks")
def list_tasks(
    service: ServiceDep,
    key: Reviewer,
    run: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    code: Annotated[str | None, Query(max_length=100)] = None,
    field: Annotated[str | None, Query(max_length=1000)] = None,
    document: Annotated[str | None, Query(max_length=1000)] = None,
    policy: Annotated[str | None, Query(max_length=200)] = None,
    state: Literal["unanswered", "answered", "disputed"] | None = None,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,12}$")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    """A page of the run's tasks (in document then slot order) with each one's answer
    state; ``next_cursor`` continues it (a rare filter may give a short page and a cursor).
    Without ``run``, the latest finished run under the ``policy`` version (NAME@N)."""
    filters = {"code": code, "field": field, "doc_id": document}
    return queue(service, run, policy, filters, state, cursor, limit, key)


def queue(
    service: Any,
    run: str | None,
    policy: str | None,
    filters: dict[str, str | None],
    state: str | None,
    cursor: str | None,
    limit: int,
    key: ApiKey,
) -> dict[str, Any]:
    """A page of a run's tasks under the filters (document, field, code), the policy version
    and the answer state: what ``GET /v1/review/tasks`` answers, and the review page shows."""
    try:
        check_filter("code", filters.get("code"))
    except UnknownFilter as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from None
    if run is None:
        if policy is None:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_ENTITY,
                "run: give a run, or a policy version whose latest finished run to list",
            )
        run = _latest_run(service, policy, key)
    review = run_review(service, run, key)
    manifest = run_manifest(review)
    ref = manifest.get("policy_ref") or ""
    out: dict[str, Any] = {"run": run, "policy": ref, "tasks": manifest["tasks"]}
    if policy is not None:
        wanted = service.policies.resolve(policy).ref if "@" in policy else policy
        if wanted not in (ref, ref.partition("@")[0]):
            return {**out, "items": [], "next_cursor": None}
    page = review.store.page(manifest, int(cursor or 0), limit, filters, state)
    return {**out, "items": page.rows, "next_cursor": page.cursor}


def task_with_answers(service: Any, task_key: str, key: ApiKey) -> dict[str, Any]:
    """The stored task (404 when there is none, or the key does not see it), each reviewer's
    latest answer (oldest first, and by reviewer), how many answers each gave, and the state."""
    store = review_store(service)
    stored = stored_task(service, store, task_key, key)
    current = store.current(task_key)
    answers = [c["answer"] for c in current]
    return {
        **stored,
        "answers": answers,
        "latest": latest_by_reviewer(answers),
        "counts": {c["reviewer"]: c["count"] for c in current},
        "state": task_state(answers),
        "notes": store.notes(task_key),
    }


@router.get("/v1/review/tasks/{task_key}", operation_id="get_review_task")
def get_task(task_key: str, service: ServiceDep, key: Reviewer) -> dict[str, Any]:
    """The task@1, where it was made (run, document, receipt), each reviewer's latest
    answer (the ones that count) and how many they gave, and the state (disputed when they
    disagree); every answer given is in ``GET .../answers``."""
    return task_with_answers(service, task_key, key)


@router.get("/v1/review/tasks/{task_key}/answers", operation_id="list_review_answers")
def list_answers(
    task_key: str,
    service: ServiceDep,
    key: Reviewer,
    reviewer: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9a-f]{64}/[0-9]{9}$")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    """Every answer given to the task, a page at a time: each reviewer's in the order they
    were given (``reviewer``: only theirs); ``next_cursor`` continues it."""
    store = review_store(service)
    stored_task(service, store, task_key, key)
    page = store.history(task_key, reviewer, cursor, limit)
    return {"task": task_key, "reviewer": reviewer, "items": page.rows, "next_cursor": page.cursor}


@router.post(
    "/v1/review/tasks/{task_key}/answers",
    status_code=status.HTTP_201_CREATED,
    operation_id="answer_review_task",
)
def answer_task(
    task_key: str, body: AnswerIn, service: ServiceDep, key: Reviewer
) -> dict[str, Any]:
    """Add an answer (append-only: an earlier answer, this reviewer's or another's, is kept;
    each reviewer's latest counts). 422 names the member when the answer breaks its task;
    409 past the answers one reviewer may give one task (never stored and then ignored)."""
    from groundswell.shared.review.resolve import AnswerError, Resolver

    store = review_store(service)
    stored = stored_task(service, store, task_key, key)
    if store.answer_count(task_key, key.name) >= store.max_answers:
        raise _conflict(TooManyAnswers(task_key, key.name, store.max_answers))
    origin = stored["origin"]
    review = run_review(service, origin["run"], key)
    record = {
        "format": "answer@1",
        "task": task_key,
        "reviewer": key.name,
        **body.model_dump(exclude={"note"}),
        "candidate": _proposed(body.candidate, key.name),
        "time": utc_time(datetime.now(UTC)),
    }
    try:
        packet = review.packet(origin["doc_id"], origin["receipt"])
    except InputsChanged as exc:
        raise _conflict(exc) from None
    if packet is None:
        raise _conflict(ValueError(f"the receipt {origin['receipt']} records a failure"))
    try:  # checked as groundgate's resolve checks it (a correction is admitted again)
        Resolver(packet).resolve(DEFAULT_REVIEW_POLICY, {key.name: chain([record])})
    except AnswerError as exc:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY, f"{exc.member}: {exc.reason}"
        ) from None
    try:
        stored_as = store.add_answer(record)
    except TooManyAnswers as exc:  # a concurrent answer of the same reviewer took the last
        raise _conflict(exc) from None
    if body.note and body.note.strip():
        store.add_note(task_key, key.name, stored_as, body.note.strip(), record["time"])
    service.runs.mark_reviewed(origin["run"])  # its gauges are refreshed by reconcile
    current = store.current(task_key)  # one object per reviewer, not every answer
    return {
        "answer": record,
        "stored_as": stored_as,
        "answers": sum(c["count"] for c in current),
        "state": task_state([c["answer"] for c in current]),
    }


def _proposed(candidate: CorrectionIn | None, name: str) -> dict[str, Any] | None:
    """A correction's candidate as stored: proposed by the key's reviewer, whatever the body
    says; a body naming another proposer is refused rather than silently renamed."""
    if candidate is None:
        return None
    given, proposer = candidate.given(), f"person:{name}"
    if given.get("proposer", proposer) != proposer:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY,
            f"candidate.proposer: the proposer is the API key's name ({proposer}), set by the "
            "server: leave it out",
        )
    return {**given, "proposer": proposer}


@router.get("/v1/runs/{run_id}/review/measures", operation_id="get_review_measures")
def measures(run_id: str, service: ServiceDep, key: Reviewer) -> dict[str, Any]:
    """The run's review load (tasks, answered, open, disputed, reviewers, median wait) and
    groundgate's measures over its answers."""
    from groundswell.shared.review import gauges

    def measured(review: RunReview) -> dict[str, Any]:
        result = review.measures()
        gauges.record(service, review.record, result)
        return result

    return _run_step(service, run_id, key, measured)


@router.post("/v1/runs/{run_id}/review/resolve", operation_id="resolve_review")
def resolve(run_id: str, service: ServiceDep, key: Reviewer) -> dict[str, Any]:
    """Resolve each packet of the run from the answers so far; each resolution@1 is stored
    under its key (``receipts/review/``) and the run's list is returned."""
    return _run_step(service, run_id, key, RunReview.resolve)


@router.get("/v1/runs/{run_id}/review/resolution", operation_id="get_review_resolution")
def resolution(run_id: str, service: ServiceDep, key: Reviewer) -> dict[str, Any]:
    """The run's latest resolution (404 before the first resolve)."""
    found = run_review(service, run_id, key).store.run_resolution(run_id)
    if found is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"run {run_id} has not been resolved: POST .../resolve"
        )
    return found
