"""The ledger's tables (SQLAlchemy 2). The schema itself is made by the migrations under
``migrations/versions``; a test holds these models and the migrated schema equal.

- ``vocabularies`` / ``relations``: the closed vocabularies claims were checked against;
- ``entities``: what claims name, one row per (type, label), its id derived from both;
- ``claims``: subject–relation–object, modality, polarity, asserter and what came with it;
- ``evidence``: each claim's spans, located in the document (offsets into its text, the
  quote as given, the source text at those offsets, and the pass that found it);
- ``review_questions`` / ``review_decisions``: the merges resolve held, and the answers given.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from groundswell.shared.ledger.locate import TIERS

MODALITIES = ("assertion", "reported", "conjecture", "rejected", "declined", "question")
# What found an evidence span: the locator's passes (an import), then the verification ladder's
# tiers it does not have (a run's grounded quotations, at the tier verification found them).
# Migration 0005 writes the same set into the check.
EVIDENCE_TIERS = (*TIERS, "typography", "skeleton")
POLARITIES = ("affirmed", "denied")

# JSON on SQLite, JSONB on PostgreSQL.
Json = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def entity_id(type_: str, label: str) -> str:
    """An entity's id: derived from its type and label, so every writer names it alike."""
    digest = hashlib.sha256(f"{type_}\x00{label}".encode()).hexdigest()
    return "e" + digest[:31]


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class VocabularyRow(Base):
    __tablename__ = "vocabularies"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    digest: Mapped[str] = mapped_column(String(71))
    entity_types: Mapped[list[str]] = mapped_column(Json)
    loaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RelationRow(Base):
    __tablename__ = "relations"

    vocabulary: Mapped[str] = mapped_column(
        String(200), ForeignKey("vocabularies.name", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    subject_types: Mapped[list[str]] = mapped_column(Json)
    object_types: Mapped[list[str]] = mapped_column(Json)
    symmetric: Mapped[bool] = mapped_column(Boolean)
    description: Mapped[str] = mapped_column(Text)


class EntityRow(Base):
    __tablename__ = "entities"
    __table_args__ = (
        UniqueConstraint("type", "label"),
        Index("ix_entities_label_key", "label_key"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    type: Mapped[str] = mapped_column(String(200))
    label: Mapped[str] = mapped_column(Text)
    # The label "in any case" (folding.label_key, migration 0012): what a name is looked up by.
    label_key: Mapped[str | None] = mapped_column(Text, nullable=True)  # set by every writer


def affirms(alias: str = "") -> str:
    """SQL true of a claim (of table ``alias``) that takes the default stance: affirmed and not
    rejected. A path walks only these unless asked; an objects disagreement counts only them."""
    c = f"{alias}." if alias else ""
    return f"{c}polarity = 'affirmed' AND {c}modality <> 'rejected'"


def dissents(alias: str = "") -> str:
    """SQL true of a claim that takes another stance (denied, or rejected): one side of every
    contradiction is such a claim, so the dissent index lists where contradictions can be."""
    c = f"{alias}." if alias else ""
    return f"{c}polarity <> 'affirmed' OR {c}modality = 'rejected'"


DISSENT = dissents()  # the dissent index's predicate


class ClaimRow(Base):
    __tablename__ = "claims"
    __table_args__ = (
        CheckConstraint(_one_of("modality", MODALITIES), name="modality"),
        CheckConstraint(_one_of("polarity", POLARITIES), name="polarity"),
        # The stance columns ride along (PostgreSQL's INCLUDE, migration 0008), so a path
        # query's walk of affirming claims reads these indexes only, never the claim rows.
        Index(
            "ix_claims_triple",
            "subject_entity_id",
            "relation",
            "object_entity_id",
            postgresql_include=["polarity", "modality"],
        ),
        Index(
            "ix_claims_object_subject",
            "object_entity_id",
            "subject_entity_id",
            postgresql_include=["polarity", "modality"],
        ),
        Index("ix_claims_document", "document_id"),
        Index("ix_claims_corpus", "corpus"),
        Index(
            "ix_claims_dissent",
            "id",
            "subject_entity_id",
            "relation",
            "object_entity_id",
            postgresql_where=text(DISSENT),
            sqlite_where=text(DISSENT),
        ),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    document_id: Mapped[str] = mapped_column(Text)
    relation: Mapped[str] = mapped_column(String(200))
    subject_entity_id: Mapped[str] = mapped_column(String(32), ForeignKey("entities.id"))
    object_entity_id: Mapped[str] = mapped_column(String(32), ForeignKey("entities.id"))
    modality: Mapped[str] = mapped_column(String(16))
    polarity: Mapped[str] = mapped_column(String(16))
    asserter: Mapped[str] = mapped_column(Text)
    hedge_markers: Mapped[list[str]] = mapped_column(Json)
    qualifier: Mapped[str | None] = mapped_column(Text, nullable=True)
    confidence: Mapped[float] = mapped_column(Float)
    verified: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    verifier_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    vocabulary: Mapped[str | None] = mapped_column(String(200), nullable=True)
    origin: Mapped[str] = mapped_column(Text)  # file:line it was imported from
    # The corpus it came from (a run's, an import's; None: a file outside any corpus, or
    # loaded before claims kept it), so a team's key is shown its corpora's claims only.
    corpus: Mapped[str | None] = mapped_column(Text, nullable=True)
    extra: Mapped[dict[str, Any]] = mapped_column(Json)  # fields of the line not read
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class EvidenceRow(Base):
    __tablename__ = "evidence"
    __table_args__ = (
        ForeignKeyConstraint(["claim_id"], ["claims.id"], ondelete="CASCADE"),
        CheckConstraint(_one_of("tier", EVIDENCE_TIERS), name="tier"),
        CheckConstraint('0 <= "start" AND "start" < "end"', name="span"),
    )

    claim_id: Mapped[str] = mapped_column(Text, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[str] = mapped_column(Text)
    start: Mapped[int] = mapped_column(Integer)
    end: Mapped[int] = mapped_column(Integer)
    quote: Mapped[str] = mapped_column(Text)  # as the extractor gave it
    text: Mapped[str] = mapped_column(Text)  # the document's text at [start, end)
    tier: Mapped[str] = mapped_column(String(16))  # one of EVIDENCE_TIERS
    # The quote's words as search indexes them (folding.search_text, migration 0012): both
    # backends index this, so both find the same quotes.
    search_text: Mapped[str | None] = mapped_column(Text, nullable=True)  # set by every writer


# Column order of each table, as the bulk writers send rows.
COLUMNS = {
    table.name: [c.name for c in table.columns]
    for table in (ClaimRow.__table__, EvidenceRow.__table__, EntityRow.__table__)
}


class FactRow(Base):
    """What an admitted fact adds to its claim (issue 16 item 2b): the field and key it fills,
    its value and unit, and the run, policy version and receipt that admitted it. The claim's
    subject is the entity the document describes; its asserter is the document."""

    __tablename__ = "facts"
    __table_args__ = (
        ForeignKeyConstraint(["claim_id"], ["claims.id"], ondelete="CASCADE"),
        Index("ix_facts_field_key", "field", "key"),
        Index("ix_facts_subject", "subject_entity_id", "field", "key"),
    )

    claim_id: Mapped[str] = mapped_column(Text, primary_key=True)
    # The claim's subject (the entity its document describes), kept here too (migration 0009)
    # so disagreements per (entity, field, key) read facts in that order without the claims.
    subject_entity_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    field: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(Text)  # "" when the field has one value per entity
    value: Mapped[str] = mapped_column(Text)  # canonical JSON of the admitted value
    unit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    run_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    policy_version: Mapped[str | None] = mapped_column(String(200), nullable=True)
    receipt_digest: Mapped[str | None] = mapped_column(String(71), nullable=True)


class EntityGroupRow(Base):
    """Entity resolution's answer: each entity it grouped and its group (the id of the
    group's label entity). Claims keep pointing at their own entities; re-resolving rewrites
    only this table."""

    __tablename__ = "entity_groups"
    __table_args__ = (Index("ix_entity_groups_group", "group_id"),)

    entity_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True
    )
    group_id: Mapped[str] = mapped_column(String(32))


# Made by migration 0002 outside the models (expression indexes, SQLite's FTS5 table and its
# shadow tables): the schema comparison leaves them out.
SEARCH_SHARDS = 2  # PostgreSQL's search index: partial GIN indexes by "start" % SEARCH_SHARDS

UNMODELLED = frozenset(
    {
        "ix_evidence_quote_fts",
        *(f"ix_evidence_quote_fts_{k}" for k in range(SEARCH_SHARDS)),
        "evidence_fts",
        "evidence_fts_config",
        "evidence_fts_data",
        "evidence_fts_docsize",
        "evidence_fts_idx",
    }
)


VERDICTS = ("accept", "reject", "defer")
QUESTION_STATES = ("open", "deferred", "accepted", "rejected")


class ReviewQuestionRow(Base):
    """A merge ``resolve`` held, one row per question id ``merge:<Type>/<key>`` (the group
    asked about, the lighter side): the group it would join (``into_*``, its heaviest pair),
    why it was held, the claims the answer moves, and the other groups it was held against
    (``also``). Rewritten as a whole by each resolve, as ``entity_groups`` is; ``status`` is
    what resolve found (open, or deferred by a decision on the same target) and what an
    applied decision made it until the next resolve."""

    __tablename__ = "review_questions"
    __table_args__ = (
        CheckConstraint(_one_of("status", QUESTION_STATES), name="status"),
        Index("ix_review_questions_rank", "weight", "id"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    type: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(Text)
    label: Mapped[str] = mapped_column(Text)
    labels: Mapped[list[str]] = mapped_column(Json)  # the asked group's labels (a few)
    into: Mapped[str] = mapped_column(Text)  # the label of the group it would join
    into_type: Mapped[str] = mapped_column(String(200))
    into_key: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    weight: Mapped[int] = mapped_column(Integer)
    also: Mapped[list[dict[str, Any]]] = mapped_column(Json)
    status: Mapped[str] = mapped_column(String(16))


class ReviewQuestionCorpusRow(Base):
    """A corpus of the claims a held merge's answer moves (its groups' claims, and those of
    the groups listed with it), "" for claims of no corpus; rewritten with the questions. A
    question is a team key's when every corpus of it is one the key sees (migration 0011)."""

    __tablename__ = "review_question_corpora"

    question_id: Mapped[str] = mapped_column(Text, primary_key=True)
    corpus: Mapped[str] = mapped_column(Text, primary_key=True)


class ReviewDecisionRow(Base):
    """Every answer given to a held merge, oldest first (``seq``); the newest row of an id is
    its decision. A decision is a claim: its asserter (``by`` in a decisions file), reason and
    date, where it came from (file:line, or the API and its key), and the question as it was
    asked (its text, why it was held, its weight and the group it would have joined)."""

    __tablename__ = "review_decisions"
    __table_args__ = (
        CheckConstraint(_one_of("verdict", VERDICTS), name="verdict"),
        Index("ix_review_decisions_id", "id", "seq"),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(Text)
    verdict: Mapped[str] = mapped_column(String(8))
    reason: Mapped[str] = mapped_column(Text)
    asserter: Mapped[str] = mapped_column(Text)
    date: Mapped[dt.date] = mapped_column(Date)
    question: Mapped[str] = mapped_column(Text)
    held_because: Mapped[str] = mapped_column(Text)
    weight: Mapped[int] = mapped_column(Integer)
    into_type: Mapped[str | None] = mapped_column(String(200), nullable=True)
    into_key: Mapped[str | None] = mapped_column(Text, nullable=True)
    origin: Mapped[str] = mapped_column(Text)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LedgerBuildRow(Base):
    """A statement a bulk load still has to run after its data committed (an index, a key or
    statistics it dropped for the load), by lane (the lanes run at once, each on a connection
    of its own) and order in its lane; the row goes in the statement's own transaction."""

    __tablename__ = "ledger_builds"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    lane: Mapped[str] = mapped_column(String(64))
    seq: Mapped[int] = mapped_column(Integer)
    statement: Mapped[str] = mapped_column(Text)
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
