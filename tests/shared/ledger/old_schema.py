"""Writing the rows of a ledger of an older revision with today's writer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text


@contextmanager
def todays_claim_columns(store) -> Iterator[None]:
    """Today's writer sends a claim's corpus (migration 0010), which an older ledger lacks: the
    column is there for the writes inside only, and gone again before the ledger migrates."""
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE claims ADD COLUMN corpus TEXT"))
    yield
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE claims DROP COLUMN corpus"))
