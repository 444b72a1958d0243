"""Review: the merges ``resolve`` held, and the answers people give them (xrad's ``review``,
with its two bugs fixed: answers can be applied, and ``resolve`` obeys them).

A **question** is one held group, ``merge:<Type>/<key>`` (the lighter side of the pair, as
xrad keys it, so an answer survives re-resolution): the group it would join (its *target*:
the heaviest pair it was held in), why it was held, the claims the answer moves, and any other
groups it was held against. ``resolve`` stores its questions (``review_questions``), so
listing them reads one indexed table and recomputes nothing.

A **decision** is a claim: a verdict (accept, reject or defer), its reason, who gave it
(``by``, the asserter) and a date, with where it came from and the question as it was asked.
Every answer is kept (``review_decisions``, appended); an id's newest is its decision.
``resolve`` reads them:

- ``accept``: the group joins its target (the one named when it was answered), from then on;
- ``reject``: the group is kept apart from what it was held against, and not asked again;
- ``defer``: a real answer (someone looked and could not tell): the question stays listed, as
  deferred, and is not asked as new while its target is the same; when its target changes
  (the question is about another pair now) it is open again, with the deferral shown.

A decision answers every pair held under its id; a pair asked the other way round (the
weights swapped as claims arrived, so the other side is now the lighter) is answered by the
decision on the other side's id when that decision named this group as its target.

A decisions file is JSONL, one row a question: ``id``, ``verdict``, ``reason``, ``by``,
``date``, and read-only context (``_question``, ``_held_because``, ``_weight``, ``_into``,
``_also``, ``_earlier``), ignored when read back. Reading one reports every problem at once
(xrad's six, with its messages, and what xrad would crash on: a line that is not JSON or not
an object, a field that is not a string, a date that is not one), each with its line and
field, and writes nothing when there is any. A blank verdict is no answer, and no problem.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import and_, exists, func, insert, select, update
from sqlalchemy.engine import Connection

from groundswell.shared.ledger.models import (
    VERDICTS,
    ReviewDecisionRow,
    ReviewQuestionCorpusRow,
    ReviewQuestionRow,
)
from groundswell.shared.ledger.queries import Page, _page, decode_cursor, seen_corpora
from groundswell.shared.ledger.store import Ledger, chunks

PREFIX = "merge:"
LISTED = ("open", "deferred")  # what the queue shows; accepted/rejected await a resolve
STATUS_OF = {"accept": "accepted", "reject": "rejected", "defer": "deferred"}
LABELS_SHOWN = 4  # labels of the asked group in a question, as xrad shows surfaces
NO_BY = "a decision needs an asserter, like every other claim here"


def question_id(type_: str, key: str) -> str:
    """The stable id of the question about the group ``(type_, key)``."""
    return f"{PREFIX}{type_}/{key}"


def parse_id(qid: str) -> tuple[str, str] | None:
    """``(type, key)`` of a question id (a key never holds ``/``: it is folded)."""
    if not qid.startswith(PREFIX) or "/" not in qid:
        return None
    type_, key = qid[len(PREFIX) :].rsplit("/", 1)
    return type_, key


@dataclass(frozen=True)
class Decision:
    """An id's newest answer, as resolve reads it."""

    id: str
    verdict: str
    reason: str
    by: str
    date: dt.date
    into_type: str | None = None
    into_key: str | None = None

    @property
    def target(self) -> tuple[str | None, str | None]:
        return (self.into_type, self.into_key)

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "by": self.by,
            "date": self.date.isoformat(),
        }


@dataclass(frozen=True)
class Held:
    """A merge refused: ``label`` (the group ``type``/``key``) into ``into`` (the group
    ``into_type``/``into_key``), why, and how many claims the answer moves; ``open``, or
    ``deferred`` with the deferral (``earlier``)."""

    id: str
    label: str
    into: str
    reason: str
    weight: int
    type: str = ""
    key: str = ""
    into_type: str = ""
    into_key: str = ""
    labels: tuple[str, ...] = ()
    status: str = "open"
    earlier: Decision | None = None
    # The entities of both groups: whose claims the answer moves (their corpora say which
    # team's key may see and answer the question).
    entities: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "into": self.into,
            "into_id": question_id(self.into_type, self.into_key),
            "reason": self.reason,
            "weight": self.weight,
            "status": self.status,
        }


@dataclass(frozen=True)
class Question:
    """A held group, the group it would join, why, and what the answer moves."""

    id: str
    type: str
    key: str
    label: str
    labels: tuple[str, ...]
    into: str
    into_type: str
    into_key: str
    reason: str
    weight: int
    also: tuple[dict[str, Any], ...] = ()
    status: str = "open"
    earlier: Decision | None = None  # a deferral, shown with the question
    entities: frozenset[str] = frozenset()  # of every group it names: whose claims it moves

    @property
    def text(self) -> str:
        return f"Merge {list(self.labels)} into {self.into!r}?"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.text,
            "label": self.label,
            "labels": list(self.labels),
            "into": self.into,
            "into_id": question_id(self.into_type, self.into_key),
            "reason": self.reason,
            "weight": self.weight,
            "also": list(self.also),
            "status": self.status,
            "earlier": self.earlier.as_dict() if self.earlier else None,
        }

    def row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "key": self.key,
            "label": self.label,
            "labels": list(self.labels),
            "into": self.into,
            "into_type": self.into_type,
            "into_key": self.into_key,
            "reason": self.reason,
            "weight": self.weight,
            "also": list(self.also),
            "status": self.status,
        }


# -- what resolve does with the decisions ---------------------------------------------------


@dataclass
class Settled:
    """The decisions applied to resolve's held pairs: the pairs of groups to join (accepted),
    the pairs still held (open or deferred), and the decisions that answered a held pair
    (id -> verdict; a deferral only while its target is the question's)."""

    unions: dict[str, tuple[tuple[str, str], tuple[str, str]]]  # accept id -> (asked, target)
    held: list[Held]
    answered: dict[str, str] = field(default_factory=dict)


def settle(held: Iterable[Held], decisions: Mapping[str, Decision]) -> Settled:
    """Apply ``decisions`` (id -> newest answer) to resolve's held pairs."""
    unions = {}
    for d in decisions.values():
        asked = parse_id(d.id)
        if d.verdict == "accept" and asked and d.into_type is not None and d.into_key is not None:
            unions[d.id] = (asked, (d.into_type, d.into_key))
    kept: list[Held] = []
    answered: dict[str, str] = {}
    for h in held:
        d = decisions.get(h.id)
        if d is None:  # asked the other way round? the other side's answer, if it named us
            other = decisions.get(question_id(h.into_type, h.into_key))
            if other is not None and other.target == (h.type, h.key):
                d = other
        if d is None:
            kept.append(h)
        elif d.verdict != "defer":
            answered[d.id] = d.verdict
        else:
            same = d.target in ((h.into_type, h.into_key), (h.type, h.key))
            if same:
                answered[d.id] = d.verdict
            kept.append(replace(h, status="deferred" if same else "open", earlier=d))
    return Settled(unions, kept, answered)


def questions(held: Iterable[Held]) -> list[Question]:
    """One question per id, weightiest first: its heaviest pair is the question (its target),
    the other pairs of the same group are listed with it (``also``)."""
    by_id: dict[str, list[Held]] = {}
    for h in held:
        by_id.setdefault(h.id, []).append(h)
    out = []
    for qid, pairs in by_id.items():
        pairs.sort(key=lambda h: (-h.weight, h.into_type, h.into_key, h.reason))
        top = pairs[0]
        also = tuple(
            {
                "into": p.into,
                "into_id": question_id(p.into_type, p.into_key),
                "reason": p.reason,
                "weight": p.weight,
            }
            for p in pairs[1:]
        )
        out.append(
            Question(
                qid,
                top.type,
                top.key,
                top.label,
                tuple(top.labels[:LABELS_SHOWN]),
                top.into,
                top.into_type,
                top.into_key,
                top.reason,
                top.weight,
                also,
                top.status,
                top.earlier,
                frozenset(e for p in pairs for e in p.entities),
            )
        )
    return sorted(out, key=lambda q: (-q.weight, q.id))


# -- reading answers: every problem at once -------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """What is wrong with one line (or API item) of a decisions file, and in which field."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:  # xrad's form
        return f"line {self.line}: {self.message}"

    def located(self, source: str) -> str:
        return f"{source}:{self.line}:{self.field}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field, "message": self.message}


@dataclass(frozen=True)
class Answer:
    """One answered row: what ``save`` records."""

    line: int
    id: str
    verdict: str
    reason: str
    by: str
    date: dt.date


class DecisionsError(ValueError):
    """The answers cannot be recorded; ``problems`` names each one, and nothing is written."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def read_lines(lines: Iterable[str]) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """The non-blank lines of a JSONL file as ``(line number, value)``; a line that is not
    JSON is a problem (xrad stops there with a traceback)."""
    rows, problems = [], []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except ValueError as exc:
            problems.append(Problem(n, "-", f"not JSON: {exc}"))
    return rows, problems


def _text(row: dict[str, Any], name: str, line: int, problems: list[Problem]) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.append(Problem(line, name, f"{json.dumps(value)} is not a string"))
        return ""
    return value


def _date(value: Any, line: int, problems: list[Problem], today: dt.date) -> dt.date:
    if isinstance(value, dt.date):
        return value
    if value is None or (isinstance(value, str) and not value.strip()):
        return today
    try:
        return dt.date.fromisoformat(value.strip())
    except (AttributeError, ValueError):
        problems.append(Problem(line, "date", f"{json.dumps(value)} is not a date (YYYY-MM-DD)"))
        return today


def check(
    rows: Sequence[tuple[int, Any]], askable: set[str], *, today: dt.date | None = None
) -> tuple[list[Answer], list[Problem]]:
    """The answered rows and every problem: a missing id, an id answered twice, an unknown
    verdict, a verdict without a reason or without ``by``, an id that is neither an open
    question nor answered before (``askable``); and a row that is not an object, a field
    that is not a string, a date that is not one."""
    today = today or dt.date.today()
    problems: list[Problem] = []
    answers: list[Answer] = []
    seen: set[str] = set()
    for n, row in rows:
        if not isinstance(row, dict):
            problems.append(Problem(n, "-", "not an object"))
            continue
        qid = row.get("id") or ""
        if not isinstance(qid, str):
            problems.append(Problem(n, "id", f"{json.dumps(qid)} is not a string"))
            continue
        if not qid:
            problems.append(Problem(n, "id", "no id"))
            continue
        if qid in seen:
            problems.append(Problem(n, "id", f"{qid} answered twice"))
        seen.add(qid)
        before = len(problems)
        verdict = _text(row, "verdict", n, problems).strip().lower()
        if not verdict:
            continue  # not answered yet: no problem
        if verdict not in VERDICTS:
            problems.append(
                Problem(n, "verdict", f"verdict {verdict!r} — use {'/'.join(sorted(VERDICTS))}")
            )
        reason = _text(row, "reason", n, problems).strip()
        if not reason:
            problems.append(Problem(n, "reason", f"{qid} has a verdict but no reason"))
        by = _text(row, "by", n, problems).strip()
        if not by:
            problems.append(Problem(n, "by", f"{qid} has no `by` — {NO_BY}"))
        if qid not in askable:
            problems.append(Problem(n, "id", f"{qid} is not an open question"))
        date = _date(row.get("date"), n, problems, today)
        if len(problems) == before:
            answers.append(Answer(n, qid, verdict, reason, by, date))
    return answers, problems


# -- the store ------------------------------------------------------------------------------


def write_questions(
    conn: Connection,
    found: Sequence[Question],
    corpora: Mapping[str, set[str]] | None = None,
) -> None:
    """Replace the stored questions with ``found`` (in resolve's transaction), each with the
    corpora of its entities' claims (``corpora``: entity id -> its claims' corpora)."""
    conn.execute(ReviewQuestionRow.__table__.delete())
    conn.execute(ReviewQuestionCorpusRow.__table__.delete())
    for part in chunks([q.row() for q in found], 5000):
        conn.execute(insert(ReviewQuestionRow), part)
    rows = [
        {"question_id": q.id, "corpus": corpus}
        for q in found
        for corpus in sorted({c for e in q.entities for c in (corpora or {}).get(e, ())})
    ]
    for part in chunks(rows, 5000):
        conn.execute(insert(ReviewQuestionCorpusRow), part)


def _seen(corpora: list[str]):
    """SQL true of a question ``ReviewQuestionRow`` whose claims are all of ``corpora`` (a
    team key's): it has a corpus, and none outside them (a question stored before migration
    0011 has none, so no team's key sees it before the next resolve)."""
    q, qc = ReviewQuestionRow, ReviewQuestionCorpusRow
    return and_(
        exists().where(qc.question_id == q.id, qc.corpus.in_(corpora)),
        ~exists().where(qc.question_id == q.id, qc.corpus.not_in(corpora)),
    )


def unseen(ledger: Ledger, ids: Sequence[str], sees: Callable[[str], bool]) -> list[str]:
    """Those of ``ids`` that are not stored questions whose claims are all of the corpora
    ``sees`` accepts (a team key's): a merge that moves another team's claims (entities are
    shared), or an id the last resolve did not hold. Sorted."""
    found: set[str] = set()
    with ledger.engine.connect() as conn:
        corpora = seen_corpora(conn, sees)
        for part in chunks(sorted(set(ids))):
            stmt = select(ReviewQuestionRow.id).where(
                ReviewQuestionRow.id.in_(part), _seen(corpora)
            )
            found.update(conn.execute(stmt).scalars())
    return sorted(set(ids) - found)


def _decision(row: Any) -> Decision:
    return Decision(
        row.id, row.verdict, row.reason, row.asserter, row.date, row.into_type, row.into_key
    )


def _newest(ids: Sequence[str] | None = None):
    """The newest decision row of each id (of ``ids``, when given)."""
    d = ReviewDecisionRow
    newest = select(d.id, func.max(d.seq).label("seq")).group_by(d.id)
    if ids is not None:
        newest = newest.where(d.id.in_(ids))
    newest = newest.subquery()
    return select(d).join(newest, newest.c.seq == d.seq)


def current_decisions(conn: Connection, ids: Sequence[str] | None = None) -> dict[str, Decision]:
    """Each id's newest decision (of ``ids``, when given), as resolve reads them."""
    if ids is None:
        return {r.id: _decision(r) for r in conn.execute(_newest())}
    out: dict[str, Decision] = {}
    for part in chunks(list(ids)):
        out.update({r.id: _decision(r) for r in conn.execute(_newest(part))})
    return out


def askable(conn: Connection, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` that may be answered: held by the last resolve, or answered before
    (an answer may be changed, and a file applied twice is applied once)."""
    found: set[str] = set()
    for part in chunks(list(ids)):
        for table in (ReviewQuestionRow, ReviewDecisionRow):
            found.update(conn.execute(select(table.id).where(table.id.in_(part))).scalars())
    return found


def load(
    ledger: Ledger, rows: Sequence[tuple[int, Any]], unread: Sequence[Problem] = ()
) -> list[Answer]:
    """The answers of ``rows``, checked against the ledger's questions and decisions;
    :class:`DecisionsError` with every problem (and those of lines that could not be read,
    ``unread``), in line order, when there is any."""
    ids = [r["id"] for _, r in rows if isinstance(r, dict) and isinstance(r.get("id"), str)]
    with ledger.engine.connect() as conn:
        open_ids = askable(conn, ids)
    answers, problems = check(rows, open_ids)
    if problems or unread:
        raise DecisionsError(sorted([*unread, *problems], key=lambda p: p.line))
    return answers


def save(
    ledger: Ledger, answers: Sequence[Answer], origin: str, *, lines: bool = True
) -> dict[str, int]:
    """Record ``answers`` in one transaction; ``{new, changed, unchanged}``. An answer whose
    verdict and reason are its id's decision already is unchanged and adds no row, so a file
    applied twice adds nothing. Each answered question is marked with its verdict until the
    next resolve (which then acts on it). ``origin`` is the file (with ``lines``, each
    answer's line is added) or the API key."""
    stats = {"new": 0, "changed": 0, "unchanged": 0}
    now = dt.datetime.now(dt.UTC)
    with ledger.engine.begin() as conn:
        ids = [a.id for a in answers]
        before = current_decisions(conn, ids)
        asked = {}
        for part in chunks(ids):
            rows = conn.execute(select(ReviewQuestionRow).where(ReviewQuestionRow.id.in_(part)))
            asked.update({q.id: q for q in rows})
        rows = []
        for a in answers:
            prev = before.get(a.id)
            if prev is not None and (prev.verdict, prev.reason) == (a.verdict, a.reason):
                stats["unchanged"] += 1
                continue
            stats["new" if prev is None else "changed"] += 1
            where = f"{origin}:{a.line}" if lines else origin
            rows.append({**_context(a.id, asked.get(a.id), conn), **_answer_row(a, where, now)})
        if rows:
            conn.execute(insert(ReviewDecisionRow), rows)
        for verdict in VERDICTS:
            done = [a.id for a in answers if a.verdict == verdict]
            for part in chunks(done):
                conn.execute(
                    update(ReviewQuestionRow)
                    .where(ReviewQuestionRow.id.in_(part))
                    .values(status=STATUS_OF[verdict])
                )
    return stats


def _answer_row(a: Answer, where: str, now: dt.datetime) -> dict[str, Any]:
    return {
        "id": a.id,
        "verdict": a.verdict,
        "reason": a.reason,
        "asserter": a.by,
        "date": a.date,
        "origin": where,
        "recorded_at": now,
    }


def _context(qid: str, asked: Any, conn: Connection) -> dict[str, Any]:
    """The question as it was asked: from the last resolve's queue, else (answered before,
    no longer held) from the id's earlier decision."""
    if asked is not None:
        q = _question(asked)
        return {
            "question": q.text,
            "held_because": q.reason,
            "weight": q.weight,
            "into_type": q.into_type,
            "into_key": q.into_key,
        }
    prev = conn.execute(_newest([qid])).one()
    return {
        "question": prev.question,
        "held_because": prev.held_because,
        "weight": prev.weight,
        "into_type": prev.into_type,
        "into_key": prev.into_key,
    }


def _question(row: Any, earlier: Decision | None = None) -> Question:
    return Question(
        row.id,
        row.type,
        row.key,
        row.label,
        tuple(row.labels),
        row.into,
        row.into_type,
        row.into_key,
        row.reason,
        row.weight,
        tuple(row.also),
        row.status,
        earlier,
    )


def listed(
    ledger: Ledger,
    *,
    status: Sequence[str] = LISTED,
    cursor: str | None = None,
    limit: int = 20,
    sees: Callable[[str], bool] | None = None,
) -> Page:
    """The stored questions of ``status``, weightiest first (then by id), a page at a time
    (keyset on weight and id); a deferred one with its deferral. ``sees`` (a team key's):
    only the questions whose claims are all of the corpora it accepts."""
    after = decode_cursor(cursor, 2)
    q = ReviewQuestionRow
    stmt = select(q).where(q.status.in_(list(status)))
    if after is not None:
        weight, qid = after
        stmt = stmt.where((q.weight < weight) | ((q.weight == weight) & (q.id > qid)))
    stmt = stmt.order_by(q.weight.desc(), q.id).limit(limit + 1)
    with ledger.engine.connect() as conn:
        if sees is not None:
            stmt = stmt.where(_seen(seen_corpora(conn, sees)))
        found = list(conn.execute(stmt))
        earlier = current_decisions(conn, [r.id for r in found])
    items = [_question(r, earlier.get(r.id)).as_dict() for r in found]
    return _page(items, limit, lambda r: [r["weight"], r["id"]])


def queue(ledger: Ledger, sees: Callable[[str], bool] | None = None) -> dict[str, int]:
    """``{open, deferred, accepted, rejected, decided}``: the stored questions by status, and
    how many ids have a decision; with ``sees`` (a team key's), of the questions it sees
    (``listed``), and decided among them."""
    q, d = ReviewQuestionRow, ReviewDecisionRow
    with ledger.engine.connect() as conn:
        statuses = select(q.status, func.count()).group_by(q.status)
        decisions = select(func.count(func.distinct(d.id)))
        if sees is not None:
            mine = _seen(seen_corpora(conn, sees))
            statuses = statuses.where(mine)
            decisions = decisions.where(d.id.in_(select(q.id).where(mine)))
        by_status = dict(conn.execute(statuses).all())
        decided = conn.execute(decisions).scalar_one()
    counts = {s: by_status.get(s, 0) for s in ("open", *STATUS_OF.values())}
    return {**counts, "decided": decided}


def template(found: Iterable[dict[str, Any]], *, by: str, today: dt.date) -> Iterator[str]:
    """The lines of a decisions file to fill in: each listed question (as ``listed`` gives
    it) with a blank verdict and reason, ``by`` and today's date, and its context."""
    for q in found:
        row = {
            "id": q["id"],
            "verdict": "",
            "reason": "",
            "by": by,
            "date": today.isoformat(),
            "_question": q["question"],
            "_held_because": q["reason"],
            "_weight": q["weight"],
            "_into": q["into_id"],
        }
        if q["also"]:
            row["_also"] = q["also"]
        if q["earlier"]:
            row["_earlier"] = q["earlier"]
        yield json.dumps(row, ensure_ascii=False) + "\n"
