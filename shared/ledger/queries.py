"""What the ledger answers: disagreements and claims, page by page.

Every list is read a page at a time with a keyset cursor (the last row's sort key), so a page
costs the same at the first row as at the ten-millionth, on PostgreSQL and on SQLite alike.

**Disagreements** come in three kinds, each kept side by side, never one overwriting the
other:

- ``contradiction`` (xrad's): two claims on the same (subject, relation, object) where the
  polarities differ or exactly one is ``rejected``; one row per pair, as xrad gives them;
- ``objects``: claims that affirm different objects for the same (subject, relation); one row
  per (subject, relation), with each object's claims (asserter, modality, document, span);
- ``facts``: admitted facts that give different values (or units) for the same (entity,
  field, key) across documents, runs and policy versions; one row per (entity, field, key).

An objects or facts row is bounded like a page: its best-supported sides (most claims first)
and the first claims of each, with the counts of all (``sides_total``, ``claims_total``); the
rest of a side's claims are a ``claims`` listing away.

Paths between entities are ``path.py``'s.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from groundswell.shared.ledger.folding import label_key
from groundswell.shared.ledger.models import affirms, dissents
from groundswell.shared.ledger.store import Ledger, chunks

KINDS = ("contradiction", "objects", "facts")
MAX_SIDES = 20  # sides an objects or facts row shows (the best supported)
MAX_CLAIMS = 10  # claims each side shows (the first by id, or by document and run)


class BadCursor(ValueError):
    """A cursor this query did not make."""


def encode_cursor(key: Sequence[Any]) -> str:
    data = json.dumps(list(key), separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_cursor(cursor: str | None, size: int) -> list[Any] | None:
    if not cursor:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise BadCursor("invalid cursor") from None
    if not isinstance(value, list) or len(value) != size or not all(map(_bindable, value)):
        raise BadCursor("invalid cursor")
    return value


# A cursor's parts are bound as SQL parameters: only what a page's key is made of (text,
# booleans, 64-bit integers, finite numbers, null), never objects, lists or numbers a database refuses.
_INT64 = 2**63


def _bindable(part: Any) -> bool:
    if part is None or isinstance(part, str | bool):
        return True
    if isinstance(part, int):
        return -_INT64 <= part < _INT64
    return isinstance(part, float) and math.isfinite(part)


@dataclass(frozen=True)
class Page:
    """Rows of one page and the cursor of the next (None: this was the last)."""

    items: list[dict[str, Any]]
    next_cursor: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "next_cursor": self.next_cursor,
            "has_next_page": self.next_cursor is not None,
        }


def _page(rows: list[dict[str, Any]], limit: int, key) -> Page:
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, encode_cursor(key(rows[-1])) if more and rows else None)


# -- claims ------------------------------------------------------------------------------

CLAIM_COLUMNS = """c.id AS claim_id, c.document_id, c.relation, c.modality, c.polarity,
    c.asserter, c.verified, c.subject_entity_id, c.object_entity_id,
    s.label AS subject, s.type AS subject_type, o.label AS object, o.type AS object_type,
    e.quote, e.start, e."end" """
CLAIM_JOINS = """JOIN entities s ON s.id = c.subject_entity_id
    JOIN entities o ON o.id = c.object_entity_id
    LEFT JOIN evidence e ON e.claim_id = c.id AND e.seq = 0"""


def claim_out(row: Any, prefix: str = "") -> dict[str, Any]:
    """A claim as the queries give it: who, how strongly, where (document and span)."""
    r = dict(row)
    p = prefix
    return {
        "claim_id": r[p + "claim_id"],
        "subject": r.get(p + "subject"),
        "subject_type": r.get(p + "subject_type"),
        "relation": r.get(p + "relation"),
        "object": r.get(p + "object"),
        "object_type": r.get(p + "object_type"),
        "modality": r[p + "modality"],
        "polarity": r[p + "polarity"],
        "asserter": r[p + "asserter"],
        "verified": r.get(p + "verified"),
        "document_id": r[p + "document_id"],
        "start": r[p + "start"],
        "end": r[p + "end"],
        "quote": r[p + "quote"],
    }


def claims_by_id(conn: Connection, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The claims of ``ids`` as the queries give them (``claim_out``), by id."""
    params = {"ids": sorted(set(ids))}
    if not params["ids"]:
        return {}
    stmt = _expanding(
        f"SELECT {CLAIM_COLUMNS} FROM claims c {CLAIM_JOINS} WHERE c.id IN :ids", params
    )
    return {
        r["claim_id"]: {
            **claim_out(r),
            "subject_type": r["subject_type"],
            "object_type": r["object_type"],
        }
        for r in conn.execute(stmt, params).mappings()
    }


def claims(
    ledger: Ledger,
    *,
    document: str | None = None,
    relation: str | None = None,
    entity: str | None = None,
    modality: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
    sees: Callable[[str], bool] | None = None,
) -> Page:
    """Claims in id order, filtered by document, relation, modality or an entity (an id or a
    label, either side); with ``sees`` (a team key's), of the corpora it accepts only."""
    after = decode_cursor(cursor, 1)
    where, params = ["1 = 1"], {"limit": limit + 1}
    if after is not None:
        where.append("c.id > :after")
        params["after"] = after[0]
    for column, value in (
        ("c.document_id", document),
        ("c.relation", relation),
        ("c.modality", modality),
    ):
        if value is not None:
            where.append(f"{column} = :{column[2:]}")
            params[column[2:]] = value
    with ledger.engine.connect() as conn:
        if sees is not None:
            where.append(corpus_clause(conn, sees, params))
        if entity is not None:
            ids = sorted(entity_ids(conn, entity)) or [entity]
            where.append("(c.subject_entity_id IN :ids OR c.object_entity_id IN :ids)")
            params["ids"] = ids
        stmt = _expanding(
            f"SELECT {CLAIM_COLUMNS}, c.extra FROM claims c {CLAIM_JOINS} "
            f"WHERE {' AND '.join(where)} ORDER BY c.id LIMIT :limit",
            params,
        )
        rows = [
            {
                **claim_out(r),
                **{k: r[k] for k in ("subject_entity_id", "object_entity_id")},
                **_suggested(r["extra"]),
            }
            for r in conn.execute(stmt, params).mappings()
        ]
    return _page(rows, limit, lambda r: [r["claim_id"]])


def _suggested(extra: Any) -> dict[str, Any]:
    """A claim's widened quote, when one was suggested (:mod:`.widen`): shown beside the
    claim for whoever reviews it, ``suggested_quote`` {start, end, text, names}."""
    from groundswell.shared.ledger.widen import SUGGESTION

    if isinstance(extra, str):
        extra = json.loads(extra)
    found = extra.get(SUGGESTION) if isinstance(extra, dict) else None
    return {"suggested_quote": found} if found is not None else {}


def seen_corpora(conn: Any, sees: Callable[[str], bool]) -> list[str]:
    """The corpora of the ledger's claims that ``sees`` accepts (a few distinct values, read
    from their index)."""
    rows = conn.execute(text("SELECT DISTINCT corpus FROM claims WHERE corpus IS NOT NULL"))
    return sorted(corpus for (corpus,) in rows if sees(corpus))


def corpus_clause(
    conn: Any, sees: Callable[[str], bool], params: dict[str, Any], alias: str = "c"
) -> str:
    """SQL true of a claim ``alias`` of a corpus ``sees`` accepts (a team key's), its list
    parameter set in ``params`` (bind it expanding)."""
    params.setdefault("corpora", seen_corpora(conn, sees) or [""])
    return f"{alias}.corpus IN :corpora"


# -- disagreements -----------------------------------------------------------------------

# Claims with the subject's and the object's resolution group (the entity itself when
# ungrouped), for disagreements across the names resolve grouped.
_RESOLVED = """(SELECT c.*, COALESCE(gs.group_id, c.subject_entity_id) AS s_node,
        COALESCE(go.group_id, c.object_entity_id) AS o_node
    FROM claims c
    LEFT JOIN entity_groups gs ON gs.entity_id = c.subject_entity_id
    LEFT JOIN entity_groups go ON go.entity_id = c.object_entity_id)"""


def _source(resolved: bool) -> tuple[str, str, str]:
    """(claims source, subject node column, object node column)."""
    if resolved:
        return _RESOLVED, "s_node", "o_node"
    return "claims", "subject_entity_id", "object_entity_id"


def disagreements(
    ledger: Ledger,
    kind: str = "contradiction",
    *,
    subject: str | None = None,
    relation: str | None = None,
    resolved: bool = False,
    cursor: str | None = None,
    limit: int = 20,
    max_sides: int = MAX_SIDES,
    max_claims: int = MAX_CLAIMS,
    sees: Callable[[str], bool] | None = None,
) -> Page:
    """One page of disagreements of ``kind`` (see the module's account of the kinds).
    ``subject`` (a label, any case, or an entity id): only those about it (for facts: the
    entity the document describes). ``resolved``: entities that ``resolve`` grouped are one
    (contradiction and objects; a subject then means its whole group). An objects or facts
    row shows at most ``max_sides`` sides and ``max_claims`` claims of each, and counts
    them all (``sides_total``, ``claims_total``). With ``sees`` (a team key's), only the
    claims of the corpora it accepts are sides: a disagreement shows those, and is not
    listed when fewer than two sides of it remain (its other sides are other teams')."""
    if kind not in KINDS:
        raise ValueError(f"kind is one of {', '.join(KINDS)}, not {kind!r}")
    with ledger.engine.connect() as conn:
        subjects = None
        if subject is not None:
            subjects = _subject_ids(conn, subject, resolved and kind != "facts")
            if not subjects:
                return Page([], None)
        corpora = None if sees is None else seen_corpora(conn, sees) or [""]
        ask = _Ask(subjects, relation, resolved, cursor, limit, max_sides, max_claims, corpora)
        if kind == "contradiction":
            return _contradictions(conn, ask)
        if kind == "objects":
            return _object_conflicts(conn, ask)
        return _fact_conflicts(conn, ask)


@dataclass(frozen=True)
class _Ask:
    """What a page of disagreements is asked for."""

    subjects: list[str] | None  # entity ids; None: every subject
    relation: str | None  # for facts: the field
    resolved: bool
    cursor: str | None
    limit: int
    max_sides: int = MAX_SIDES
    max_claims: int = MAX_CLAIMS
    corpora: list[str] | None = None  # a team key's: only claims of these corpora are sides

    def visible(self, alias: str, params: dict[str, Any]) -> str:
        """SQL true of a claim ``alias`` this ask may show (``corpora`` bound in ``params``)."""
        if self.corpora is None:
            return "1 = 1"
        params["corpora"] = self.corpora
        # An expression, not the column: the corpus index must not drive these walks (a
        # planner that picks it reads and sorts all the team's claims for a page).
        return f"({alias}.corpus || '') IN :corpora"

    def visible_fact(self, params: dict[str, Any]) -> str:
        """SQL true of a fact ``f`` whose claim this ask may show."""
        if self.corpora is None:
            return "1 = 1"
        claim = self.visible("v", params)
        return f"EXISTS (SELECT 1 FROM claims v WHERE v.id = f.claim_id AND {claim})"


def _subject_ids(conn: Connection, name: str, resolved: bool) -> list[str]:
    """The entities a subject name means; ``resolved``, with every entity of their groups."""
    ids = entity_ids(conn, name)
    if resolved and ids:
        params = {"ids": sorted(ids)}
        stmt = _expanding(
            "SELECT entity_id FROM entity_groups WHERE group_id IN "
            "(SELECT group_id FROM entity_groups WHERE entity_id IN :ids)",
            params,
        )
        ids |= set(conn.execute(stmt, params).scalars())
    return sorted(ids)


def _in_list(column: str, name: str, stmt_params: dict[str, Any], values: list[str]) -> str:
    """``column IN :name`` with ``values`` bound (expanding, see ``_expanding``)."""
    stmt_params[name] = values
    return f"{column} IN :{name}"


def _expanding(sql: str, params: dict[str, Any]):
    """``sql`` with every list parameter bound expanding (``IN :name``)."""
    stmt = text(sql)
    for name, value in params.items():
        if isinstance(value, list):
            stmt = stmt.bindparams(bindparam(name, expanding=True))
    return stmt


def _contradictions(conn: Connection, ask: _Ask) -> Page:
    subjects, relation, cursor, limit = ask.subjects, ask.relation, ask.cursor, ask.limit
    resolved = ask.resolved
    src, s_node, o_node = _source(resolved)
    where = [
        "(a.polarity <> b.polarity OR "
        "(CASE WHEN a.modality = 'rejected' THEN 1 ELSE 0 END) <> "
        "(CASE WHEN b.modality = 'rejected' THEN 1 ELSE 0 END))"
    ]
    params: dict[str, Any] = {"limit": limit + 1}
    # The pair's later claim; walking every subject, the other side of a dissenting claim.
    later = "a.id < b.id"
    if subjects is None:
        # Every subject: one side of each contradiction dissents (denied or rejected), so the
        # walk is of the dissenting claims in id order (the dissent index), each paired with
        # its triple's claims of another stance. A pair of two dissenting claims comes once,
        # from the first of the two; its sides are in claim id order as always.
        where.append(f"({dissents('a')})")  # the dissent index's predicate
        later = f"b.id <> a.id AND (({affirms('b')}) OR a.id < b.id)"
        order = ["a.id", "b.id"]
        after = decode_cursor(cursor, 2)
        if after is not None:
            where.append("a.id >= :a1 AND (a.id > :a1 OR b.id > :b1)")  # a range on a.id
            params.update(a1=after[0], b1=after[1])
    else:
        # One subject: in the order of the triple index, so a page reads the subject's
        # claims only as far as it needs (pairs of a triple sorted by id as they come).
        where.append(_in_list("a.subject_entity_id", "subjects", params, subjects))
        order = [f"a.{s_node}", "a.relation", f"a.{o_node}", "a.id", "b.id"]
        after = decode_cursor(cursor, len(order))
        if after is not None:
            keys = ", ".join(f":k{i}" for i in range(len(order)))
            where.append(f"({', '.join(order)}) > ({keys})")
            params.update({f"k{i}": v for i, v in enumerate(after)})
    if relation is not None:
        where.append("a.relation = :relation")
        params["relation"] = relation
    where.append(ask.visible("a", params))  # a pair of two visible claims
    same = f"""b.{s_node} = a.{s_node} AND b.relation = a.relation
        AND b.{o_node} = a.{o_node} AND {later} AND {ask.visible("b", params)}"""
    if conn.dialect.name == "postgresql" and not resolved:
        # A lateral join walks the claims in order (the dissent index, or the subject's in the
        # triple index), looking up each one's triple, and stops at the page's end; a plain
        # join is planned as a hash join over the whole table (its estimate of the pairs is
        # far too low).
        pair = f"JOIN LATERAL (SELECT * FROM {src} b WHERE {same} OFFSET 0) b ON TRUE"
    else:
        pair = f"JOIN {src} b ON {same}"
    # The pairs first, then their claims: joined in one statement with their entities and
    # spans, the planner spends milliseconds ordering eleven tables for a page of 20.
    keys = ", ".join(f"{column} AS sort_{i}" for i, column in enumerate(order))
    sql = f"""
        SELECT a.id AS a_id, b.id AS b_id, {keys}
        FROM {src} a
        {pair}
        WHERE {" AND ".join(where)}
        ORDER BY {", ".join(order)}
        LIMIT :limit"""
    pairs = conn.execute(_expanding(sql, params), params).mappings().all()
    found = claims_by_id(conn, [p["a_id"] for p in pairs] + [p["b_id"] for p in pairs])
    rows, sort = [], []
    for p in pairs:
        a, b = (found[i] for i in sorted((p["a_id"], p["b_id"])))
        rows.append(
            {
                "kind": "contradiction",
                **{
                    k: a[k]
                    for k in ("subject", "subject_type", "relation", "object", "object_type")
                },
                "sides": [a, b],
            }
        )
        sort.append([p[f"sort_{i}"] for i in range(len(order))])
    return _page(rows, limit, lambda _last: sort[limit - 1])  # the page's last row's key


_AFFIRMS = affirms("c")


def _object_conflicts(conn: Connection, ask: _Ask) -> Page:
    subjects, relation, cursor, limit = ask.subjects, ask.relation, ask.cursor, ask.limit
    src, s_node, o_node = _source(ask.resolved)
    after = decode_cursor(cursor, 2)
    where, params = [_AFFIRMS], {"limit": limit + 1}
    if subjects is not None:
        where.append(_in_list("c.subject_entity_id", "subjects", params, subjects))
    if after is not None:
        where.append(f"(c.{s_node} > :s1 OR (c.{s_node} = :s1 AND c.relation > :r1))")
        params.update(s1=after[0], r1=after[1])
    if relation is not None:
        where.append("c.relation = :relation")
        params["relation"] = relation
    where.append(ask.visible("c", params))
    keys = conn.execute(
        _expanding(
            f"""SELECT c.{s_node} AS s, c.relation AS r FROM {src} c
            WHERE {" AND ".join(where)}
            GROUP BY c.{s_node}, c.relation
            HAVING COUNT(DISTINCT c.{o_node}) > 1
            ORDER BY c.{s_node}, c.relation LIMIT :limit""",
            params,
        ),
        params,
    ).all()
    # Each row shows its best-supported objects (by claims, then label) and each object's
    # first claims, with how many there are: a hub's row stays a page, not 60,000 claims.
    side_params: dict[str, Any] = {"sides": ask.max_sides, "per": ask.max_claims}
    of_key = (
        f"c.{s_node} = :s AND c.relation = :r AND {_AFFIRMS} AND {ask.visible('c', side_params)}"
    )
    sql = f"""
        WITH sides AS (
            SELECT c.{o_node} AS node, COUNT(*) AS n FROM {src} c WHERE {of_key}
            GROUP BY c.{o_node}
        ), ranked AS (
            SELECT node, n, ROW_NUMBER() OVER (ORDER BY n DESC, x.label, node) AS side,
                COUNT(*) OVER () AS total
            FROM sides JOIN entities x ON x.id = sides.node
        ), shown AS (
            SELECT c.id, r.side, r.n, r.total,
                ROW_NUMBER() OVER (PARTITION BY r.side ORDER BY c.id) AS rn
            FROM {src} c JOIN ranked r ON r.node = c.{o_node}
            WHERE {of_key} AND r.side <= :sides
        )
        SELECT {CLAIM_COLUMNS}, t.side, t.n, t.total FROM shown t
        JOIN claims c ON c.id = t.id {CLAIM_JOINS}
        WHERE t.rn <= :per ORDER BY t.side, t.rn"""
    rows = []
    for s, r in keys:
        row_params = {**side_params, "s": s, "r": r}
        found = conn.execute(_expanding(sql, row_params), row_params).mappings()
        rows.append(
            _sides_row(
                found,
                lambda c: {"object": c["object"], "object_type": c["object_type"]},
                claim_out,
                {"kind": "objects", "subject_entity_id": s, "relation": r},
            )
        )
    return _page(rows, limit, lambda r: [r["subject_entity_id"], r["relation"]])


def _sides_row(found, side_head, claim_of, row: dict[str, Any]) -> dict[str, Any]:
    """One disagreement: ``row`` with the subject and the claims ``found`` (in side order,
    each with its side's rank ``side``, its claims ``n`` and the row's sides ``total``)
    grouped into sides (each ``side_head`` of its first claim, its claims ``claim_of`` each,
    and ``claims_total``); ``sides_total`` counts the sides, shown or not."""
    sides: dict[Any, dict[str, Any]] = {}
    head: Any = None
    for claim in found:
        head = head or claim
        side = sides.get(claim["side"])
        if side is None:
            side = sides[claim["side"]] = {
                **side_head(claim),
                "claims": [],
                "claims_total": claim["n"],
            }
        side["claims"].append(claim_of(claim))
    subject = {"subject": head["subject"], "subject_type": head["subject_type"]}
    return {
        "kind": row.pop("kind"),
        **subject,
        **row,
        "sides": list(sides.values()),
        "sides_total": head["total"],
    }


def _fact_conflicts(conn: Connection, ask: _Ask) -> Page:
    subjects, field_, cursor, limit = ask.subjects, ask.relation, ask.cursor, ask.limit
    after = decode_cursor(cursor, 3)
    where, params = ["1 = 1"], {"limit": limit + 1}
    if subjects is not None:
        where.append(_in_list("f.subject_entity_id", "subjects", params, subjects))
    if after is not None:
        where.append(
            "(f.subject_entity_id > :s1 OR (f.subject_entity_id = :s1 AND "
            "(f.field > :f1 OR (f.field = :f1 AND f.key > :k1))))"
        )
        params.update(s1=after[0], f1=after[1], k1=after[2])
    if field_ is not None:
        where.append("f.field = :field")
        params["field"] = field_
    where.append(ask.visible_fact(params))
    keys = conn.execute(
        _expanding(
            f"""SELECT f.subject_entity_id AS s, f.field AS f, f.key AS k
            FROM facts f
            WHERE {" AND ".join(where)}
            GROUP BY f.subject_entity_id, f.field, f.key
            HAVING COUNT(DISTINCT f.value || '|' || COALESCE(f.unit, '')) > 1
            ORDER BY f.subject_entity_id, f.field, f.key LIMIT :limit""",
            params,
        ),
        params,
    ).all()
    # As for objects: the best-supported values first, each with its first claims (a fact
    # reprocessed by every policy version gains a claim per run).
    side_params: dict[str, Any] = {"sides": ask.max_sides, "per": ask.max_claims}
    of_key = "f.subject_entity_id = :s AND f.field = :f AND f.key = :k AND " + ask.visible_fact(
        side_params
    )
    sql = f"""
        WITH sides AS (
            SELECT f.value, COALESCE(f.unit, '') AS unit, COUNT(*) AS n
            FROM facts f WHERE {of_key}
            GROUP BY f.value, COALESCE(f.unit, '')
        ), ranked AS (
            SELECT value, unit, n, ROW_NUMBER() OVER (ORDER BY n DESC, value, unit) AS side,
                COUNT(*) OVER () AS total
            FROM sides
        ), shown AS (
            SELECT f.claim_id, r.side, r.n, r.total, ROW_NUMBER() OVER (
                PARTITION BY r.side ORDER BY c.document_id, f.run_id, c.id) AS rn
            FROM facts f JOIN claims c ON c.id = f.claim_id
            JOIN ranked r ON r.value = f.value AND r.unit = COALESCE(f.unit, '')
            WHERE {of_key} AND r.side <= :sides
        )
        SELECT {CLAIM_COLUMNS}, f.value, f.unit, f.run_id, f.policy_version, f.receipt_digest,
            t.side, t.n, t.total
        FROM shown t JOIN facts f ON f.claim_id = t.claim_id
        JOIN claims c ON c.id = t.claim_id {CLAIM_JOINS}
        WHERE t.rn <= :per ORDER BY t.side, t.rn"""
    rows = []
    for s, f, k in keys:
        row_params = {**side_params, "s": s, "f": f, "k": k}
        found = conn.execute(_expanding(sql, row_params), row_params).mappings()
        rows.append(
            _sides_row(
                found,
                lambda c: {"value": json.loads(c["value"]), "unit": c["unit"]},
                lambda c: {
                    **claim_out(c),
                    **{k: c[k] for k in ("run_id", "policy_version", "receipt_digest")},
                },
                {"kind": "facts", "subject_entity_id": s, "field": f, "key": k},
            )
        )
    return _page(rows, limit, lambda r: [r["subject_entity_id"], r["field"], r["key"]])


def write_facts(ledger: Ledger, facts: Sequence[dict[str, Any]]) -> int:
    """Attach fact rows (``claim_id``, ``field``, ``key``, ``value`` (any JSON), ``unit``,
    ``run_id``, ``policy_version``, ``receipt_digest``) to stored claims, replacing any."""
    from sqlalchemy import delete, insert, select

    from groundswell.shared.ledger.models import ClaimRow, FactRow

    rows = [
        {
            "claim_id": f["claim_id"],
            "field": f["field"],
            "key": f.get("key") or "",
            "value": json.dumps(f["value"], sort_keys=True, separators=(",", ":")),
            "unit": f.get("unit"),
            "run_id": f.get("run_id"),
            "policy_version": f.get("policy_version"),
            "receipt_digest": f.get("receipt_digest"),
        }
        for f in facts
    ]
    if not rows:
        return 0
    with ledger.engine.begin() as conn:
        ids = [r["claim_id"] for r in rows]
        subjects: dict[str, str] = {}
        for part in chunks(ids):
            conn.execute(delete(FactRow).where(FactRow.claim_id.in_(part)))
            found = conn.execute(
                select(ClaimRow.id, ClaimRow.subject_entity_id).where(ClaimRow.id.in_(part))
            )
            subjects.update((i, s) for i, s in found)  # (a Result has keys(): not a mapping)
        for row in rows:  # a fact of no stored claim is refused by its foreign key
            row["subject_entity_id"] = subjects.get(row["claim_id"])
        conn.execute(insert(FactRow), rows)
    return len(rows)


# -- names ---------------------------------------------------------------------------------


def entity_ids(conn: Connection, name: str) -> set[str]:
    """Entities a name means: an entity id, else every label equal to it in any case (a full
    Unicode case fold, :func:`.folding.label_key`: ``SOCIÉTÉ`` is ``Société``)."""
    found = conn.execute(text("SELECT id FROM entities WHERE id = :n"), {"n": name}).scalars()
    ids = set(found)
    if not ids:
        rows = conn.execute(
            text("SELECT id FROM entities WHERE label_key = :k"), {"k": label_key(name)}
        ).scalars()
        ids = set(rows)
    return ids


# -- state ---------------------------------------------------------------------------------


def state(ledger: Ledger, sees: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """``Ledger.state``; with ``sees`` (a team key's), its counts (claims by audit state and
    modality, evidence by tier, documents, entities) are of the claims of the corpora it
    accepts only. The schema revision, backend, pending builds and vocabularies stay: they
    are the deployment's, as policies are, and name no team's claims."""
    if sees is None:
        return ledger.state()
    with ledger.engine.connect() as conn:
        corpora = seen_corpora(conn, sees)
    return ledger.state(corpora)
