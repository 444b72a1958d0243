"""What the queries need: facts (field, key, value, unit and provenance of admitted facts),
entity groups (resolution), full-text search over evidence quotes (PostgreSQL: a GIN index on
an English tsvector; SQLite: an FTS5 table with the Porter stemmer, kept by triggers) and an
index on lower-cased entity labels (path finds entities by name).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "facts",
        sa.Column("claim_id", sa.Text(), nullable=False),
        sa.Column("field", sa.String(200), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("unit", sa.String(64), nullable=True),
        sa.Column("run_id", sa.Text(), nullable=True),
        sa.Column("policy_version", sa.String(200), nullable=True),
        sa.Column("receipt_digest", sa.String(71), nullable=True),
        sa.PrimaryKeyConstraint("claim_id", name="pk_facts"),
        sa.ForeignKeyConstraint(
            ["claim_id"], ["claims.id"], name="fk_facts_claim_id_claims", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_facts_field_key", "facts", ["field", "key"])
    op.create_table(
        "entity_groups",
        sa.Column("entity_id", sa.String(32), nullable=False),
        sa.Column("group_id", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("entity_id", name="pk_entity_groups"),
        sa.ForeignKeyConstraint(
            ["entity_id"],
            ["entities.id"],
            name="fk_entity_groups_entity_id_entities",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_entity_groups_group", "entity_groups", ["group_id"])
    op.execute("CREATE INDEX ix_entities_label_fold ON entities (lower(label))")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE INDEX ix_evidence_quote_fts ON evidence "
            "USING GIN (to_tsvector('english', quote))"
        )
        return
    op.execute(
        "CREATE VIRTUAL TABLE evidence_fts USING fts5(quote, content='evidence', "
        "content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')"
    )
    op.execute(
        "CREATE TRIGGER evidence_fts_insert AFTER INSERT ON evidence BEGIN "
        "INSERT INTO evidence_fts (rowid, quote) VALUES (new.rowid, new.quote); END"
    )
    op.execute(
        "CREATE TRIGGER evidence_fts_delete AFTER DELETE ON evidence BEGIN "
        "INSERT INTO evidence_fts (evidence_fts, rowid, quote) "
        "VALUES ('delete', old.rowid, old.quote); END"
    )
    op.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('rebuild')")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_evidence_quote_fts")
    else:
        op.execute("DROP TRIGGER evidence_fts_insert")
        op.execute("DROP TRIGGER evidence_fts_delete")
        op.execute("DROP TABLE evidence_fts")
    op.execute("DROP INDEX ix_entities_label_fold")
    op.drop_table("entity_groups")
    op.drop_table("facts")
