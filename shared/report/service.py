"""The report of a run, page by page: the page's documents picked from the run's index
(:mod:`report.pages`), their receipts, texts, labels and review tasks, rendered
(:mod:`report.render`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from groundswell.shared.corpus import document_key, labels_key
from groundswell.shared.receipts import open_receipt
from groundswell.shared.report.pages import ReportQuery, check_filter, select
from groundswell.shared.report.render import render_report
from groundswell.shared.results.service import run_index
from groundswell.shared.review.links import review_states, review_tasks
from groundswell.shared.runs.models import RunNotFinished, RunRecord

if TYPE_CHECKING:
    from groundswell.shared.results.models import RunSource


def run_report(service: RunSource, run_id: str, max_documents: int = 50, **query: Any) -> str:
    """The HTML report of a finished run: ``max_documents`` a page; ``query``: the filters
    (verdict, outcome, code, document) and cursor (after, before) of the page."""
    record = service.get(run_id)
    for name, value in query.items():
        check_filter(name, value)  # UnknownFilter: a misspelling, not an empty page
    return report(service, record, ReportQuery(per_page=max_documents, **query))


def report(service: RunSource, record: RunRecord, query: ReportQuery | None = None) -> str:
    """The HTML report: the summary, the codes, a page of documents (``query``: filters and a
    cursor) and the failed units. A page reads the index pieces it pages through and the
    receipts, texts and labels of its own documents, however large the run."""
    query = query or ReportQuery()
    summary = service.summary(record.id)
    index = run_index(service, record)
    if summary is None or index is None:
        raise RunNotFinished(f"run {record.id} is {record.state}: its report needs its summary")
    output, corpus = service.store(record.output), service.store(record.corpus)

    def receipt(key: str) -> dict[str, Any] | None:
        try:
            return open_receipt(output.get(key), key)
        except (KeyError, ValueError):
            return None

    # Index rows written before rows carried counts: a filter reads their receipts (and lets
    # each go: a scan holds one at a time).
    selection = select(index, query, receipt)
    rows = [row for doc in selection.documents for row in doc]

    layouts: dict[str, Any] = {}  # the layout of the document just loaded (PDFs)
    # The page's documents' listing entries: they locate a record of a corpus read in place.
    listings: dict[str, dict[str, Any]] = {}
    for row in rows:
        listings.setdefault(row["doc_id"], {}).update(row.get("listing") or {})

    def document(doc_id: str) -> str | None:
        try:
            return corpus.get(document_key(doc_id)).decode("utf-8", "replace")
        except KeyError:
            pass
        # A document read from PDF, HTML or XML: its stored reading (never read here).
        try:
            runner = service.inputs(record).runner
            doc = runner.indexed_document(doc_id, listings.get(doc_id))
            if doc.failure is not None:
                return None
            layouts[doc_id] = doc.layout
            return doc.text()
        except Exception:
            return None

    def labels(doc_id: str) -> dict[str, Any]:
        try:
            return json.loads(corpus.get(labels_key(doc_id)))
        except (KeyError, ValueError):
            return {}

    page_docs = [doc[0]["doc_id"] for doc in selection.documents if doc]
    tasks = review_tasks(output.get, record.id, page_docs)
    if tasks is not None:
        review_states(output, record.id, tasks)
    return render_report(
        summary,
        rows,
        receipt,
        document,
        labels,
        query.per_page,
        index.manifest.get("document_ids", len(page_docs)),
        lambda d: layouts.pop(d, None),
        query=query,
        selection=selection,
        review=tasks,
        highlights=index.highlights if not query.filters() and selection.first else None,
    )
