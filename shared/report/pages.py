"""Which documents one page of a run's report shows.

A page costs what it shows, however large the run. Documents come from the run's index in
``doc_id`` order from a cursor (after, or before, a document), a piece at a time. A filter
(verdict, outcome, code) is checked against the counts each index row carries (its
``tally``), so the receipts read are those of the page's documents; a row written before
rows carried counts has its receipt read instead. A filter that matches rarely stops after
:data:`SCAN_BUDGET` (a few pieces) with a cursor to go on, rather than reading the run.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from groundswell.shared.runs.index import TALLIED, RunIndex

FILTERS = ("verdict", "outcome", "code", "document")
# What a filter counts (the counters an index row's tally carries): claims by verdict,
# candidates by outcome, decisions with a code.
_TALLY = dict(zip(("verdict", "outcome", "code"), TALLIED, strict=True))
SCAN_BUDGET = 20_000  # index rows a filtered page reads at most (about five pieces)
RECEIPT_COST = 20  # a row without a tally costs its receipt: as many rows

Load = Callable[[str], dict[str, Any] | None]


class UnknownFilter(ValueError):
    """A filter value no claim, candidate or decision can have (a misspelling)."""


def check_filter(name: str, value: str | None) -> None:
    """Refuse a verdict, outcome or code that does not exist, naming those that do (a
    misspelled filter would otherwise show an empty page)."""
    import difflib

    from groundswell.shared.review.explain import KNOWN_CODES
    from groundswell.shared.summary import OUTCOMES, VERDICTS

    known = {"verdict": VERDICTS, "outcome": OUTCOMES, "code": KNOWN_CODES}.get(name)
    if value is None or known is None or value in known:
        return
    close = difflib.get_close_matches(value, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    plural = f"the {name}s" + (" (the specification's and the guards')" if name == "code" else "")
    raise UnknownFilter(f"unknown {name} {value!r}{hint}: {plural} are {', '.join(known)}")


@dataclass(frozen=True)
class ReportQuery:
    """What a page of the report shows: its filters, its cursor and its size."""

    verdict: str | None = None
    outcome: str | None = None
    code: str | None = None
    document: str | None = None
    after: str | None = None  # the page starts after this document (next pages)
    before: str | None = None  # the page ends before this document (previous pages)
    per_page: int = 50

    def filters(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in FILTERS if getattr(self, k)}

    def matches(self, doc_id: str, tally: Mapping[str, int]) -> bool:
        if self.document and doc_id != self.document:
            return False
        return all(
            tally.get(_TALLY[name] + wanted, 0) > 0
            for name, wanted in self.filters().items()
            if name in _TALLY
        )

    def href(self, **changes: str | None) -> str:
        """The report's URL (a query on the page's own path) with ``changes``; None drops a
        parameter. Paging keeps the filters; a filter starts again at the first page."""
        wanted = {**self.filters(), "after": self.after, "before": self.before}
        if not {"after", "before"} & changes.keys():
            wanted.update(after=None, before=None)
        wanted.update(changes)
        params = {k: v for k, v in wanted.items() if v}
        if self.per_page != 50:
            params["documents"] = str(self.per_page)
        return "?" + urlencode(params) if params else "?"


@dataclass
class Selection:
    """The documents of one page (each its index rows), and the cursors around it."""

    documents: list[list[dict[str, Any]]] = field(default_factory=list)
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)
    previous: str | None = None  # ``before`` of the previous page
    next: str | None = None  # ``after`` of the next page
    first: bool = True  # the page is the first (no previous link)
    stopped: bool = False  # the scan budget ran out before the page filled
    scanned: int = 0


def receipt_tally(kind: str, receipt: Mapping[str, Any] | None) -> dict[str, int]:
    """A unit's tally from its receipt (for index rows written before rows carried one)."""
    from groundswell.shared.summary import admit_unit_counts, verify_unit_counts

    if not receipt:
        return {}
    if kind == "verify":
        pairs = ((None, r.get("certificate") or {}) for r in receipt.get("records") or [])
        counts = verify_unit_counts(pairs, None)
    else:
        counts = admit_unit_counts(receipt.get("receipt") or {}, None)
    return {k: v for k, v in counts.items() if k.startswith(TALLIED)}


def _tally(rows: list[dict[str, Any]], load: Load) -> tuple[dict[str, int], int]:
    """A document's tally, and what finding it cost (rows, and receipts as rows)."""
    total: Counter[str] = Counter()
    cost = 0
    for row in rows:
        tally = row.get("tally")
        cost += 1
        if tally is None:
            key = row.get("receipt")
            tally = receipt_tally(row["kind"], load(key) if key else None)
            cost += RECEIPT_COST
        total.update(tally)
    return dict(total), cost


def _documents(rows: Iterator[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for doc_id, group in itertools.groupby(rows, key=lambda r: r["doc_id"]):
        yield doc_id, sorted(group, key=lambda r: r["kind"])


def select(index: RunIndex, query: ReportQuery, load: Load) -> Selection:
    """The documents of the page ``query`` asks for, in ``doc_id`` order."""
    out = Selection()
    if query.document:
        rows = sorted(index.document(query.document), key=lambda r: r["kind"])
        if rows:
            tally, _ = _tally(rows, load)
            if query.matches(query.document, tally):
                out.documents, out.tallies = [rows], {query.document: tally}
        return out
    backwards = query.before is not None
    rows = (
        index.rows_before((query.before, ""))
        if backwards
        else index.rows((query.after, "\U0010ffff") if query.after is not None else None)
    )
    found: list[tuple[str, list[dict[str, Any]], dict[str, int]]] = []
    more, last = False, None
    for doc_id, doc_rows in _documents(rows):
        if out.scanned >= SCAN_BUDGET:
            out.stopped = True
            break
        tally, cost = _tally(doc_rows, load)
        out.scanned += cost
        last = doc_id
        if not query.matches(doc_id, tally):
            continue
        if len(found) == query.per_page:
            more = True
            break
        found.append((doc_id, doc_rows, tally))
    if backwards:
        found.reverse()
        out.first = not (more or out.stopped)
        if out.stopped and not found:
            out.previous = last  # go on looking before the last document scanned
        elif not out.first:
            out.previous = found[0][0]
        out.next = found[-1][0] if found else query.before
    else:
        out.first = query.after is None
        if found and not out.first:
            out.previous = found[0][0]
        if more:
            out.next = found[-1][0]
        elif out.stopped:
            out.next = last  # go on looking after the last document scanned
    out.documents = [rows for _, rows, _ in found]
    out.tallies = {doc_id: tally for doc_id, _, tally in found}
    return out


# -- links ----------------------------------------------------------------------------------


def receipt_url(run_id: str, doc_id: str) -> str:
    """The API route of one document's receipts in a run."""
    return f"/v1/runs/{quote(run_id, safe='')}/documents/{quote(doc_id, safe='')}/receipts"


def review_url(run_id: str, **filters: str) -> str:
    """The review page's queue, filtered (``document``, ``code``...)."""
    return "/review?" + urlencode({"run": run_id, **filters})


def task_url(task_key: str) -> str:
    return f"/review/tasks/{quote(task_key, safe=':')}"
