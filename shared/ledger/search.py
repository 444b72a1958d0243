"""Full-text search over evidence quotes, stemmed, best first, with who said it and how.

Both backends index a quote's folded words (``evidence.search_text``, :mod:`.folding`,
migration 0012) and are asked the query's folded words, so both find the same quotes.
PostgreSQL uses its own text search (``to_tsvector('groundswell', search_text)``: English
stems and no stop words, as SQLite; GIN indexes sharded by the span's start, migration 0006;
ranked by ``ts_rank``); SQLite uses an FTS5 table with the Porter stemmer, kept in step with
the evidence by triggers, ranked by ``bm25``. Both stem English, so ``acquired`` finds
``acquires`` (xrad's Latin-ending stemmer does not). As in xrad, a query is its words, any
of which may match (OR), and nothing else: operators and punctuation are words or nothing,
never syntax. Results carry modality and asserter, because a quotation shown alone reads as
a fact.

Pages are numbered (the cursor holds the offset): a rank is not a key a page can resume
from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from groundswell.shared.ledger.folding import search_text, search_words
from groundswell.shared.ledger.models import SEARCH_SHARDS
from groundswell.shared.ledger.queries import (
    Page,
    _expanding,
    corpus_clause,
    decode_cursor,
    encode_cursor,
)
from groundswell.shared.ledger.store import Ledger

MAX_TERMS = 32
_VECTOR = "to_tsvector('groundswell', e.search_text)"  # what the search shards index


def terms(query: str) -> list[str]:
    """The words of a query, folded as the indexed text is (:mod:`.folding`), once each, in
    order (at most ``MAX_TERMS``)."""
    return list(dict.fromkeys(search_words(query)))[:MAX_TERMS]


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
        parts = [f"plainto_tsquery('groundswell', :w{i})" for i in range(len(words))]
        params.update({f"w{i}": w for i, w in enumerate(words)})
        # The index is sharded by the span's start (models.SEARCH_SHARDS): a query asks each
        # shard, each through its own partial index.
        shards = " UNION ALL ".join(
            f"""SELECT e.claim_id, e.seq, ts_rank({_VECTOR}, q.q) AS rank
                FROM q, evidence e WHERE {_VECTOR} @@ q.q
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


_TOKEN = re.compile(r"[^\W_]+")
EXCERPT = 240  # characters of a quote a hit shows (whole, when shorter)


def excerpt(quote: str, words: list[str], width: int = EXCERPT) -> str:
    """A window of about ``width`` characters of ``quote`` around the first word that matches
    one of ``words`` (folded; a stem of five letters is enough: ``acquires`` for
    ``acquired``), whitespace collapsed, ``…`` where it was cut; the start of a quote when no
    word matches. A whole quote of 121,742 characters is no search result."""
    flat = " ".join(quote.split())
    if len(flat) <= width:
        return flat
    stems = [w[:5] for w in words if w]
    at = 0
    for m in _TOKEN.finditer(flat):
        folded = search_text(m.group(0))
        if any(folded.startswith(s) for s in stems):
            at = m.start()
            break
    start = max(0, at - width // 3)
    if start:  # begin on a word
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < at else start
    end = min(len(flat), start + width)
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > at else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
