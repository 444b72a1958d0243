"""The ledger of a test, on each backend (the ``ledger_url`` fixture of tests/conftest.py: an
embedded SQLite file and a private PostgreSQL server)."""

from __future__ import annotations

import pytest


@pytest.fixture
def ledger(ledger_url: str):
    from groundswell.shared.ledger.store import Ledger

    store = Ledger.open(ledger_url)
    yield store
    store.close()
