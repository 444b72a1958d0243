"""Where the review tasks of a report page's documents are, and how far they have got.

A run's task list (made by :mod:`review.store` on first use) is read in document order: its
pieces are bisected, so a report page reads a few of them whatever the run's size.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REVIEW_PIECES = 4  # pieces of a run's review task list read for one page, at most


@dataclass
class ReviewLinks:
    """The review tasks of a page's documents, by (document, field, key)."""

    tasks: dict[tuple[str, str, str | None], list[str]] = field(default_factory=dict)
    through: str | None = None  # documents after this one were not looked up (None: all were)
    # Each task's answer state (unanswered, answered, disputed), and its slot's status in the
    # run's latest resolution when the run has been resolved (review_states fills them).
    states: dict[str, str] = field(default_factory=dict)
    resolved: dict[str, str] = field(default_factory=dict)

    def covers(self, doc_id: str) -> bool:
        return self.through is None or doc_id < self.through

    def task(self, doc_id: str, field_name: str, key: Any) -> str | None:
        """The task of a decision: the one of its slot (keyed, or its field's)."""
        for slot_key in dict.fromkeys((key if isinstance(key, str) else None, None)):
            found = self.tasks.get((doc_id, field_name, slot_key))
            if found:
                return found[0] if len(found) == 1 else None
        return None


def review_states(store: Any, run_id: str, links: ReviewLinks) -> None:
    """The answer state of each task of ``links`` (its reviewers' latest answers: one listing
    a task, for the page's tasks only) and, when the run has been resolved, each task's slot
    status in its document's resolution (one object a document of the page)."""
    from groundswell.shared.review.store import ReviewStore, resolution_object, task_state

    review = ReviewStore(store)
    page_tasks = {t: where[0] for where, found in links.tasks.items() for t in found}
    for task in page_tasks:
        links.states[task] = task_state(review.answers(task))
    run = review.run_resolution(run_id)
    docs = set(page_tasks.values())
    for entry in (run or {}).get("packets") or ():
        if entry.get("doc_id") not in docs:
            continue
        try:
            resolution = json.loads(store.get(resolution_object(entry["resolution"])))
        except (KeyError, ValueError):
            continue
        for slot in resolution.get("slots") or ():
            if slot.get("task") in page_tasks and slot.get("status"):
                links.resolved[slot["task"]] = slot["status"]


def review_tasks(
    get: Callable[[str], bytes], run_id: str, doc_ids: list[str]
) -> ReviewLinks | None:
    """The review tasks of the page's documents; None when the run's tasks have not been
    made (the review page makes them for the whole run on first use; a report does not).
    The run's task list is in document order: its pieces are bisected, and at most
    :data:`REVIEW_PIECES` of them read."""
    from groundswell.shared.review.store import first_piece, run_review_prefix

    try:
        manifest = json.loads(get(run_review_prefix(run_id) + "manifest.json"))
    except KeyError:
        return None
    out = ReviewLinks()
    pieces = manifest.get("pieces") or []
    if not doc_ids or not pieces:
        return out
    wanted, lo_doc, hi_doc = set(doc_ids), min(doc_ids), max(doc_ids)
    cache: dict[int, list[dict[str, Any]]] = {}

    def piece(n: int) -> list[dict[str, Any]]:
        if n not in cache:
            data = get(pieces[n]["key"]).decode("utf-8")
            cache[n] = [json.loads(line) for line in data.splitlines() if line]
        return cache[n]

    n = lo = first_piece(len(pieces), piece, lo_doc)
    while n < len(pieces):
        rows = piece(n)
        for row in rows:
            if row["doc_id"] in wanted:
                where = (row["doc_id"], row["field"], row.get("key"))
                out.tasks.setdefault(where, []).append(row["task"])
        if rows and rows[-1]["doc_id"] > hi_doc:  # the last document's tasks may go on
            break
        n += 1
        if n - lo == REVIEW_PIECES and n < len(pieces):
            # A sparse page over a long task list: the rest link to the review queue.
            out.through = rows[-1]["doc_id"] if rows else lo_doc
            break
    return out
