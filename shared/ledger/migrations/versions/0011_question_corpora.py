"""The corpora of the claims each held merge's answer moves (``review_question_corpora``, one
row per question and corpus, "" for claims of no corpus), written by ``resolve`` with its
questions: a team's key lists and answers only the merges whose claims are all its corpora's
(issue 25 item 8). Questions stored before have none until the next resolve: a team's key
sees none of them.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_question_corpora",
        sa.Column("question_id", sa.Text(), primary_key=True),
        sa.Column("corpus", sa.Text(), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("review_question_corpora")
