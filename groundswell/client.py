"""A typed client of the groundswell HTTP API: every route, one method each.

from groundswell import Client
with Client() as api:        # GROUNDSWELL_API_URL and GROUNDSWELL_API_KEY, as the CLI reads them
    run = api.wait(api.submit("s3://acme/filings", policy="default@latest").id)
    print(api.summary(run.id)["rates"])
    for row in api.receipts(run.id):
        ...

Every failure, a refusal of the server or a server that cannot be reached, is an
:class:`APIError` with the status (None when no answer came), a message and the server's
detail. Each method names the route it calls (``@route``), and a test holds the app's
routes against them, so a new route fails that test until the client covers it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx
from pydantic import ConfigDict

from groundswell.api.schemas import (
    DocumentReceipts,
    Pagination,
    ReceiptPage,
    ReceiptRow,
    RunList,
    RunOut,
)
from groundswell.shared.runs.models import TERMINAL_STATES
from groundswell.shared.runs.schedules import Schedule, ScheduleList

TERMINAL = set(TERMINAL_STATES)
F = TypeVar("F", bound=Callable[..., Any])


def route(method: str, path: str) -> Callable[[F], F]:
    """Mark a method as the client of ``method path`` (the app's route template)."""

    def mark(f: F) -> F:
        f.__route__ = (method, path)  # type: ignore[attr-defined]
        return f

    return mark


def covered_routes() -> dict[tuple[str, str], str]:
    """(method, path template) -> the Client method that calls it."""
    return {
        f.__route__: name
        for name, f in vars(Client).items()
        if callable(f) and hasattr(f, "__route__")
    }


class APIError(RuntimeError):
    """A request failed: ``status`` (None when the server gave no answer), ``message`` and
    the server's ``detail`` (its JSON ``detail``, else its text; None without an answer)."""

    def __init__(
        self, method: str, path: str, status: int | None, detail: Any, message: str | None = None
    ) -> None:
        self.method, self.path, self.status, self.detail = method, path, status, detail
        self.message = message or f"{method} {path}: {status} {detail}"
        super().__init__(self.message)


class Run(RunOut):
    """A run as the API reports it (fields a newer server adds are kept, not refused)."""

    model_config = ConfigDict(extra="allow")

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


class RunPage(RunList):
    model_config = ConfigDict(extra="allow")
    items: list[Run]  # type: ignore[assignment]
    pagination: Pagination


class Client:
    """The HTTP API, with the X-API-Key header. ``url`` and ``api_key`` default to the
    settings the CLI reads (GROUNDSWELL_API_URL, GROUNDSWELL_API_KEY, or a .env file)."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if url is None or api_key is None:
            from groundswell.shared.settings import Settings

            settings = Settings()
            url = url or settings.api_url
            if api_key is None and settings.api_key is not None:
                api_key = settings.api_key.get_secret_value()
        self.url = url
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

    # -- the one way a request is made ----------------------------------------------------

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:  # refused, timed out, reset: no answer to read
            raise APIError(
                method, path, None, None, f"cannot reach the API at {self.url}: {exc}"
            ) from exc
        if response.status_code >= 400:
            try:
                body = response.json()
                detail = body.get("detail", body) if isinstance(body, dict) else body
            except ValueError:
                detail = response.text
            raise APIError(method, path, response.status_code, detail)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._call(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise APIError(
                method,
                path,
                response.status_code,
                response.text[:200],
                f"{method} {path}: the answer is not JSON",
            ) from None

    @staticmethod
    def _params(**params: Any) -> dict[str, Any]:
        return {k: v for k, v in params.items() if v is not None}

    def _pages(self, fetch: Callable[[str | None], dict[str, Any]]) -> Iterator[Any]:
        """Every item of a cursor-paged listing, a page a request."""
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    # -- runs -------------------------------------------------------------------------------

    @route("POST", "/v1/runs")
    def submit(
        self,
        corpus: str,
        policy: str | None = None,
        *,
        only: str = "missing",
        dry_run: bool = False,
        idempotency_key: str | None = None,
        ledger: bool = False,
        verify_inputs: bool = False,
        changed: list[str] | str | None = None,
        changed_name: str | None = None,
        format: str | None = None,
    ) -> Run:
        """Start a run of ``corpus`` (a path the server can read, or s3://bucket/prefix);
        ``format`` reads its producer files in place (langextract, anthropic, ...);
        ``ledger`` also loads its admitted facts and grounded quotations into the ledger;
        ``verify_inputs`` reads and hashes every input, even those listed as before;
        ``changed`` (keys, or the corpus key of a file of them) checks only the documents they
        name and reuses the rest from the corpus's latest run."""
        body: dict[str, Any] = {"corpus": corpus, "only": only, "dry_run": dry_run}
        if policy:
            body["policy"] = policy
        if ledger:  # sent only when asked: a server without the ledger takes the rest
            body["ledger"] = True
        if verify_inputs:  # likewise
            body["verify_inputs"] = True
        if changed is not None:
            body["changed"] = changed
            if changed_name:
                body["changed_name"] = changed_name
        if format:
            body["format"] = format
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return Run.model_validate(self._json("POST", "/v1/runs", json=body, headers=headers))

    def rerun(
        self, run_id: str, *, policy: str | None = None, only: str = "missing", **options: Any
    ) -> Run:
        """Run a run's corpus again, under its policy version (or ``policy``): ``only``
        missing (what has no receipt), failed, or all."""
        run = self.status(run_id)
        ref = policy or run.policy.get("ref")
        return self.submit(run.corpus, ref, only=only, **options)

    @route("GET", "/v1/runs/{run_id}")
    def status(self, run_id: str) -> Run:
        return Run.model_validate(self._json("GET", f"/v1/runs/{run_id}"))

    run = status

    @route("GET", "/v1/runs")
    def runs(self, *, page: int = 1, limit: int = 20) -> RunPage:
        """A page of runs, newest first, with ``pagination``."""
        params = {"page": page, "limit": limit}
        return RunPage.model_validate(self._json("GET", "/v1/runs", params=params))

    def iter_runs(self, *, limit: int = 100) -> Iterator[Run]:
        """Every run, newest first, a page a request."""
        page = 1
        while True:
            listed = self.runs(page=page, limit=limit)
            yield from listed.items
            if page >= listed.pagination.max_page:
                return
            page += 1

    @route("POST", "/v1/runs/{run_id}/cancel")
    def cancel(self, run_id: str) -> Run:
        return Run.model_validate(self._json("POST", f"/v1/runs/{run_id}/cancel"))

    def wait(
        self,
        run_id: str,
        *,
        poll: float = 1.0,
        timeout: float | None = None,
        said: Callable[[str, str], None] | None = None,
    ) -> Run:
        """Poll until the run ends (TimeoutError after ``timeout`` seconds); ``said(run_id,
        state)`` is called once if it has not ended at the first look."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            run = self.status(run_id)
            if run.terminal:
                return run
            if said is not None:
                said(run_id, run.state)
                said = None
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.state}")
            time.sleep(poll)

    @route("GET", "/v1/runs/{run_id}/summary")
    def summary(self, run_id: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/runs/{run_id}/summary")

    @route("GET", "/v1/runs/{run_id}/producers")
    def producers(self, run_id: str) -> dict[str, Any]:
        """The finished run by producer: counters and rates per producer, largest first."""
        return self._json("GET", f"/v1/runs/{run_id}/producers")

    @route("GET", "/v1/runs/{run_id}/gate")
    def gate(self, run_id: str) -> dict[str, Any]:
        """The finished run against the deployment's gate: checks and verdict (docs/gates.md)."""
        return self._json("GET", f"/v1/runs/{run_id}/gate")

    @route("POST", "/v1/runs/{run_id}/export")
    def export(self, run_id: str) -> dict[str, Any]:
        """Send the finished run's Parquet export to a worker (docs/export.md)."""
        return self._json("POST", f"/v1/runs/{run_id}/export")

    @route("GET", "/v1/runs/{run_id}/export")
    def export_manifest(self, run_id: str) -> dict[str, Any]:
        """The run's export manifest: rows per table and the files written."""
        return self._json("GET", f"/v1/runs/{run_id}/export")

    @route("POST", "/v1/hooks")
    def add_hook(
        self, url: str, *, events: list[str] | None = None, format: str = "json"
    ) -> dict[str, Any]:
        """Add a webhook for this key's runs; the answer holds its signing secret, once."""
        body: dict[str, Any] = {"url": url, "format": format}
        if events is not None:
            body["events"] = events
        return self._json("POST", "/v1/hooks", json=body)

    @route("GET", "/v1/hooks")
    def hooks(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/hooks")["items"]

    @route("DELETE", "/v1/hooks/{hook_id}")
    def remove_hook(self, hook_id: str) -> None:
        self._call("DELETE", f"/v1/hooks/{hook_id}")

    @route("GET", "/v1/runs/{run_id}/hooks")
    def deliveries(self, run_id: str) -> list[dict[str, Any]]:
        """The run's hook deliveries and their status."""
        return self._json("GET", f"/v1/runs/{run_id}/hooks")["items"]

    @route("GET", "/v1/runs/{run_a}/diff/{run_b}")
    def diff(self, run_a: str, run_b: str, *, page: int = 1, limit: int = 100) -> dict[str, Any]:
        """Run B against run A: rates side by side, and a page of what moved."""
        params = {"page": page, "limit": limit}
        return self._json("GET", f"/v1/runs/{run_a}/diff/{run_b}", params=params)

    @route("GET", "/v1/runs/{run_id}/documents/{doc_id}/pages/{page}.png")
    def page_image(self, run_id: str, doc_id: str, page: int) -> bytes:
        """Page ``page`` (1-based) of the PDF a document was read from, as PNG bytes."""
        return self._call("GET", f"/v1/runs/{run_id}/documents/{doc_id}/pages/{page}.png").content

    @route("GET", "/v1/runs/{run_id}/report")
    def report(self, run_id: str, *, documents: int = 50, **filters: str) -> str:
        """A page of the HTML report; filters: verdict, outcome, code, document, after,
        before."""
        params = self._params(documents=documents, **filters)
        return self._call("GET", f"/v1/runs/{run_id}/report", params=params).text

    @route("GET", "/v1/corpora/report")
    def corpus_report(self, corpus: str, *, runs: int = 50) -> str:
        """The HTML page of a corpus: its latest runs, and its rates by run and by policy
        version as charts."""
        params = self._params(corpus=corpus, runs=runs)
        return self._call("GET", "/v1/corpora/report", params=params).text

    # -- receipts ---------------------------------------------------------------------------

    @route("GET", "/v1/runs/{run_id}/receipts")
    def receipts_page(
        self, run_id: str, *, cursor: str | None = None, limit: int = 100
    ) -> ReceiptPage:
        params = self._params(cursor=cursor, limit=limit)
        return ReceiptPage.model_validate(
            self._json("GET", f"/v1/runs/{run_id}/receipts", params=params)
        )

    def receipts(self, run_id: str, *, page_size: int = 500) -> Iterator[ReceiptRow]:
        """Every index row of a run, page after page (each page one request)."""

        def fetch(cursor: str | None) -> dict[str, Any]:
            page = self.receipts_page(run_id, cursor=cursor, limit=page_size)
            return {"items": page.items, "next_cursor": page.next_cursor}

        return self._pages(fetch)

    @route("GET", "/v1/runs/{run_id}/documents/{doc_id}/receipts")
    def document_receipts(self, run_id: str, doc_id: str) -> DocumentReceipts:
        return DocumentReceipts.model_validate(
            self._json("GET", f"/v1/runs/{run_id}/documents/{doc_id}/receipts")
        )

    # -- review -----------------------------------------------------------------------------

    @route("GET", "/v1/review/tasks")
    def review_tasks(
        self,
        run: str | None = None,
        *,
        cursor: str | None = None,
        limit: int = 50,
        **filters: str,
    ) -> dict[str, Any]:
        """A page of a run's review tasks; filters: code, field, document, policy, state."""
        params = self._params(run=run, cursor=cursor, limit=limit, **filters)
        return self._json("GET", "/v1/review/tasks", params=params)

    def iter_review_tasks(self, run: str | None = None, **filters: str) -> Iterator[dict]:
        return self._pages(lambda c: self.review_tasks(run, cursor=c, **filters))

    @route("GET", "/v1/review/tasks/{task_key}")
    def review_task(self, task_key: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/review/tasks/{task_key}")

    @route("POST", "/v1/review/tasks/{task_key}/answers")
    def answer(self, task_key: str, verdict: str, **answer: Any) -> dict[str, Any]:
        """Add an answer@1 (the reviewer is the key's name, the time the server's): verdict
        confirm, choose (decision=N), correct (candidate=...), not_in_document, unsure..."""
        body = {"verdict": verdict, **answer}
        return self._json("POST", f"/v1/review/tasks/{task_key}/answers", json=body)

    @route("GET", "/v1/review/tasks/{task_key}/answers")
    def review_answers(
        self,
        task_key: str,
        *,
        reviewer: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> dict[str, Any]:
        """A page of every answer given to the task (``reviewer``: only theirs)."""
        params = self._params(reviewer=reviewer, cursor=cursor, limit=limit)
        return self._json("GET", f"/v1/review/tasks/{task_key}/answers", params=params)

    def iter_review_answers(self, task_key: str, **options: Any) -> Iterator[dict[str, Any]]:
        return self._pages(lambda c: self.review_answers(task_key, cursor=c, **options))

    @route("GET", "/v1/runs/{run_id}/review/measures")
    def review_measures(self, run_id: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/runs/{run_id}/review/measures")

    @route("POST", "/v1/runs/{run_id}/review/resolve")
    def resolve_review(self, run_id: str) -> dict[str, Any]:
        return self._json("POST", f"/v1/runs/{run_id}/review/resolve")

    @route("GET", "/v1/runs/{run_id}/review/resolution")
    def review_resolution(self, run_id: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/runs/{run_id}/review/resolution")

    # -- the claims ledger ------------------------------------------------------------------

    def _ledger(self, name: str, **params: Any) -> dict[str, Any]:
        return self._json("GET", f"/v1/ledger/{name}", params=self._params(**params))

    @route("GET", "/v1/ledger/claims")
    def ledger_claims(self, *, cursor: str | None = None, limit: int = 100, **filters: str):
        """A page of claims; filters: document, relation, entity, modality."""
        return self._ledger("claims", cursor=cursor, limit=limit, **filters)

    def iter_ledger_claims(self, **filters: str) -> Iterator[dict[str, Any]]:
        return self._pages(lambda c: self.ledger_claims(cursor=c, **filters))

    @route("POST", "/v1/ledger/claims")
    def record_claim(self, corpus: str, document_id: str, claim: dict[str, Any]) -> dict[str, Any]:
        """Record one claim against a stored document (refused as an import refuses its
        line: APIError with the reason)."""
        body = {"corpus": corpus, "document_id": document_id, "claim": claim}
        return self._json("POST", "/v1/ledger/claims", json=body)

    @route("GET", "/v1/ledger/disagreements")
    def ledger_disagreements(
        self, kind: str = "contradiction", *, cursor: str | None = None, **filters: Any
    ) -> dict[str, Any]:
        """A page of disagreements; filters: subject, relation, resolved, sides,
        claims_per_side, limit."""
        return self._ledger("disagreements", kind=kind, cursor=cursor, **filters)

    @route("GET", "/v1/ledger/path")
    def ledger_path(self, start: str, goal: str, **options: Any) -> dict[str, Any]:
        """The shortest chain of claims between two entities; options: modality,
        relation (lists), max_hops."""
        return self._ledger("path", start=start, goal=goal, **options)

    @route("GET", "/v1/ledger/search")
    def ledger_search(
        self, q: str, *, cursor: str | None = None, limit: int = 15
    ) -> dict[str, Any]:
        return self._ledger("search", q=q, cursor=cursor, limit=limit)

    @route("GET", "/v1/ledger/history")
    def ledger_history(
        self,
        document: str,
        field: str,
        key: str | None = None,
        *,
        cursor: str | None = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        return self._ledger(
            "history", document=document, field=field, key=key, cursor=cursor, limit=limit
        )

    @route("GET", "/v1/ledger/state")
    def ledger_state(self) -> dict[str, Any]:
        return self._ledger("state")

    @route("GET", "/v1/ledger/export")
    def ledger_export(self, format: str = "jsonld") -> bytes:
        """The whole ledger (jsonld, graphml, cypher, csv-nodes, csv-edges)."""
        return self._call("GET", "/v1/ledger/export", params={"format": format}).content

    @route("GET", "/v1/ledger/review")
    def ledger_review(
        self, *, status: list[str] | None = None, cursor: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        return self._ledger("review", status=status, cursor=cursor, limit=limit)

    @route("POST", "/v1/ledger/review")
    def answer_ledger_review(self, decisions: list[dict[str, Any]]) -> dict[str, Any]:
        """Answers to held merges: ``{"id", "verdict": accept|reject|defer, "reason"}``."""
        return self._json("POST", "/v1/ledger/review", json={"decisions": decisions})

    # -- policies ---------------------------------------------------------------------------

    @route("GET", "/v1/policies")
    def policies(self) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/policies")

    @route("GET", "/v1/policies/{name}")
    def policy(self, name: str) -> dict[str, Any]:
        return self._json("GET", f"/v1/policies/{name}")

    @route("GET", "/v1/policies/{name}/versions/{version}")
    def policy_version(self, name: str, version: int) -> dict[str, Any]:
        return self._json("GET", f"/v1/policies/{name}/versions/{version}")

    @route("POST", "/v1/policies")
    def publish_policy(self, document: dict[str, Any], version: int | None = None) -> dict:
        body = document if version is None else {**document, "version": version}
        return self._json("POST", "/v1/policies", json=body)

    @route("POST", "/v1/policies/calibrations")
    def put_calibration(self, calibration: dict[str, Any]) -> str:
        """Store a calibration report; its sha256, what a policy's calibration names."""
        return self._json("POST", "/v1/policies/calibrations", json=calibration)["sha256"]

    # -- schedules --------------------------------------------------------------------------

    @route("GET", "/v1/schedules")
    def schedules(self) -> ScheduleList:
        return ScheduleList.model_validate(self._json("GET", "/v1/schedules"))

    @route("POST", "/v1/schedules")
    def add_schedule(self, corpus: str, policy: str = "default@latest", **spec: Any) -> Schedule:
        """spec: every_seconds or cron, only, ledger."""
        body = {"corpus": corpus, "policy": policy, **spec}
        return Schedule.model_validate(self._json("POST", "/v1/schedules", json=body))

    @route("GET", "/v1/schedules/{schedule_id}")
    def schedule(self, schedule_id: str) -> Schedule:
        return Schedule.model_validate(self._json("GET", f"/v1/schedules/{schedule_id}"))

    @route("DELETE", "/v1/schedules/{schedule_id}")
    def remove_schedule(self, schedule_id: str) -> None:
        self._call("DELETE", f"/v1/schedules/{schedule_id}")

    # -- streams ----------------------------------------------------------------------------

    @route("POST", "/v1/streams")
    def follow(self, corpus: str, policy: str = "default") -> dict[str, Any]:
        """Follow an S3 corpus under a policy version: its standing stream (made if needed)."""
        return self._json("POST", "/v1/streams", json={"corpus": corpus, "policy": policy})

    @route("GET", "/v1/streams/{stream_id}")
    def stream(self, stream_id: str) -> dict[str, Any]:
        """The stream, its status (waiting, ready, running window, lag), its latest windows."""
        return self._json("GET", f"/v1/streams/{stream_id}")

    @route("POST", "/v1/events/s3")
    def send_s3_events(self, notification: dict[str, Any] | bytes, secret: str) -> dict[str, Any]:
        """Push S3 event notifications (the AWS event JSON), signed with the deployment's
        webhook secret (GROUNDSWELL_STREAM_WEBHOOK_SECRET), as a store that pushes would."""
        import json

        from groundswell.shared.hooks.signing import SIGNATURE_HEADER, sign

        body = (
            notification if isinstance(notification, bytes) else json.dumps(notification).encode()
        )
        headers = {SIGNATURE_HEADER: sign(secret, body), "Content-Type": "application/json"}
        return self._json("POST", "/v1/events/s3", content=body, headers=headers)

    # -- health -----------------------------------------------------------------------------

    @route("GET", "/healthz")
    def health(self) -> dict[str, Any]:
        return self._json("GET", "/healthz")

    @route("GET", "/readyz")
    def ready(self) -> dict[str, Any]:
        """Whether the API's dependencies answer (an APIError with status 503 when not)."""
        return self._json("GET", "/readyz")
