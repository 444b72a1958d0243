"""Full-text search over evidence quotes, stemmed, best first, with who said it and how.

PostgreSQL uses its own text search (``to_tsvector('english', quote)``, GIN indexes sharded by
the span's start (migration 0006), ranked by ``ts_rank``); SQLite uses an FTS5 table with the Porter stemmer,
kept in step with the evidence by triggers, ranked by ``bm25``. Both stem English, so
``acquired`` finds ``acquires`` (xrad's Latin-ending stemmer does not). As in xrad, a query
is its words, any of which may match (OR), and nothing else: operators and punctuation are
words or nothing, never syntax. Results carry modality and asserter, because a quotation
shown alone reads as a fact.

Pages are numbered (the cursor holds the offset): a rank is not a key a page can resume
from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from groundswell.shared.ledger.models import SEARCH_SHARDS
from groundswell.shared.ledger.queries import (
    Page,
    _expanding,
    corpus_clause,
    decode_cursor,
    encode_cursor,
)
from groundswell.shared.ledger.store import Ledger

_WORD = re.compile(r"\w+")
MAX_TERMS = 32


def terms(query: str) -> list[str]:
    """The words of a query, lower-cased, once each, in order (at most ``MAX_TERMS``)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        if word != "_":
            seen.setdefault(word.strip("_"), None)
    return [t for t in seen if t][:MAX_TERMS]


_COLUMNS = """c.id AS claim_id, c.relation, c.modality, c.polarity, c.asserter, c.verified,
    c.document_id, s.label AS subject, o.label AS object, e.quote, e.start, e."end" """
_JOINS = """JOIN claims c ON c.id = e.claim_id
    JOIN entities s ON s.id = c.subject_entity_id
    JOIN entities o ON o.id = c.object_entity_id"""


def search(
    ledger: Ledger,
    query: str,
    *,
    cursor: str | None = None,
    limit: int = 15,
    sees: Callable[[str], bool] | None = None,
) -> Page:
    """Claims whose evidence quote has any word of ``query`` (stemmed), best first; with
    ``sees`` (a team key's), of the corpora it accepts only."""
    words = terms(query)
    offset = (decode_cursor(cursor, 1) or [0])[0]
    if not isinstance(offset, int) or offset < 0:
        raise ValueError("invalid cursor")
    if not words:
        return Page([], None)
    params: dict[str, Any] = {"limit": limit + 1, "offset": offset}
    with ledger.engine.connect() as conn:
        team = f"AND {corpus_clause(conn, sees, params)}" if sees is not None else ""
    if ledger.dialect == "postgresql":
        # Each word as a tsquery of its own (plainto_tsquery drops stop words and punctuation),
        # joined with OR.
        parts = [f"plainto_tsquery('english', :w{i})" for i in range(len(words))]
        params.update({f"w{i}": w for i, w in enumerate(words)})
        # The index is sharded by the span's start (models.SEARCH_SHARDS): a query asks each
        # shard, each through its own partial index.
        shards = " UNION ALL ".join(
            f"""SELECT e.claim_id, e.seq, ts_rank(to_tsvector('english', e.quote), q.q) AS rank
                FROM q, evidence e WHERE to_tsvector('english', e.quote) @@ q.q
                AND e."start" % {SEARCH_SHARDS} = {k}"""
            for k in range(SEARCH_SHARDS)
        )
        sql = f"""WITH q AS (SELECT ({" || ".join(parts)}) AS q)
            SELECT {_COLUMNS}, h.rank
            FROM ({shards}) h JOIN evidence e ON e.claim_id = h.claim_id AND e.seq = h.seq
            {_JOINS} WHERE 1 = 1 {team}
            ORDER BY h.rank DESC, c.id, e.seq LIMIT :limit OFFSET :offset"""
    else:
        params["match"] = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = f"""SELECT {_COLUMNS}, -bm25(evidence_fts) AS rank
            FROM evidence_fts JOIN evidence e ON e.rowid = evidence_fts.rowid {_JOINS}
            WHERE evidence_fts MATCH :match {team}
            ORDER BY rank DESC, c.id, e.seq LIMIT :limit OFFSET :offset"""
    with ledger.engine.connect() as conn:
        rows = [dict(r) for r in conn.execute(_expanding(sql, params), params).mappings()]
    for row in rows:
        row["rank"] = float(row["rank"])
    more = len(rows) > limit
    return Page(rows[:limit], encode_cursor([offset + limit]) if more else None)
