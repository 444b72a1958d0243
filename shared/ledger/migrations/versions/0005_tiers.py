"""Evidence tiers: verification's as well as the locator's.

A run's grounded quotations are stored with the tier verification found them at, and
verification's ladder has two tiers the locator does not (``typography``, ``skeleton``), so
the check on ``evidence.tier`` takes the five: the locator's ``exact``, ``case`` and
``whitespace``, then ``typography`` and ``skeleton``. The sets are written out here, not
imported: a revision is what it was when it was made.

PostgreSQL changes the check in place (adding it reads the table once). SQLite cannot alter a
check, so the table is made again (Alembic's batch mode: a new table, the rows copied, the old
one dropped). Dropping it drops the triggers that keep search's FTS5 table in step, and the
copy gives the rows new rowids, which FTS5 follows: the triggers are made again and the FTS5
index is rebuilt from the new rows.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import warnings

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

LOCATOR_TIERS = ("exact", "case", "whitespace")
EVIDENCE_TIERS = (*LOCATOR_TIERS, "typography", "skeleton")
# The check's name as revision 0001 made it (the naming convention applied to its name).
OLD_NAME = "ck_evidence_ck_evidence_tier"
NAME = "ck_evidence_tier"  # what the models' convention names it

FTS_TRIGGERS = (
    "CREATE TRIGGER evidence_fts_insert AFTER INSERT ON evidence BEGIN "
    "INSERT INTO evidence_fts (rowid, quote) VALUES (new.rowid, new.quote); END",
    "CREATE TRIGGER evidence_fts_delete AFTER DELETE ON evidence BEGIN "
    "INSERT INTO evidence_fts (evidence_fts, rowid, quote) "
    "VALUES ('delete', old.rowid, old.quote); END",
)


def _one_of(tiers: tuple[str, ...]) -> str:
    return "tier IN (" + ", ".join(f"'{t}'" for t in tiers) + ")"


def _set_check(drop: str, name: str, tiers: tuple[str, ...]) -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        # Gone with the old table anyway; dropped first so that nothing fires mid-copy.
        op.execute("DROP TRIGGER IF EXISTS evidence_fts_insert")
        op.execute("DROP TRIGGER IF EXISTS evidence_fts_delete")
    with warnings.catch_warnings():
        # Reflecting evidence reflects the tables its keys reach, entities among them, whose
        # expression index (0002) SQLAlchemy says it skips: it is not copied, nor touched.
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based")
        with op.batch_alter_table("evidence") as batch:
            batch.drop_constraint(op.f(drop), type_="check")
            batch.create_check_constraint(op.f(name), _one_of(tiers))
    if sqlite:
        for statement in FTS_TRIGGERS:
            op.execute(statement)
        op.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('rebuild')")


def upgrade() -> None:
    _set_check(OLD_NAME, NAME, EVIDENCE_TIERS)


def downgrade() -> None:
    # The narrower check cannot hold evidence at the other tiers: those claims go (their
    # evidence and facts with them, by their foreign keys' cascade).
    wider = ", ".join(f"'{t}'" for t in EVIDENCE_TIERS if t not in LOCATOR_TIERS)
    op.execute(
        f"DELETE FROM claims WHERE id IN (SELECT claim_id FROM evidence WHERE tier IN ({wider}))"
    )
    _set_check(NAME, OLD_NAME, LOCATOR_TIERS)
