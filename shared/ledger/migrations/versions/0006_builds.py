"""Bulk loads make their indexes and keys again after their data commits, in parallel, from a
journal (``ledger_builds``: each statement still to run, by lane); and PostgreSQL's search
index is sharded in ``SEARCH_SHARDS`` partial indexes by the parity of the span's start, so
the shards build at once (a GIN index builds on one core only; ten million quotes took two
minutes as one index, one as two).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SHARDS = 2  # models.SEARCH_SHARDS when this revision was made


def upgrade() -> None:
    op.create_table(
        "ledger_builds",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("lane", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("statement", sa.Text(), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_ledger_builds"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX ix_evidence_quote_fts")
    for k in range(SHARDS):
        op.execute(
            f"CREATE INDEX ix_evidence_quote_fts_{k} ON evidence "
            f"USING GIN (to_tsvector('english', quote)) WHERE \"start\" % {SHARDS} = {k}"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for k in range(SHARDS):
            op.execute(f"DROP INDEX ix_evidence_quote_fts_{k}")
        op.execute(
            "CREATE INDEX ix_evidence_quote_fts ON evidence "
            "USING GIN (to_tsvector('english', quote))"
        )
    op.drop_table("ledger_builds")
