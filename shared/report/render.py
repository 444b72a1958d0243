"""HTML pages: the report of a run, and the review page of one admission receipt.

The report of a run shows a table of contents, the summary, the codes, the documents that
need a person most, a page of documents (their counts, then each one's claims and candidates
with their spans highlighted in the source) and the failed units; ``report.pages``
picks the page's documents (filters, cursors) and its review tasks. The review page
(``groundswell report RECEIPT DOC SCHEMA CANDIDATES``) shows each candidate's outcome, codes
and value, with its evidence highlighted in the document.

Both are Jinja2 templates (``templates/``, shipped as package data) rendered with autoescape
on, so no text from a document, claim, candidate or receipt can become markup. Pages are
self-contained (inline CSS, no scripts), so they can be mailed or attached to a ticket.

Python prepares plain values (offsets mapped to characters, snippets cut, labels compared);
the templates only lay them out. Documents are prepared one at a time, so a report holds one
document's text at once, and the views (snippets, not texts) of one page.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template

from groundswell.shared.producers import MAX_PRODUCERS
from groundswell.shared.read.regions import span_pages, span_regions, utf8_offsets
from groundswell.shared.report.pages import (
    ReportQuery,
    Selection,
    receipt_tally,
    receipt_url,
    review_url,
    task_url,
)
from groundswell.shared.review.explain import explain_code
from groundswell.shared.review.links import ReviewLinks
from groundswell.shared.summary import (
    OUTCOMES,
    REPAIR_ACTIONS,
    REPAIRED,
    TIERS,
    VERDICTS,
    code_counts,
    repair_stage_counts,
)

CONTEXT = 90  # characters of source shown around a span


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("groundswell.shared", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = _pct
    return env


def template(name: str) -> Template:
    return environment().get_template(name)


# -- offsets ----------------------------------------------------------------------------------


def char_offsets(text: str, byte_offsets: Iterable[int]) -> dict[int, int]:
    """The character offset of each UTF-8 byte offset into ``text``, in one pass over the text
    (not one per offset). An offset that is out of range or inside a character is left out."""
    wanted = sorted({b for b in byte_offsets if isinstance(b, int) and b >= 0})
    if text.isascii():
        return {b: b for b in wanted if b <= len(text)}
    data = text.encode("utf-8", "surrogatepass")
    out: dict[int, int] = {}
    at_byte = at_char = 0
    for b in wanted:
        if b > len(data):
            break
        if b < len(data) and 0x80 <= data[b] < 0xC0:  # a continuation byte: mid-character
            continue
        at_char += len(data[at_byte:b].decode("utf-8", "surrogatepass"))
        at_byte = b
        out[b] = at_char
    return out


def _snippet(text: str, start: int | None, end: int | None) -> dict[str, str] | None:
    """The span in ``CONTEXT`` characters of its source, or None when it is not located."""
    if start is None or end is None or not 0 <= start <= end <= len(text):
        return None
    lo, hi = max(0, start - CONTEXT), min(len(text), end + CONTEXT)
    return {
        "before": ("…" if lo else "") + text[lo:start],
        "span": text[start:end],
        "after": text[end:hi] + ("…" if hi < len(text) else ""),
    }


def _label(label: bool | None, ok: bool) -> str | None:
    """How an item compares with its gold label (None when it has none)."""
    if label is None:
        return None
    if label == ok:
        return "good"
    return "escape" if not label else "refused"


# A candidate's outcome, and how it compares with its gold label, in the summary's words.
OUTCOME_WORDS = {
    "admitted": "admitted",
    "needs_verification": "sent to review",
    "rejected": "rejected",
}


def _candidate_label(label: bool | None, outcome: Any) -> str | None:
    """The summary's name for a labelled candidate's outcome (None when it has no label):
    ``right_admitted``, ``right_reviewed``, ``false_rejection``, ``escape`` or ``caught``."""
    if label is None:
        return None
    if label:
        return {"admitted": "right_admitted", "rejected": "false_rejection"}.get(
            outcome, "right_reviewed"
        )
    return "escape" if outcome == "admitted" else "caught"


def _proposed(candidates: Any) -> dict[str, Any]:
    """Each candidate's value as proposed, by its id (the admission unit's records)."""
    out: dict[str, Any] = {}
    for c in candidates if isinstance(candidates, list) else ():
        if isinstance(c, dict) and isinstance(c.get("id"), str | int) and "value" in c:
            out[str(c["id"])] = c["value"]
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# -- the report of a run ----------------------------------------------------------------------


def _points(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and value == value and abs(value) < 1e7 else None


def page_regions(layout: Any, start: Any, end: Any) -> list[dict[str, Any]]:
    """Where a span (UTF-8 bytes) is on its PDF pages: a caption and an outline of each page
    with the box of the span's words (``x``/``y``/``w``/``h`` in the page's points)."""
    out = []
    for r in span_regions(layout, start, end):
        x0, top, x1, bottom = (_points(r[k]) for k in ("x0", "top", "x1", "bottom"))
        if x0 is None or top is None or x1 is None or bottom is None:
            continue
        width, height = _points(r["width"]), _points(r["height"])
        view = {
            "page": _text(r["page"]),
            "caption": f"page {r['page']}, x {x0:g}–{x1:g}, y {top:g}–{bottom:g}",
            "outline": None,
        }
        if width and height and width > 0 and height > 0:
            view["outline"] = {
                "width": f"{width:g}",
                "height": f"{height:g}",
                "x": f"{x0:g}",
                "y": f"{top:g}",
                "w": f"{max(x1 - x0, 0):g}",
                "h": f"{max(bottom - top, 0):g}",
            }
        out.append(view)
    return out


def _page_list(pages: Any) -> str:
    return ", ".join(str(p) for p in pages if isinstance(p, int)) if isinstance(pages, list) else ""


def _claims(
    text: str, receipt: dict[str, Any], gold: dict[str, Any], layout: Any = None
) -> list[dict[str, Any]]:
    rows = receipt.get("records") or []
    # Certificates give characters; the layout gives UTF-8 bytes.
    to_bytes = (
        utf8_offsets(text, (row["certificate"].get(k) for row in rows for k in ("start", "end")))
        if layout
        else {}
    )
    out = []
    for row in rows:
        record, cert = row["record"], row["certificate"]
        start, end = to_bytes.get(cert.get("start")), to_bytes.get(cert.get("end"))
        pages = row.get("pages") or (span_pages(layout, start, end) if layout else [])
        verdict = cert.get("verdict")
        label = gold.get(str(record.get("id"))) if record.get("id") is not None else None
        repair = _repair(text, row.get("repair"), label)
        out.append(
            {
                "id": _text(record.get("id", row.get("line"))),
                "verdict": _text(verdict),
                "tier": _text(cert.get("tier")),
                "claim": _text(record.get("claim")),
                "snippet": _snippet(text, cert.get("start"), cert.get("end")),
                "label": _label(label, bool(cert.get("grounded"))),
                # A PDF with a layout: the pages of the located span, and where on them.
                "pages": _page_list(pages),
                "regions": page_regions(layout, start, end) if layout else [],
                "repair": repair,
            }
        )
    return out


def _repair(text: str, repair: Any, label: bool | None) -> dict[str, Any] | None:
    """What the repair cascade did to a claim, for the report: its action and stage, and for
    a claim it changed or annotated, the model's text (before) and the source's (after, with
    its place in the source)."""
    if not isinstance(repair, dict):
        return None
    action = _text(repair.get("action"))
    after = repair.get("after") if isinstance(repair.get("after"), dict) else {}
    alignment = repair.get("alignment") if isinstance(repair.get("alignment"), dict) else {}
    span = after if after.get("start") is not None else alignment
    source = after.get("span_text") if after.get("span_text") is not None else alignment.get("text")
    shown = action in (*REPAIRED, "normalized")
    score = alignment.get("score")
    return {
        "action": action,
        "stage": _text(repair.get("stage")),
        "score": f"{score:.3f}" if isinstance(score, int | float) else "",
        "threshold": _text(repair.get("threshold")),
        "threshold_source": _text(repair.get("threshold_source")),
        "shown": shown,
        "before": _text(repair.get("claim_original")),
        "after": _text(source),
        "snippet": _snippet(text, span.get("start"), span.get("end")) if shown else None,
        # Kept by a repair, labelled not genuine.
        "wrong": label is False and action in REPAIRED,
    }


def _candidates(
    text: str,
    decisions: list[dict[str, Any]],
    gold: dict[str, Any],
    pages: Any = None,
    layout: Any = None,
    proposed: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``pages``: the admission receipt's pages of each decision's evidence, by the
    decision's index; ``layout``: the PDF's layout, when the evidence offsets are its own;
    ``proposed``: each candidate's value as proposed, by id (shown when the decision's value
    differs from it, as an invalid value's does)."""
    pages = pages if isinstance(pages, dict) else {}
    proposed = proposed or {}

    def span(d: dict[str, Any]) -> dict[str, Any]:
        ev = d.get("evidence") if d.get("source") == "document" else None
        return ev if isinstance(ev, dict) else {}

    chars = char_offsets(text, (b for d in decisions for b in span(d).values()))
    out = []
    for n, d in enumerate(decisions):
        ev = span(d)
        on = pages.get(str(n)) or (
            span_pages(layout, ev.get("start"), ev.get("end")) if layout else []
        )
        cid = d.get("candidate_id")
        outcome = d.get("outcome")
        label = gold.get(str(cid)) if cid is not None else None
        given = proposed.get(str(cid)) if cid is not None else None
        shown = json.dumps(given, ensure_ascii=False) if given is not None else ""
        out.append(
            {
                "proposed": shown
                if given is not None and _text(given) != _text(d.get("value"))
                else "",
                "outcome_words": OUTCOME_WORDS.get(_text(outcome), _text(outcome)),
                "id": _text(cid),
                "field": _text(d.get("field")),
                "key": d.get("key") if isinstance(d.get("key"), str) else None,
                "value": _text(d.get("value")),
                "unit": _text(d.get("unit")),
                "outcome": _text(outcome),
                "codes": [_text(c) for c in d.get("codes", [])],
                "snippet": _snippet(text, chars.get(ev.get("start")), chars.get(ev.get("end"))),
                "label": _candidate_label(label, outcome),
                "pages": _page_list(on),
                "regions": page_regions(layout, ev.get("start"), ev.get("end")) if layout else [],
                # The span in the layout's offsets, for the page images (None without one),
                # and its role items' (sign, scale, unit, key, field), boxed in another colour.
                "span": (ev.get("start"), ev.get("end")) if layout else None,
                "role_spans": [
                    (p.get("start"), p.get("end"), _text(p.get("role")))
                    for p in d.get("parts") or ()
                    if layout and ev and isinstance(p, dict) and p.get("role")
                ],
            }
        )
    return out


def _document(
    doc_id: str,
    text: str | None,
    units: dict[str, dict[str, Any]],
    labels: dict[str, Any],
    layout: Any = None,
) -> dict[str, Any]:
    """``layout``: the groundgate layout of a PDF's text read (its pages and word boxes)."""
    errors = [
        {
            "where": _text(e.get("file", "")) + (f":{e['line']}" if e.get("line") else ""),
            "message": _text(e.get("message")),
        }
        for unit in units.values()
        for e in unit.get("index", {}).get("errors", [])
    ]
    claims: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    if text is not None:
        verify = units.get("verify", {}).get("receipt")
        if verify:
            claims = _claims(text, verify, labels.get("claims", {}), layout)
        admit = units.get("admit", {}).get("receipt")
        if admit and admit.get("receipt"):
            decisions = admit["receipt"].get("decisions", [])
            # Admission read the NFC form of a document that is not NFC: its spans are there.
            admitted_text = unicodedata.normalize("NFC", text) if admit.get("normalized") else text
            candidates = _candidates(
                admitted_text,
                decisions,
                labels.get("candidates", {}),
                admit.get("pages"),
                None if admit.get("normalized") else layout,
                _proposed(admit.get("records")),
            )
    tally: Counter[str] = Counter()
    for kind, unit in units.items():
        tally.update(receipt_tally(kind, unit.get("receipt")))
    counts = {
        "verdicts": [(v, tally[f"claims.verdict.{v}"]) for v in VERDICTS],
        "outcomes": [(o, tally[f"candidates.outcome.{o}"]) for o in OUTCOMES],
        "failed": sum(u.get("index", {}).get("status") == "failed" for u in units.values()),
    }
    return {
        "id": doc_id,
        "errors": errors,
        "claims": claims,
        "candidates": candidates,
        "counts": counts,
    }


def _shown(doc: dict[str, Any], query: ReportQuery) -> dict[str, Any]:
    """A document's claims and candidates that pass the page's filters: a filter on claims
    (verdict) hides the candidates unless one on candidates (outcome, code) is also set."""
    on_claims = query.verdict is not None
    on_candidates = query.outcome is not None or query.code is not None
    claims, candidates = doc["claims"], doc["candidates"]
    if on_claims:
        claims = [c for c in claims if c["verdict"] == query.verdict]
    elif on_candidates:
        claims = []
    if on_candidates:
        candidates = [
            k
            for k in candidates
            if (query.outcome is None or k["outcome"] == query.outcome)
            and (query.code is None or query.code in k["codes"])
        ]
    elif on_claims:
        candidates = []
    return {**doc, "claims": claims, "candidates": candidates}


def _links(
    doc: dict[str, Any],
    run_id: str | None,
    query: ReportQuery,
    review: ReviewLinks | None,
    code_links: dict[str, tuple[str, str | None]],
) -> dict[str, Any]:
    """The links of a document's section: itself filtered, its receipts, each decision's
    review task (or the review queue of its document when the run's tasks are not made
    yet), and each code's decisions in this report and in the review queue (``code_links``:
    those made so far on the page, by code; a code's are made once)."""
    doc_id = doc["id"]
    links = {
        "document": query.href(document=doc_id),
        "receipts": receipt_url(run_id, doc_id) if run_id else None,
    }
    queue = review_url(run_id, document=doc_id) if run_id else None
    for k in doc["candidates"]:
        task = None
        if run_id and review is not None and review.covers(doc_id):
            task = review.task(doc_id, k["field"], k["key"])
        k["task"] = task_url(task) if task else None
        k["review"] = k["task"] or queue
        k["review_state"] = review.states.get(task) if task and review is not None else None
        k["resolved"] = review.resolved.get(task) if task and review is not None else None
        for c in k["codes"]:
            if c not in code_links:
                code_links[c] = _code_links(c, run_id, query)
        k["code_links"] = [(c, *code_links[c]) for c in k["codes"]]
    return {**doc, "links": links}


def _code_links(
    code: str, run_id: str | None, query: ReportQuery, coverage: bool = False
) -> tuple[str, str | None]:
    """A code's decisions in this report, and in the review queue. A coverage finding has
    no decision to show here: its row links to its review tasks."""
    queue = review_url(run_id, code=code) if run_id else None
    return (queue if coverage and queue else query.href(code=code)), queue


def _interest(units: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """Documents a person should see first: failures, then review and rejections."""
    failed = sum(1 for u in units.values() if u.get("index", {}).get("status") == "failed")
    flagged = 0
    admit = units.get("admit", {}).get("receipt") or {}
    for decision in (admit.get("receipt") or {}).get("decisions", []):
        flagged += decision.get("outcome") != "admitted"
    return (-failed, -flagged)


def _summary_view(summary: dict[str, Any]) -> dict[str, Any]:
    counts, rates = summary.get("counts") or {}, summary.get("rates") or {}
    codes = code_counts(counts)
    gold: list[tuple[str, int]] = []
    if counts.get("candidates.labelled") or counts.get("claims.labelled"):
        gold = [
            ("right values admitted", counts.get("candidates.right_admitted", 0)),
            ("right values sent to review", counts.get("candidates.right_reviewed", 0)),
            ("escapes: wrong values admitted", counts.get("candidates.escapes", 0)),
            ("wrong values caught", counts.get("candidates.caught", 0)),
            ("sent to review", counts.get("candidates.reviews", 0)),
            ("false rejections", counts.get("candidates.false_rejections", 0)),
            ("fabricated quotations accepted", counts.get("claims.escapes", 0)),
            ("genuine quotations refused", counts.get("claims.refused_genuine", 0)),
        ]
        if counts.get("repairs"):
            gold.append(
                (
                    "wrong repairs: kept by a repair, labelled not genuine",
                    counts.get("repairs.wrong", 0),
                )
            )
    policy = summary.get("policy") or {}
    return {
        "summary": {
            "run_id": _text(summary.get("run_id")) or None,
            "state": _text(summary.get("state")),
            "corpus": _text(summary.get("corpus")),
            "documents": summary.get("documents", 0),
            "finished_at": _text(summary.get("finished_at")),
            "counts": counts,
            "rates": rates,
        },
        "policy": {
            k: _text(policy.get(k)) for k in ("ref", "verify_fingerprint", "admit_fingerprint")
        },
        "merkle_root": str((summary.get("index") or {}).get("merkle_root"))[:16],
        "through": rates.get("claims_located_through_tier") or {},
        "outcome_rates": rates.get("candidates") or {},
        "codes": codes,
        "gold": gold,
        "repair_actions": [(a, counts.get(f"repairs.action.{a}", 0)) for a in REPAIR_ACTIONS],
        "repair_stages": repair_stage_counts(counts),
        "tiers": TIERS,
        "verdicts": VERDICTS,
        "outcomes": OUTCOMES,
        "charts": _charts(counts, codes),
        "producers": [
            {"key": _text(key), "counts": p.get("counts") or {}, "rates": p.get("rates") or {}}
            for key, p in (summary.get("producers") or {}).items()
        ],
        "producer_bound": MAX_PRODUCERS,
    }


def _charts(counts: dict[str, Any], codes: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """The summary's pictures: claims by tier and by verdict, candidates by outcome, codes
    by count (the most frequent first)."""
    from groundswell.shared.charts import bar_chart

    tiers = [(t, counts.get(f"claims.tier.{t}", 0), "t-bar") for t in (*TIERS, "none")]
    verdicts = [(v, counts.get(f"claims.verdict.{v}", 0), f"v-{v}") for v in VERDICTS]
    outcomes = [
        (OUTCOME_WORDS.get(o, o), counts.get(f"candidates.outcome.{o}", 0), f"o-{o}")
        for o in OUTCOMES
    ]
    charts = [
        bar_chart("tiers", "Claims by tier", tiers),
        bar_chart("verdicts", "Claims by verdict", verdicts),
        bar_chart("outcomes", "Candidates by outcome", outcomes),
        bar_chart("codes", "Codes by count", [(c, n, "c-bar") for c, n in codes]),
    ]
    return [c for c in charts if c is not None]


def render_report(
    summary: dict[str, Any],
    index: list[dict[str, Any]],
    load_receipt: Callable[[str], dict[str, Any] | None],
    load_document: Callable[[str], str | None],
    load_labels: Callable[[str], dict[str, Any]],
    max_documents: int = 50,
    total_documents: int | None = None,
    load_layout: Callable[[str], dict[str, Any] | None] | None = None,
    *,
    query: ReportQuery | None = None,
    selection: Selection | None = None,
    review: ReviewLinks | None = None,
    highlights: Callable[[], list[dict[str, Any]]] | None = None,
) -> str:
    """The HTML report of a run. ``index`` holds the rows of the documents to show;
    ``total_documents`` is how many the run has, for the note on the rest. Each document's
    text is read when its section is rendered, and let go after it; ``load_layout`` gives a
    PDF's layout (called after ``load_document``), so each located span shows the region of
    its words on its pages.

    A page of a run's report (``report/service.py``) passes: ``query`` (its filters and
    cursor), ``selection`` (its documents in ``doc_id`` order and the cursors of the pages
    around it), ``review`` (the review tasks of its documents, when the run's are made) and
    ``highlights`` (the documents that need a person most, listed on the first page).
    Without a selection, the documents given are shown those that need a person first."""
    query = query or ReportQuery(per_page=max_documents)
    by_doc: dict[str, dict[str, dict[str, Any]]] = {}
    for row in index:
        by_doc.setdefault(row["doc_id"], {})[row["kind"]] = {"index": row}
    for units in by_doc.values():
        for unit in units.values():
            key = unit["index"].get("receipt")
            unit["receipt"] = load_receipt(key) if key else None
    if selection is None:
        order = sorted(by_doc, key=lambda d: (_interest(by_doc[d]), d))
    else:
        order = list(by_doc)
    shown = order[:max_documents]
    total = max(total_documents or 0, len(order))
    run_id = _text(summary.get("run_id")) or None
    view = _summary_view(summary)
    counts = view["summary"]["counts"]
    code_links = {
        code: _code_links(code, run_id, query, coverage=f"coverage.{code}" in counts)
        for code, _ in view["codes"]
    }

    def documents() -> Iterator[dict[str, Any]]:
        for doc_id in shown:
            units = by_doc.pop(doc_id)
            text = load_document(doc_id)
            layout = load_layout(doc_id) if load_layout is not None and text is not None else None
            doc = _document(doc_id, text, units, load_labels(doc_id), layout)
            doc["images"] = _page_images(doc, layout, run_id)
            yield _links(_shown(doc, query), run_id, query, review, code_links)

    # The document list (its counts) and the sections below it go through the documents once.
    listed = list(documents())
    page = template("run_report.html").generate(
        **view,
        documents=listed,
        hidden=0 if query.filters() else total - len(shown),
        filters=list(query.filters().items()),
        clear=query.href(**dict.fromkeys(query.filters())),
        paging=_paging(query, selection),
        code_links=code_links,
        filter_links={
            "verdict": {v: query.href(verdict=v) for v in VERDICTS},
            "outcome": {o: query.href(outcome=o) for o in OUTCOMES},
        },
        failed=_failed(summary, query, run_id),
        attention=_attention(highlights, query) if highlights is not None else [],
        review_made=review is not None,
    )
    return "".join(page)


def _page_images(doc: dict[str, Any], layout: Any, run_id: str | None) -> list[dict[str, Any]]:
    """The PDF pages the document's candidates cite, each value boxed and each of its role
    items boxed in another colour (the API serves the images: a report read through it
    shows them; a report written to a file has none)."""
    from groundswell.shared.read.render import page_views

    if not layout or not run_id:
        return []
    spans = []
    for k in doc["candidates"]:
        if k.get("span"):
            name = f"{k['id']}: {k['field']} {k['value']}"
            spans.append((*k["span"], "value", k["id"], f"{name} ({k['outcome_words']})"))
            for start, end, role in k.get("role_spans") or ():
                spans.append((start, end, "role", "", f"{role} of {name}"))
    url = receipt_url(run_id, doc["id"]).removesuffix("receipts") + "pages/"
    return page_views(layout, spans, url)


def _paging(query: ReportQuery, selection: Selection | None) -> dict[str, Any] | None:
    if selection is None:
        return None
    return {
        "first": None if selection.first else query.href(after=None, before=None),
        "previous": query.href(after=None, before=selection.previous)
        if selection.previous
        else None,
        "next": query.href(after=selection.next, before=None) if selection.next else None,
        "stopped": selection.stopped,
        "scanned": selection.scanned,
    }


def _failed(summary: dict[str, Any], query: ReportQuery, run_id: str | None) -> dict[str, Any]:
    """The failed units and input errors the summary recorded (its first ones), each with
    where it was (file:line), its field and message, and a link to its document."""
    errors = []
    for e in summary.get("errors") or []:
        if not isinstance(e, dict):
            continue
        unit = _text(e.get("unit"))
        doc_id = unit.partition("/")[2]
        errors.append(
            {
                "unit": unit,
                "where": _text(e.get("file")) + (f":{e['line']}" if e.get("line") else ""),
                "field": _text(e.get("field")),
                "message": _text(e.get("message")),
                "document": query.href(document=doc_id) if doc_id else None,
                "receipts": receipt_url(run_id, doc_id) if run_id and doc_id else None,
            }
        )
    return {
        "units": summary.get("failed_units", 0),
        "errors_total": summary.get("errors_total", len(errors)),
        "errors": errors,
    }


ATTENTION = 20  # documents listed on the first page as needing a person most


def _attention(
    highlights: Callable[[], list[dict[str, Any]]], query: ReportQuery
) -> list[dict[str, Any]]:
    out = []
    for h in highlights():
        if len(out) == ATTENTION:
            break
        if h.get("failed_units") or h.get("flagged"):
            doc_id = _text(h.get("doc_id"))
            out.append(
                {
                    "id": doc_id,
                    "failed": h.get("failed_units", 0),
                    "flagged": h.get("flagged", 0),
                    "href": query.href(document=doc_id),
                }
            )
    return out


# -- the review page of one receipt -----------------------------------------------------------

# The order of the candidates on the page, and which colour wins where two spans overlap.
_NEEDS_A_PERSON = {"needs_verification": 0, "rejected": 1, "admitted": 2}
_LAYOUT_VERSION = "0.1"


def layout_pages(layout: Any, document_sha256: str) -> list[tuple[int, int, int]]:
    """``(page, start byte, end byte)`` of each page of a groundgate layout (``groundgate read
    --layout``); ValueError for a layout that is malformed or of another document."""
    if not isinstance(layout, dict) or layout.get("groundgate_layout") != _LAYOUT_VERSION:
        raise ValueError(f"not a groundgate layout v{_LAYOUT_VERSION} object")
    if layout.get("document_sha256") != document_sha256:
        raise ValueError("the layout was extracted from a different document")
    pages, end = [], 0
    for p in layout.get("pages") or []:
        if not isinstance(p, dict) or not all(
            isinstance(p.get(k), int) and not isinstance(p.get(k), bool)
            for k in ("page", "start", "end")
        ):
            raise ValueError("malformed layout: a page needs integer page, start and end")
        if not end <= p["start"] <= p["end"]:
            raise ValueError("malformed layout: pages must be in text order")
        end = p["end"]
        pages.append((p["page"], p["start"], p["end"]))
    return pages


def _is_web_link(url: str) -> bool:
    return url.lower().startswith(("https://", "http://"))


def _segments(
    text: str,
    spans: list[tuple[int, int, int, str, str]],
    anchors: dict[int, list[str]],
    breaks: dict[int, int],
) -> list[dict[str, Any]]:
    """The document cut wherever a span, an anchor or a page starts or ends. ``spans`` are
    ``(start, end, rank, css, title)`` in characters; where spans overlap, the lowest rank
    gives the colour and every span's title is listed."""
    ends = (s[1] for s in spans)
    cuts = sorted({0, len(text), *anchors, *breaks, *(s[0] for s in spans), *ends})
    starting: dict[int, list[int]] = {}
    for i, span in enumerate(spans):
        if span[1] > span[0]:
            starting.setdefault(span[0], []).append(i)
    active: list[int] = []
    out = []
    for n, a in enumerate(cuts):
        b = cuts[n + 1] if n + 1 < len(cuts) else a
        active = [i for i in active if spans[i][1] > a] + starting.get(a, [])
        if a == b and not anchors.get(a) and a not in breaks:
            continue
        covering = sorted(active, key=lambda i: spans[i][2])
        out.append(
            {
                "text": text[a:b],
                "css": spans[covering[0]][3] if covering else "",
                "title": ", ".join(dict.fromkeys(spans[i][4] for i in covering)),
                "anchors": anchors.get(a, []),
                "page": breaks.get(a),
            }
        )
    return out


def _judgments(receipt: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for j in receipt.get("judgments") or []:
        if isinstance(j, dict):
            answer = f" {j['answer']}" if j.get("answer") is not None else ""
            said = f"{j.get('question')}{answer} (p {j.get('p')})"
            out.setdefault(str(j.get("candidate_sha256")), []).append(said)
    return out


def review_view(
    receipt: dict[str, Any],
    text: str,
    *,
    title: str,
    references: list[Any] | None = None,
    pages: list[tuple[int, int, int]] | None = None,
    images: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What the review page shows: the values it needs, cut and mapped to characters;
    ``images``: the cited PDF pages (``receipt_page_images``), shown beside the text."""
    decisions = [d for d in receipt.get("decisions") or [] if isinstance(d, dict)]
    references_text = {
        r["id"]: r["text"]
        for r in references or []
        if isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("text"), str)
    }

    def span(d: dict[str, Any]) -> dict[str, Any]:
        ev = d.get("evidence")
        return ev if isinstance(ev, dict) else {}

    def in_document(d: dict[str, Any]) -> bool:
        return d.get("source") == "document"

    wanted = [b for d in decisions if in_document(d) for b in span(d).values()]
    wanted += [
        p.get(k)
        for d in decisions
        if in_document(d)
        for p in d.get("parts") or []
        if isinstance(p, dict)
        for k in ("start", "end")
    ]
    pages = pages or []
    chars = char_offsets(text, [*wanted, *(start for _, start, _ in pages)])
    breaks = {chars[start]: page for page, start, _ in pages if start in chars}
    judged = _judgments(receipt)
    spans: list[tuple[int, int, int, str, str]] = []
    anchors: dict[int, list[str]] = {}
    views = []
    for n, d in enumerate(decisions, 1):
        outcome = _text(d.get("outcome"))
        rank = _NEEDS_A_PERSON.get(outcome, len(_NEEDS_A_PERSON))
        cid = _text(d.get("candidate_id")) or f"#{n}"
        ev = span(d)
        view: dict[str, Any] = {
            "n": n,
            "rank": rank,
            "id": _text(d.get("candidate_id")),
            "field": _text(d.get("field")),
            "key": _text(d.get("key")),
            "value": _text(d.get("value")),
            "unit": _text(d.get("unit")),
            "outcome": outcome,
            "codes": [_text(c) for c in d.get("codes") or []],
            "code_words": [(_text(c), explain_code(_text(c))) for c in d.get("codes") or []],
            "missing": [_text(m) for m in d.get("missing") or []],
            "judgments": judged.get(str(d.get("candidate_sha256")), []),
            "source": _text(d.get("source")),
            "ref": _text(d.get("ref")),
            "url": _text(d.get("url")),
            "url_link": _is_web_link(_text(d.get("url"))),
            "ref_given": d.get("ref") in references_text,
            "parts": [
                {"role": _text(p.get("role")), "passed": bool(p.get("passed"))}
                for p in d.get("parts") or []
                if isinstance(p, dict)
            ],
            "anchor": None,
            "at": len(text),
            "page": None,
            "snippet": None,
        }
        if in_document(d):
            start, end = chars.get(ev.get("start")), chars.get(ev.get("end"))
            view["snippet"] = _snippet(text, start, end)
            if view["snippet"] is not None:
                assert start is not None and end is not None
                view["anchor"], view["at"] = f"ev-{n}", start
                anchors.setdefault(start, []).append(view["anchor"])
                spans.append((start, end, rank, f"o-{outcome}", f"{cid}: {outcome}"))
                view["page"] = next(
                    (page for page, lo, hi in pages if lo <= ev["start"] < hi), None
                )
            for p in d.get("parts") or []:
                if isinstance(p, dict):
                    lo, hi = chars.get(p.get("start")), chars.get(p.get("end"))
                    if lo is not None and hi is not None and lo <= hi:
                        role = _text(p.get("role"))
                        spans.append((lo, hi, len(_NEEDS_A_PERSON) + 1, "part", f"{cid}: {role}"))
        elif d.get("source") == "reference" and d.get("ref") in references_text:
            ref_text = references_text[d["ref"]]
            ref_chars = char_offsets(ref_text, ev.values())
            view["snippet"] = _snippet(
                ref_text, ref_chars.get(ev.get("start")), ref_chars.get(ev.get("end"))
            )
        views.append(view)
    document = receipt.get("document") if isinstance(receipt.get("document"), dict) else {}
    summary = receipt.get("summary") if isinstance(receipt.get("summary"), dict) else {}
    return {
        "title": title,
        "receipt": {
            "spec": _text(receipt.get("groundgate")),
            "sha256": _text(receipt.get("receipt_sha256")),
            "document_sha256": _text(document.get("sha256")),
            "document_id": _text(document.get("id")),
            "document_source": _text(document.get("source")),
        },
        "counts": [(o, summary.get(o, 0)) for o in OUTCOMES],
        "outcome_words": OUTCOME_WORDS,
        "coverage": [
            {
                "field": _text(c.get("field")),
                "code": _text(c.get("code")),
                "words": explain_code(_text(c.get("code"))),
            }
            for c in receipt.get("coverage") or []
            if isinstance(c, dict)
        ],
        "relations": [
            {k: _text(r.get(k)) for k in ("id", "key", "difference", "allowance")}
            | {"holds": r.get("holds") is True}
            for r in receipt.get("relations") or []
            if isinstance(r, dict)
        ],
        # Those that need a person first; then in reading order.
        "decisions": sorted(views, key=lambda v: (v["rank"], v["at"], v["n"])),
        "segments": _segments(text, spans, anchors, breaks),
        "images": images or [],
        "imaged": {im["page"] for im in images or []},
    }


def receipt_page_images(
    receipt: dict[str, Any], layout: dict[str, Any], render: Callable[[int], bytes]
) -> list[dict[str, Any]]:
    """The PDF pages a receipt's document evidence is cited on (at most four), each as a PNG
    in a ``data:`` URL (the page is one file, fetching nothing: its CSP stays) with each
    candidate's value boxed and numbered as its card, and each role item boxed in another
    colour. ``render(page)`` gives page ``page``'s PNG, at the resolution of the layout's
    points times dpi / 72."""
    import base64

    from groundswell.shared.read.render import page_views

    spans = []
    decisions = [d for d in receipt.get("decisions") or [] if isinstance(d, dict)]
    for n, d in enumerate(decisions, 1):  # review_view's numbering: the cards' ids
        ev = d.get("evidence")
        if d.get("source") != "document" or not isinstance(ev, dict):
            continue
        cid = _text(d.get("candidate_id")) or f"#{n}"
        title = f"{n}. {cid}: {_text(d.get('field'))} {_text(d.get('value'))} ({d.get('outcome')})"
        spans.append((ev.get("start"), ev.get("end"), "value", str(n), title))
        for part in d.get("parts") or ():
            if isinstance(part, dict) and part.get("role"):
                role = f"{part['role']} of {n}. {cid}"
                spans.append((part.get("start"), part.get("end"), "role", "", role))
    views = page_views(layout, spans, "")
    for view in views:
        image = base64.b64encode(render(view["page"])).decode("ascii")
        view["url"] = f"data:image/png;base64,{image}"
    return views


def iter_review(receipt: dict[str, Any], text: str, **options: Any) -> Iterator[str]:
    """The review page of a receipt that re-derived from its inputs, in pieces to write as
    they come. ``options`` are ``review_view``'s: ``title``, ``references``, ``pages``,
    ``images``."""
    return template("review.html").generate(**review_view(receipt, text, **options))
