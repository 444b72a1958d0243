"""Claims, their evidence, the entities they name and the vocabularies they were checked
against.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(JSONB(), "postgresql")
MODALITIES = "'assertion', 'reported', 'conjecture', 'rejected', 'declined', 'question'"


def upgrade() -> None:
    op.create_table(
        "vocabularies",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("digest", sa.String(71), nullable=False),
        sa.Column("entity_types", JSON, nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_vocabularies"),
    )
    op.create_table(
        "relations",
        sa.Column("vocabulary", sa.String(200), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("subject_types", JSON, nullable=False),
        sa.Column("object_types", JSON, nullable=False),
        sa.Column("symmetric", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("vocabulary", "name", name="pk_relations"),
        sa.ForeignKeyConstraint(
            ["vocabulary"],
            ["vocabularies.name"],
            name="fk_relations_vocabulary_vocabularies",
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "entities",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("type", sa.String(200), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_entities"),
        sa.UniqueConstraint("type", "label", name="uq_entities_type"),
    )
    op.create_table(
        "claims",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("document_id", sa.Text(), nullable=False),
        sa.Column("relation", sa.String(200), nullable=False),
        sa.Column("subject_entity_id", sa.String(32), nullable=False),
        sa.Column("object_entity_id", sa.String(32), nullable=False),
        sa.Column("modality", sa.String(16), nullable=False),
        sa.Column("polarity", sa.String(16), nullable=False),
        sa.Column("asserter", sa.Text(), nullable=False),
        sa.Column("hedge_markers", JSON, nullable=False),
        sa.Column("qualifier", sa.Text(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=True),
        sa.Column("verifier_note", sa.Text(), nullable=True),
        sa.Column("vocabulary", sa.String(200), nullable=True),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column("extra", JSON, nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_claims"),
        sa.CheckConstraint(f"modality IN ({MODALITIES})", name="ck_claims_modality"),
        sa.CheckConstraint("polarity IN ('affirmed', 'denied')", name="ck_claims_polarity"),
        sa.ForeignKeyConstraint(
            ["subject_entity_id"], ["entities.id"], name="fk_claims_subject_entity_id_entities"
        ),
        sa.ForeignKeyConstraint(
            ["object_entity_id"], ["entities.id"], name="fk_claims_object_entity_id_entities"
        ),
    )
    op.create_index(
        "ix_claims_triple", "claims", ["subject_entity_id", "relation", "object_entity_id"]
    )
    op.create_index("ix_claims_object", "claims", ["object_entity_id"])
    op.create_index("ix_claims_document", "claims", ["document_id"])
    op.create_table(
        "evidence",
        sa.Column("claim_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Text(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("end", sa.Integer(), nullable=False),
        sa.Column("quote", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("claim_id", "seq", name="pk_evidence"),
        sa.ForeignKeyConstraint(
            ["claim_id"], ["claims.id"], name="fk_evidence_claim_id_claims", ondelete="CASCADE"
        ),
        sa.CheckConstraint("tier IN ('exact', 'case', 'whitespace')", name="ck_evidence_tier"),
        sa.CheckConstraint('0 <= "start" AND "start" < "end"', name="ck_evidence_span"),
    )


def downgrade() -> None:
    for table in ("evidence", "claims", "entities", "relations", "vocabularies"):
        op.drop_table(table)
