"""Facts carry their claim's subject, indexed with the field and key: disagreements per
(entity, field, key) then read the facts in that order and stop at the page's end, instead of
walking the claims by subject and looking up each one's fact (12 µs a claim at 1M; a page
where one group in ten thousand disagrees read 200,000 claims). Existing facts are filled in
from their claims.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("facts", sa.Column("subject_entity_id", sa.String(32), nullable=True))
    op.execute(
        "UPDATE facts SET subject_entity_id = "
        "(SELECT c.subject_entity_id FROM claims c WHERE c.id = facts.claim_id)"
    )
    op.create_index("ix_facts_subject", "facts", ["subject_entity_id", "field", "key"])


def downgrade() -> None:
    op.drop_index("ix_facts_subject", table_name="facts")
    with op.batch_alter_table("facts") as batch:
        batch.drop_column("subject_entity_id")
