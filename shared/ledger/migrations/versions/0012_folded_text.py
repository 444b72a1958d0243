"""Search and entity lookup read folded text, the same on both backends (issue 32 items 1, 3
and 4): ``evidence.search_text`` holds a quote's folded words (``folding.search_text``) and is
what both search indexes index (PostgreSQL's GIN shards, SQLite's FTS5 table and its
triggers); ``entities.label_key`` holds a label "in any case" (``folding.label_key``,
indexed), which replaces the index on ``lower(label)`` (ASCII only on SQLite and under
PostgreSQL's C locale). PostgreSQL's search uses its own configuration, ``groundswell``:
English stemming without stop words, as SQLite's. Existing rows are filled in here, a page
at a time.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from groundswell.shared.ledger.folding import label_key, search_text

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

SHARDS = 2  # models.SEARCH_SHARDS when this revision was made
PAGE = 5000
FTS = (
    "CREATE VIRTUAL TABLE evidence_fts USING fts5({column}, content='evidence', "
    "content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')"
)


def _fts_triggers(column: str) -> None:
    op.execute(
        "CREATE TRIGGER evidence_fts_insert AFTER INSERT ON evidence BEGIN "
        f"INSERT INTO evidence_fts (rowid, {column}) VALUES (new.rowid, new.{column}); END"
    )
    op.execute(
        "CREATE TRIGGER evidence_fts_delete AFTER DELETE ON evidence BEGIN "
        f"INSERT INTO evidence_fts (evidence_fts, rowid, {column}) "
        f"VALUES ('delete', old.rowid, old.{column}); END"
    )


def _drop_search(postgres: bool) -> None:
    if postgres:
        for k in range(SHARDS):
            op.execute(f"DROP INDEX IF EXISTS ix_evidence_quote_fts_{k}")
        return
    op.execute("DROP TRIGGER IF EXISTS evidence_fts_insert")
    op.execute("DROP TRIGGER IF EXISTS evidence_fts_delete")
    op.execute("DROP TABLE IF EXISTS evidence_fts")


def _make_search(postgres: bool, column: str, config: str = "groundswell") -> None:
    if postgres:
        for k in range(SHARDS):
            op.execute(
                f"CREATE INDEX ix_evidence_quote_fts_{k} ON evidence "
                f"USING GIN (to_tsvector('{config}', {column})) WHERE \"start\" % {SHARDS} = {k}"
            )
        return
    op.execute(FTS.format(column=column))
    _fts_triggers(column)
    op.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('rebuild')")


def _fill(bind, select: str, update: str, keys: int, fold) -> None:
    """Fill a folded column page by page, in key order: ``select`` gives (value, k0[, k1])
    from a ``{where}`` keyset bound; ``update`` writes ``fold(value)`` at the row's key."""
    after = None
    while True:
        if after is None:
            rows = bind.execute(sa.text(select.format(where="1 = 1")), {"n": PAGE}).all()
        else:
            where = "(k0 > :a0)" if keys == 1 else "(k0 > :a0 OR (k0 = :a0 AND k1 > :a1))"
            params = {"n": PAGE, **{f"a{i}": v for i, v in enumerate(after)}}
            rows = bind.execute(sa.text(select.format(where=where)), params).all()
        if not rows:
            return
        bind.execute(
            sa.text(update),
            [{"v": fold(r[0]), **{f"k{i}": r[1 + i] for i in range(keys)}} for r in rows],
        )
        after = tuple(rows[-1][1:])


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    _drop_search(postgres)
    op.add_column("evidence", sa.Column("search_text", sa.Text(), nullable=True))
    _fill(
        bind,
        "SELECT quote, k0, k1 FROM (SELECT quote, claim_id AS k0, seq AS k1 FROM evidence) e "
        "WHERE {where} ORDER BY k0, k1 LIMIT :n",
        "UPDATE evidence SET search_text = :v WHERE claim_id = :k0 AND seq = :k1",
        2,
        search_text,
    )
    if postgres:
        # English stemming without English stop words: SQLite's FTS5 has none, and a search
        # for "i" or "the" must find on PostgreSQL what it finds on SQLite.
        op.execute(
            "CREATE TEXT SEARCH DICTIONARY groundswell_stem "
            "(TEMPLATE = snowball, Language = english)"
        )
        op.execute("CREATE TEXT SEARCH CONFIGURATION groundswell (COPY = english)")
        op.execute(
            "ALTER TEXT SEARCH CONFIGURATION groundswell "
            "ALTER MAPPING REPLACE english_stem WITH groundswell_stem"
        )
    _make_search(postgres, "search_text")
    op.execute("DROP INDEX ix_entities_label_fold")
    op.add_column("entities", sa.Column("label_key", sa.Text(), nullable=True))
    _fill(
        bind,
        "SELECT label, k0 FROM (SELECT label, id AS k0 FROM entities) e "
        "WHERE {where} ORDER BY k0 LIMIT :n",
        "UPDATE entities SET label_key = :v WHERE id = :k0",
        1,
        label_key,
    )
    op.create_index("ix_entities_label_key", "entities", ["label_key"])


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.drop_index("ix_entities_label_key", table_name="entities")
    # ALTER TABLE ... DROP COLUMN on either backend (SQLite 3.35+): a batch copy of a table
    # other tables' keys reach fails SQLite's foreign key check when it drops the original.
    op.execute("ALTER TABLE entities DROP COLUMN label_key")
    op.execute("CREATE INDEX ix_entities_label_fold ON entities (lower(label))")
    _drop_search(postgres)
    if postgres:
        op.execute("DROP TEXT SEARCH CONFIGURATION groundswell")
        op.execute("DROP TEXT SEARCH DICTIONARY groundswell_stem")
    op.execute("ALTER TABLE evidence DROP COLUMN search_text")
    _make_search(postgres, "quote", "english")
