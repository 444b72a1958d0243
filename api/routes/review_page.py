"""The review page: sign in with a key, a queue of a run's tasks, one task at a time.

Pages are server-side templates (Jinja2, autoescaped; nothing from a document is rendered as
HTML) and one small script served below (no build step, nothing from elsewhere). The page
answers through the JSON API (``POST /v1/review/tasks/{key}/answers``) with the session's
CSRF token; the queue and tasks come from the same helpers as ``/v1/review/tasks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

import anyio
import redis
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from groundswell.api import session
from groundswell.api.deps import ServiceDep, SettingsDep, require_api_key
from groundswell.api.guards import client_address, limits_for, refuse_key_in_url
from groundswell.api.routes.review import (
    SERVER_MEMBERS,
    queue,
    review_store,
    run_manifest,
    run_review,
    stored_task,
    task_with_answers,
)
from groundswell.shared.policies import PolicyError
from groundswell.shared.report.pages import receipt_url
from groundswell.shared.review.explain import explain_code, field_meaning
from groundswell.shared.review.store import (
    STATES,
    UnknownTask,
    progress,
    row_passes,
    row_values,
    task_state,
)
from groundswell.shared.settings import ApiKey, Settings, hash_api_key

router = APIRouter(tags=["review page"], include_in_schema=False)

SCRIPT = FilePath(__file__).with_name("review_page.js")
# The review page runs its own script and talks to this API; nothing else.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
CONTEXT_CHARS = 400  # characters of source shown on each side of a cited span
MAX_SPAN_CHARS = 2000  # a longer span is cut in its middle
MAX_WINDOWS = 6  # windows of source per task
PAGE_ROWS = 50
MAX_QUOTE_CHARS = 300  # the cited text a correction's quote starts from

Text = Annotated[str | None, Query(max_length=1000)]
# The filter form sends every field: an empty one (or "any" state) is no filter.
State = Annotated[str | None, Query(pattern=r"^(unanswered|answered|disputed)?$")]
# The task whose answer was just saved (the page confirms it and offers its undo).
Saved = Annotated[str | None, Query(pattern=r"^sha256:[0-9a-f]{64}$")]


def _html(body: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code, headers={"content-security-policy": PAGE_CSP})


def _render(name: str, **context: Any) -> str:
    from groundswell.shared.report.render import template

    return template(name).render(**context)


def _safe_next(value: str | None) -> str:
    """Where to go after signing in: a path of this site's review page, nothing else."""
    if value and value.startswith("/review") and "//" not in value and "\\" not in value:
        return value
    return "/review"


def _signed_in(request: Request, settings: Settings) -> ApiKey | Response:
    """The key of the request's session (checked as the API checks it), or a redirect to
    the sign-in page; 403 for a key without the review scope."""
    refuse_key_in_url(request)
    if session.cookie_of(request, settings) is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(
            "/review/sign-in?" + urlencode({"next": target}), status.HTTP_303_SEE_OTHER
        )
    try:
        key = require_api_key(request, settings, None)
    except HTTPException as exc:
        if exc.status_code != status.HTTP_401_UNAUTHORIZED:
            raise
        gone = RedirectResponse("/review/sign-in", status.HTTP_303_SEE_OTHER)
        session.clear_cookie(gone, request, settings)
        return gone
    if not key.allows("review"):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"the API key {key.name!r} may not review (scope review)"
        )
    return key


def _frame(request: Request, settings: Settings, key: ApiKey | None) -> dict[str, Any]:
    value = session.cookie_of(request, settings) or ""
    return {
        "reviewer": key.name if key else None,
        "csrf": session.csrf_token(settings, value) if key else "",
    }


# -- signing in and out -----------------------------------------------------------------------


def _body(request: Request) -> bytes:
    """The request's body, from a route that runs in a worker thread (its checks of keys and
    rate limits talk to Redis, so they do not run on the event loop)."""
    return anyio.from_thread.run(request.body)


@router.get("/review/sign-in", response_class=HTMLResponse)
def sign_in_page(request: Request, next: Text = None) -> HTMLResponse:
    refuse_key_in_url(request)
    page = _render("review_sign_in.html", next=_safe_next(next), error=None, reviewer=None, csrf="")
    return _html(page)


@router.post("/review/sign-in", response_class=HTMLResponse)
def sign_in(request: Request, settings: SettingsDep) -> Response:
    """A form with the key (``key``) and where to go next: a session cookie for a key that
    may review; the form again, with the reason, otherwise."""
    refuse_key_in_url(request)
    # The page's own form sends Origin "null" (its referrer policy is no-referrer), as a page
    # of another site can make its form do: only the browser's Sec-Fetch-Site tells them
    # apart, so "null" without it is refused. No Origin at all is a client that is no browser.
    origin = request.headers.get("origin")
    site = request.headers.get("sec-fetch-site")
    if (
        (origin and origin not in ("null", f"{request.url.scheme}://{request.url.netloc}"))
        or (site is not None and site not in ("same-origin", "none"))
        or (origin == "null" and site is None)
    ):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "sign-in from another site")
    # As the API counts every request of an address and every failure (guards.py: the
    # right key is never refused for failures, others' included).
    limits, address = limits_for(settings), client_address(request)
    limits.hit(limits.per_address, "address", address)
    fields = session.form_fields(_body(request)) if session.is_form(request) else {}
    target = _safe_next(fields.get("next"))
    presented = hash_api_key(fields["key"]) if fields.get("key") else None
    key = session.find_key(settings, presented) if presented else None
    error = None
    if key is None:
        error = "That is not a key of this service."
    elif not key.allows("review"):
        error = f"The key {key.name!r} may not review: it needs the scope review (or admin)."
    if error is not None:
        limits.failed(address, presented)
        page = _render("review_sign_in.html", next=target, error=error, reviewer=None, csrf="")
        return _html(page, status.HTTP_403_FORBIDDEN)
    assert key is not None
    try:
        value = session.issue(settings, key)
    except redis.RedisError as exc:
        raise session.unavailable() from exc
    done = RedirectResponse(target, status.HTTP_303_SEE_OTHER)
    session.set_cookie(done, request, settings, value)
    return done


@router.post("/review/sign-out")
def sign_out(request: Request, settings: SettingsDep) -> Response:
    value = session.cookie_of(request, settings)
    if value and session.open_session(settings, value) is not None:
        session.check_csrf(settings, request, value, _body(request))
        session.end(settings, value)
    done = RedirectResponse("/review/sign-in", status.HTTP_303_SEE_OTHER)
    session.clear_cookie(done, request, settings)
    return done


@router.get("/review/static/review.js")
def script() -> Response:
    return Response(
        SCRIPT.read_text(encoding="utf-8"),
        media_type="text/javascript",
        headers={"cache-control": "no-cache"},
    )


# -- the queue --------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueQuery:
    """The queue's filters as the page's URLs carry them (an empty form field is none)."""

    run: str | None
    code: str | None
    field: str | None
    document: str | None
    policy: str | None
    state: str | None

    def rows(self) -> dict[str, str | None]:
        """The filters of the task list's rows (``ReviewStore.page``)."""
        return {"code": self.code, "field": self.field, "doc_id": self.document}

    def params(self, without: tuple[str, ...] = ()) -> dict[str, str]:
        given = {name: getattr(self, name) for name in QUERY_NAMES if name not in without}
        return {name: value for name, value in given.items() if value}

    def query(self, without: tuple[str, ...] = ()) -> str:
        return urlencode(self.params(without))


QUERY_NAMES = ("run", "code", "field", "document", "policy", "state")


def queue_query(
    run: Text = None,
    code: Text = None,
    field: Text = None,
    document: Text = None,
    policy: Text = None,
    state: State = None,
) -> QueueQuery:
    return QueueQuery(*(value or None for value in (run, code, field, document, policy, state)))


QueueDep = Annotated[QueueQuery, Depends(queue_query)]


def _recent_runs(service: Any, key: ApiKey, most: int = 20) -> list[Any]:
    records, _ = service.list_runs(0, most, key)
    return [r for r in records if r.state in ("succeeded", "partially_failed")]


@router.get("/review", response_class=HTMLResponse)
def queue_page(
    request: Request,
    settings: SettingsDep,
    service: ServiceDep,
    q: QueueDep,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,12}$")] = None,
    end: Literal["next", "prev"] | None = None,
    saved: Saved = None,
) -> Response:
    key = _signed_in(request, settings)
    if isinstance(key, Response):
        return key
    context: dict[str, Any] = {
        "saved": _saved(service, key, saved),
        **_frame(request, settings, key),
        "filters": q.params(("state",)),
        "state": q.state,
        "states": STATES,
        "page": None,
        "problem": None,
        "runs": [],
        "query": q.query(),
        "end": end,
        "explain": explain_code,
    }
    if q.run or q.policy:
        try:
            context["page"] = queue(
                service, q.run, q.policy, q.rows(), q.state, cursor, PAGE_ROWS, key
            )
        except HTTPException as exc:
            context["problem"] = exc.detail
        except PolicyError as exc:  # the filter form's policy: said on the page, as a run's is
            context["problem"] = str(exc)
    if context["page"] is None:
        context["runs"] = _recent_runs(service, key)
    else:
        _with_values(service, context["page"]["items"])
        context["progress"] = _progress(service, context["page"]["run"], q, key)
        if context["page"]["next_cursor"] is not None:
            more = {**q.params(), "cursor": context["page"]["next_cursor"]}
            context["next_url"] = "/review?" + urlencode(more)
    return _html(_render("review_queue.html", **context))


def _progress(service: Any, run: str, q: QueueQuery, key: ApiKey) -> dict[str, Any] | None:
    """The run's review progress, and the filter's (None when its tasks cannot be listed)."""
    try:
        review = run_review(service, run, key)
        return progress(review.store, run_manifest(review), q.rows())
    except HTTPException:
        return None


VERDICT_WORDS = {
    "confirm": "confirmed",
    "choose": "chose",
    "correct": "corrected to",
    "adjust_span": "moved the span to",
    "not_in_document": "not in the document",
    "unsure": "unsure",
}


def _saved(service: Any, key: ApiKey, task_key: str | None) -> dict[str, Any] | None:
    """The confirmation of the reviewer's latest answer to ``task_key``, with the answer
    its undo posts: the reviewer's answer before it again, or "unsure" (a new answer that
    supersedes it; answers are never edited). None when the reviewer has no answer there."""
    if task_key is None:
        return None
    try:
        stored = task_with_answers(service, task_key, key)
    except HTTPException:
        return None
    latest = stored["latest"].get(key.name)
    if latest is None:
        return None
    task = stored["task"]
    value = (latest.get("candidate") or {}).get("value")
    for n, choice in enumerate(task["choices"], 1):
        if choice["decision"] == latest.get("decision"):
            value = f"{n}: {choice['value']}" if len(task["choices"]) > 1 else choice["value"]
    mine = review_store(service).history(task_key, key.name, None, MAX_UNDO_LOOKBACK).rows
    earlier = mine[-2] if len(mine) >= 2 else None
    if earlier is not None:
        undo = {k: v for k, v in earlier.items() if k not in SERVER_MEMBERS}
        words = f"your earlier answer again ({VERDICT_WORDS.get(earlier['verdict'])})"
    elif latest["verdict"] != "unsure":
        undo, words = {"verdict": "unsure"}, "unsure"
    else:
        undo, words = None, ""
    return {
        "task": task_key,
        "field": task["slot"]["field"],
        "key": task["slot"]["key"],
        "doc_id": stored["origin"]["doc_id"],
        "verdict": VERDICT_WORDS.get(latest["verdict"], latest["verdict"]),
        "value": value,
        "undo": undo,
        "undo_words": words,
    }


# Answers of one reviewer to one task read to find the one before their latest (a reviewer
# gives one task at most GROUNDSWELL_REVIEW_MAX_ANSWERS, 100 by default).
MAX_UNDO_LOOKBACK = 200


def _with_values(service: Any, rows: list[dict[str, Any]]) -> None:
    """Each row's candidate values; a row of a task list made before rows held them reads
    its task (a page is at most PAGE_ROWS rows)."""
    store = None
    for row in rows:
        if "values" in row:
            continue
        store = store or review_store(service)
        try:
            row["values"] = row_values(store.task(row["task"])["task"])
        except (UnknownTask, ValueError):
            row["values"] = []


# -- moving through the queue -----------------------------------------------------------------


# How far a step through the queue looks for the next task that passes its filters: a
# rare filter ends the step at the queue (which pages on) rather than reading the run.
STEP_SCAN = 5000
# With a state filter, the first candidates' answers are listed one task at a time; past
# this many, one listing of every answer finds the answered tasks (as the queue's page does).
STEP_LOOKUPS = 20


def _neighbour(
    service: Any,
    run: str,
    filters: dict[str, Any],
    state: str | None,
    at: str,
    to: str,
    key: ApiKey,
) -> str | None:
    """The task before or after task ``at`` among the run's tasks that pass the filters and
    the state (``to``: ``next`` or ``prev``); None at an end of the queue, or past
    STEP_SCAN rows. The task's row is found from its document (a few pieces read), and
    only the rows between it and its neighbour are read after it."""
    review = run_review(service, run, key)
    store = review.store
    manifest = run_manifest(review)
    try:
        doc_id = store.task(at)["origin"]["doc_id"]
    except (UnknownTask, ValueError):
        return None
    row = store.row_of(manifest, doc_id, at)
    if row is None:
        return None
    answered: set[str] | None = None
    looked = 0

    def passes(candidate: dict[str, Any]) -> bool:
        nonlocal answered, looked
        if not row_passes(candidate, filters):
            return False
        if state is None:
            return True
        task = candidate["task"]
        if answered is None and looked < STEP_LOOKUPS:
            # The neighbour is most often the next row: its own answers are listed, not
            # every answer of the deployment.
            looked += 1
            return task_state(store.answers(task)) == state
        if answered is None:
            answered = store.answered()
        return task_state(store.answers(task) if task in answered else []) == state

    if to == "next":
        for n, candidate in store.rows(manifest, row + 1):
            if n > row + STEP_SCAN:
                return None
            if passes(candidate):
                return candidate["task"]
        return None
    before = []
    for n, candidate in store.rows(manifest, max(0, row - STEP_SCAN)):
        if n >= row:
            break
        if row_passes(candidate, filters):
            before.append(candidate)
    return next((c["task"] for c in reversed(before) if passes(c)), None)


@router.get("/review/step")
def step(
    request: Request,
    settings: SettingsDep,
    service: ServiceDep,
    q: QueueDep,
    at: Annotated[str, Query(pattern=r"^sha256:[0-9a-f]{64}$")],
    to: Literal["next", "prev"] = "next",
    saved: Saved = None,
) -> Response:
    """To the next (or previous) task of the run's queue after task ``at``; back to the
    queue at its end."""
    key = _signed_in(request, settings)
    if isinstance(key, Response):
        return key
    if q.run is None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, "run: the queue's run")
    found = _neighbour(service, q.run, q.rows(), q.state, at, to, key)
    told = f"&saved={saved}" if saved else ""
    if found is None:
        return RedirectResponse(f"/review?{q.query()}&end={to}{told}", status.HTTP_303_SEE_OTHER)
    return RedirectResponse(f"/review/tasks/{found}?{q.query()}{told}", status.HTTP_303_SEE_OTHER)


# -- one task ---------------------------------------------------------------------------------


def _windows(text: str, places: list[tuple[int, int, str]]) -> list[list[dict[str, Any]]]:
    """The source around each place (character offsets and a css class), places that fall
    in one window shown together: each window a list of ``{"text", "css"}`` pieces (css None
    for plain text), with "…" where the source goes on."""
    spans = sorted((s, e, css) for s, e, css in places if 0 <= s <= e <= len(text))
    windows: list[list[tuple[int, int, str]]] = []
    bounds: list[list[int]] = []
    for s, e, css in spans:
        lo, hi = max(0, s - CONTEXT_CHARS), min(len(text), e + CONTEXT_CHARS)
        if bounds and lo <= bounds[-1][1]:
            bounds[-1][1] = max(bounds[-1][1], hi)
            windows[-1].append((s, e, css))
        else:
            bounds.append([lo, hi])
            windows.append([(s, e, css)])
    out = []
    for (lo, hi), marks in list(zip(bounds, windows, strict=True))[:MAX_WINDOWS]:
        pieces: list[dict[str, Any]] = [{"text": "…", "css": None}] if lo else []
        at = lo
        for s, e, css in marks:
            s = max(s, at)  # overlapping spans: the first one shown keeps the overlap
            if e < s:
                continue
            pieces.append({"text": text[at:s], "css": None})
            span = text[s:e]
            if len(span) > MAX_SPAN_CHARS:
                half = MAX_SPAN_CHARS // 2
                span = f"{span[:half]} … {span[-half:]}"
            pieces.append({"text": span, "css": css})
            at = max(at, e)
        pieces.append({"text": text[at:hi] + ("…" if hi < len(text) else ""), "css": None})
        out.append(pieces)
    return out


def _source(review: Any, stored: dict[str, Any], unit: dict[str, Any]) -> dict[str, Any]:
    """The task's places in the source text: windows with the chosen spans and their
    neighbours highlighted, and for a document read from a PDF the pages (and regions)."""
    from groundswell.shared.report.render import char_offsets

    task, origin = stored["task"], stored["origin"]
    out: dict[str, Any] = {
        "windows": [],
        "pages": [],
        "problem": None,
        "template": None,
        "field": None,
        "images": [],
    }
    try:
        # The unit read for the page already (read again only when that failed, to say why).
        packet = review.packet(origin["doc_id"], origin["receipt"], unit or None)
    except Exception as exc:  # a changed or missing input: the task is still answerable
        out["problem"] = str(exc)
        return out
    if packet is None:
        out["problem"] = "the receipt records a failure"
        return out
    out["field"] = field_meaning(
        packet.parsed_schema.digest_object["fields"], task["slot"]["field"]
    )
    text = packet.text
    evidence = [c["evidence"] for c in task["choices"] if c.get("evidence")]
    cited = {(ev["start"], ev["end"]) for ev in evidence}
    spans = {(p["start"], p["end"]) for p in task["places"]} | cited
    chars = char_offsets(text, [b for span in spans for b in span])
    places = [
        (chars[s], chars[e], "cited" if (s, e) in cited else "near")
        for s, e in spans
        if s in chars and e in chars
    ]
    out["windows"] = _windows(text, places)
    first_cited = next(
        ((chars[s], chars[e]) for s, e in sorted(cited) if s in chars and e in chars), None
    )
    if first_cited is not None:  # what a qualified correction quotes, to start from
        out["cited_text"] = text[first_cited[0] : first_cited[1]][:MAX_QUOTE_CHARS]
    decisions = packet.receipt["decisions"]
    by_decision = unit.get("pages") if isinstance(unit.get("pages"), dict) else {}
    for choice in task["choices"]:
        pages = by_decision.get(str(choice["decision"])) or []
        if pages:
            out["pages"].append({"decision": choice["decision"], "pages": pages, "regions": []})
    for place in task["places"]:
        if place.get("page") is not None:
            out["pages"].append({"decision": None, "pages": [place["page"]], "regions": []})
    if out["pages"]:
        out["pages"] = _with_regions(packet.layout, out["pages"], task)
        out["images"] = page_images(
            packet.layout, task, decisions, f"/review/tasks/{stored['key']}/pages/"
        )
    first = task["slot"]["decisions"][:1]
    if first:  # what a correction starts from: the slot's first candidate
        cid = decisions[first[0]].get("candidate_id")
        out["template"] = next(
            (c for c in packet.candidates if isinstance(c, dict) and c.get("id") == cid), None
        )
    return out


def page_images(
    layout: dict[str, Any] | None,
    task: dict[str, Any],
    decisions: list[dict[str, Any]],
    url: str,
) -> list[dict[str, Any]]:
    """The pages a task cites, with the boxes to draw over their images: each candidate's
    value (``value``, numbered as the key that chooses it when there are several) and each
    role item of its decision (``role``: sign, scale, unit, key, field)."""
    from groundswell.shared.read.render import page_views

    spans = []
    several = len(task["choices"]) > 1
    for n, choice in enumerate(task["choices"], 1):
        name = f"{n}: {choice['value']}" if several else str(choice["value"])
        ev = choice.get("evidence") or {}
        spans.append((ev.get("start"), ev.get("end"), "value", str(n) if several else "", name))
        for part in decisions[choice["decision"]].get("parts") or ():
            if isinstance(part, dict) and part.get("role"):
                title = f"{part['role']} of {name}"
                spans.append((part.get("start"), part.get("end"), "role", "", title))
    return page_views(layout, spans, url)


def _with_regions(
    layout: dict[str, Any] | None, pages: list[dict[str, Any]], task: dict[str, Any]
) -> list[dict[str, Any]]:
    """The region of each chosen span on its PDF pages, when the document's layout is stored
    (the packet's: the document is not read again)."""
    from groundswell.shared.report.render import page_regions

    if not layout:
        return pages
    spans = {c["decision"]: c.get("evidence") for c in task["choices"]}
    for entry in pages:
        ev = spans.get(entry["decision"])
        if ev:
            entry["regions"] = page_regions(layout, ev["start"], ev["end"])
    return pages


@router.get("/review/tasks/{task_key}", response_class=HTMLResponse)
def task_page(
    task_key: str,
    request: Request,
    settings: SettingsDep,
    service: ServiceDep,
    q: QueueDep,
    saved: Saved = None,
) -> Response:
    key = _signed_in(request, settings)
    if isinstance(key, Response):
        return key
    from groundswell.shared.receipts import open_receipt

    stored = task_with_answers(service, task_key, key)
    origin = stored["origin"]
    run = q.run or origin["run"]
    review = run_review(service, origin["run"], key)
    try:
        unit = open_receipt(review.output.get(origin["receipt"]), origin["receipt"])
    except Exception:
        unit = {}
    step_query = urlencode({"run": run, "at": task_key, **q.params(("run", "state"))})
    context = {
        **_frame(request, settings, key),
        "key": task_key,
        "task": stored["task"],
        "origin": origin,
        "run": run,
        "answers": stored["answers"],
        "notes": stored.get("notes", []),
        "latest": stored["latest"],
        "counts": stored.get("counts", {}),
        "state": stored["state"],
        "codes": [(c, explain_code(c)) for c in stored["task"]["codes"]],
        "source": _source(review, stored, unit),
        "queue_url": f"/review?{q.query()}",
        "step_url": f"/review/step?{step_query}",
        "state_filter": q.state or "",
        "receipt_url": receipt_url(origin["run"], origin["doc_id"]),
        "saved": _saved(service, key, saved),
        "progress": _progress(service, run, q, key),
    }
    return _html(_render("review_task.html", **context))


# -- page images of a PDF ---------------------------------------------------------------------


def page_png(service: Any, record: Any, doc_id: str, page: int) -> Response:
    """Page ``page`` of the PDF that document ``doc_id`` of the run was read from, as a PNG
    at GROUNDSWELL_PAGE_IMAGE_DPI: rendered once (by source sha256, page and resolution) and
    kept in the run's output store; at most GROUNDSWELL_PAGE_RENDER_CONCURRENCY renders at
    once in this process (503 with Retry-After past GROUNDSWELL_PAGE_RENDER_WAIT_SECONDS)."""
    from groundswell.shared.read.render import RenderBusy, RenderError, page_image, render_limit
    from groundswell.shared.receipts import content_sha256
    from groundswell.shared.runs.execute import context

    settings = service.settings
    ctx = context(service, record)
    runner = ctx.runner
    source = runner.find_source(doc_id)
    from groundswell.shared.corpus import source_format

    # a PDF's pages, or a scan's (an image read by OCR)
    if not isinstance(source, str) or source_format(source) not in ("pdf", "image"):
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"document {doc_id} of run {record.id} is not a PDF"
        )
    try:
        data = ctx.corpus.get(source, max_bytes=settings.max_document_bytes)
    except KeyError:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{source}: no such document") from None
    sha = content_sha256(data)
    limit = render_limit(settings.page_render_concurrency, settings.page_render_wait_seconds)
    try:
        image = page_image(ctx.output, sha, page, settings.page_image_dpi, lambda: data, limit)
    except RenderBusy as exc:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, str(exc), headers={"retry-after": "2"}
        ) from None
    except RenderError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{source}: {exc}") from None
    return Response(
        image,
        media_type="image/png",
        headers={
            "cache-control": "private, max-age=3600",
            "content-security-policy": PAGE_CSP,
            "x-content-type-options": "nosniff",
        },
    )


Page = Annotated[int, Path(ge=1, le=100_000)]


@router.get("/review/tasks/{task_key}/pages/{page}.png")
def task_page_image(
    task_key: str, page: Page, request: Request, settings: SettingsDep, service: ServiceDep
) -> Response:
    """A page of the PDF a task's document was read from (the session's key must see the
    task's run, as for the task itself)."""
    key = _signed_in(request, settings)
    if isinstance(key, Response):
        return key
    origin = stored_task(service, review_store(service), task_key, key)["origin"]
    record = run_review(service, origin["run"], key).record
    return page_png(service, record, origin["doc_id"], page)
