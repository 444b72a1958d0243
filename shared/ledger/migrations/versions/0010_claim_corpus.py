"""Claims carry their corpus (a run's, an import's), indexed: a team's key lists only the
claims of its corpora (issue 25 item 8). Claims stored before have none (NULL): only a key
without corpora sees them.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("claims", sa.Column("corpus", sa.Text(), nullable=True))
    op.create_index("ix_claims_corpus", "claims", ["corpus"])


def downgrade() -> None:
    op.drop_index("ix_claims_corpus", table_name="claims")
    # In place (SQLite 3.35+ and PostgreSQL): a batch copy of claims would meet the search
    # triggers that read it.
    op.execute("ALTER TABLE claims DROP COLUMN corpus")
