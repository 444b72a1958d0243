"""A typed client of the groundswell HTTP API (what ``groundswell submit|status|summary`` use).

from groundswell import Client
with Client("http://groundswell:8000", api_key="gs_...") as api:
    run = api.submit("s3://acme/filings", policy="default@latest")
    run = api.wait(run.id)
    print(api.summary(run.id)["rates"])
    for row in api.receipts(run.id):
        ...
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

TERMINAL = {"succeeded", "partially_failed", "failed", "cancelled"}


class APIError(RuntimeError):
    """The API refused a request: ``status`` and its ``detail``."""

    def __init__(self, method: str, path: str, status: int, detail: Any) -> None:
        super().__init__(f"{method} {path}: {status} {detail}")
        self.status, self.detail = status, detail


class Progress(BaseModel):
    model_config = ConfigDict(extra="allow")

    planned: int
    done: int
    failed: int
    planning_done: bool
    fraction: float


class Run(BaseModel):
    """A run as the API reports it (fields the API adds later are kept, not refused)."""

    model_config = ConfigDict(extra="allow")

    id: str
    state: str
    corpus: str
    policy: dict[str, Any]
    created_at: str
    finished_at: str | None = None
    error: str | None = None
    progress: Progress

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


class Client:
    """Runs, their summaries and receipts over HTTP, with the X-API-Key header."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self.http = httpx.Client(
            base_url=url, headers=headers, timeout=timeout, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text
            raise APIError(method, path, response.status_code, detail)
        return response

    def submit(
        self,
        corpus: str,
        policy: str | None = None,
        *,
        only: str = "missing",
        dry_run: bool = False,
        idempotency_key: str | None = None,
        ledger: bool = False,
    ) -> Run:
        """Start a run of ``corpus`` (a path the server can read, or s3://bucket/prefix);
        ``ledger`` also loads its admitted facts and grounded quotations into the ledger."""
        body: dict[str, Any] = {"corpus": corpus, "only": only, "dry_run": dry_run}
        if policy:
            body["policy"] = policy
        if ledger:  # sent only when asked: a server without the ledger takes the rest
            body["ledger"] = True
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return Run.model_validate(self._call("POST", "/v1/runs", json=body, headers=headers).json())

    def status(self, run_id: str) -> Run:
        return Run.model_validate(self._call("GET", f"/v1/runs/{run_id}").json())

    def wait(self, run_id: str, *, poll: float = 1.0, timeout: float | None = None) -> Run:
        """Poll until the run ends (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            run = self.status(run_id)
            if run.terminal:
                return run
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.state}")
            time.sleep(poll)

    def summary(self, run_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/runs/{run_id}/summary").json()

    def cancel(self, run_id: str) -> Run:
        return Run.model_validate(self._call("POST", f"/v1/runs/{run_id}/cancel").json())

    def receipts(self, run_id: str, *, page_size: int = 500) -> Iterator[dict[str, Any]]:
        """Every index row of a run, page after page (each page one request)."""
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": page_size}
            if cursor:
                params["cursor"] = cursor
            page = self._call("GET", f"/v1/runs/{run_id}/receipts", params=params).json()
            yield from page["items"]
            cursor = page["next_cursor"]
            if not page["has_next_page"]:
                return

    def document_receipts(self, run_id: str, doc_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/runs/{run_id}/documents/{doc_id}/receipts").json()
