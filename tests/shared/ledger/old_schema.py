"""Writing the rows of a ledger of an older revision with today's writer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text

# Columns today's writer sends that an older ledger lacks: a claim's corpus (migration 0010),
# a quote's search words and a label's key (0012).
TODAYS = (("claims", "corpus"), ("evidence", "search_text"), ("entities", "label_key"))


@contextmanager
def todays_claim_columns(store) -> Iterator[None]:
    """The columns of ``TODAYS`` are there for the writes inside only, and gone again before
    the ledger migrates (which fills in those it adds)."""
    with store.engine.begin() as conn:
        for table, column in TODAYS:
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} TEXT"))
    yield
    with store.engine.begin() as conn:
        for table, column in TODAYS:
            conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
