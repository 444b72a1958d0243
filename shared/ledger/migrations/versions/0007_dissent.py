"""The dissent index: the claims whose stance is not the default one (denied, or rejected), by
id, with their triple.

Every contradiction pairs two claims of one triple whose stances differ, so one of the two
dissents. A first page of contradictions of any subject walks these claims in id order (a
tenth of the ledger in the bench's stream) and looks up each one's triple, instead of walking
every claim: at 10M claims, the page no longer reads the whole claims index before it fills.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

DISSENT = "polarity <> 'affirmed' OR modality = 'rejected'"  # models.DISSENT at 0007


def upgrade() -> None:
    op.create_index(
        "ix_claims_dissent",
        "claims",
        ["id", "subject_entity_id", "relation", "object_entity_id"],
        postgresql_where=sa.text(DISSENT),
        sqlite_where=sa.text(DISSENT),
    )


def downgrade() -> None:
    op.drop_index("ix_claims_dissent", table_name="claims")
