"""A private PostgreSQL server for the ledger's tests, and a ledger URL per backend.

The server (``groundswell.shared.ledger.pgserver``, which bench/ledger.py uses too) is started
from the installed binaries in a temporary folder, on a free loopback port, once per test
session, and stopped at its end; never the machine's own server. As root it runs as the
``postgres`` user through ``runuser`` (celery-notes §3.4). Missing binaries fail the tests
that need the server, with what to install: they do not skip.

Each test gets its own schema (``search_path``) in that server, so tests do not see one
another's rows and no database needs creating.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundswell.shared.ledger.pgserver import PostgresServer, PostgresUnavailable


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """``postgresql://groundswell@127.0.0.1:PORT/postgres`` of a server started for this
    session (each xdist worker has its own)."""
    server = PostgresServer(prefix="gs-ledger-pg-")
    try:
        url = server.start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A URL whose connections work in a fresh schema of the session's server."""
    import psycopg

    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"{postgres_server}?options=-csearch_path%3D{schema}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path: Path) -> str:
    """The same tests on both backends: an embedded SQLite file and the private server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def ledger(ledger_url: str):
    from groundswell.shared.ledger.store import Ledger

    store = Ledger.open(ledger_url)
    yield store
    store.close()
