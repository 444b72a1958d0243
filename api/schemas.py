"""Request and response models of the HTTP API."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from groundswell.shared.runs.models import RunSpec, RunStateName


class RunCreate(RunSpec):
    """Start a run of a corpus under a policy."""


class UnitProgress(BaseModel):
    planned: int = 0
    computed: int = 0
    cached: int = 0
    failed: int = 0
    done: int = 0


class RunProgress(BaseModel):
    planned: int
    done: int
    failed: int
    planning_done: bool
    fraction: float
    units: dict[str, UnitProgress]


class WaitingFor(BaseModel):
    queue: str = Field(description="A queue the run has work on that no live worker consumes.")
    since: str = Field(description="When the run was first seen waiting on it (ISO 8601, UTC).")


class RunLinks(BaseModel):
    self: str
    summary: str
    receipts: str


class RunOut(BaseModel):
    id: str
    state: RunStateName
    corpus: str
    output: str | None = Field(description="The s3:// output; null when the server's own folder.")
    policy: dict[str, Any]
    engines: dict[str, Any]
    only: str
    dry_run: bool
    format: str | None = Field(
        default=None,
        description="The producer format the corpus is read in place in, when the run named one.",
    )
    previous_run: str | None
    schedule: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None
    error: str | None = Field(default=None, description="Why a failed run failed.")
    progress: RunProgress
    waiting_for: WaitingFor | None = Field(
        default=None,
        description="Set while the run has work on a queue no live worker consumes: it waits "
        "until a worker on that queue starts.",
    )
    links: RunLinks


class Pagination(BaseModel):
    total_count: int
    page: int
    limit: int
    max_page: int


class RunList(BaseModel):
    items: list[RunOut]
    pagination: Pagination


class ReceiptRow(BaseModel):
    unit: str
    doc_id: str
    kind: str
    status: str
    receipt: str | None
    receipt_sha256: str | None
    errors_total: int = 0


class ReceiptPage(BaseModel):
    items: list[ReceiptRow]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null at the end."
    )
    has_next_page: bool


class DocumentReceipts(BaseModel):
    run_id: str
    doc_id: str
    verify: dict[str, Any] | None
    admit: dict[str, Any] | None
    units: dict[str, dict[str, Any]]


class Health(BaseModel):
    status: str
    checks: dict[str, str] = {}
