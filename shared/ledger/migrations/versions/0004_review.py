"""Review: the merges resolve held (``review_questions``, rewritten by each resolve) and every
answer given to them (``review_decisions``, appended; an id's newest row is its decision).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "review_questions",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("type", sa.String(200), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("labels", JSON, nullable=False),
        sa.Column("into", sa.Text(), nullable=False),
        sa.Column("into_type", sa.String(200), nullable=False),
        sa.Column("into_key", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("also", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_review_questions"),
        sa.CheckConstraint(
            "status IN ('open', 'deferred', 'accepted', 'rejected')",
            name="ck_review_questions_status",
        ),
    )
    op.create_index("ix_review_questions_rank", "review_questions", ["weight", "id"])
    op.create_table(
        "review_decisions",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("verdict", sa.String(8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("asserter", sa.Text(), nullable=False),
        sa.Column("date", sa.Date(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("held_because", sa.Text(), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("into_type", sa.String(200), nullable=True),
        sa.Column("into_key", sa.Text(), nullable=True),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_review_decisions"),
        sa.CheckConstraint(
            "verdict IN ('accept', 'reject', 'defer')", name="ck_review_decisions_verdict"
        ),
    )
    op.create_index("ix_review_decisions_id", "review_decisions", ["id", "seq"])


def downgrade() -> None:
    op.drop_table("review_decisions")
    op.drop_table("review_questions")
