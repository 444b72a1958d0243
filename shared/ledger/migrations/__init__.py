"""Alembic migrations of the ledger, shipped in the package and applied by
:func:`groundswell.shared.ledger.store.migrate` (no alembic.ini needed)."""
