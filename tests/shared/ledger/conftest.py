"""A private PostgreSQL server for the ledger's tests, and a ledger URL per backend.

The server is started from the installed binaries (``/usr/lib/postgresql/<version>/bin``:
initdb, pg_ctl) in a temporary folder, on a free loopback port, once per test session, and
stopped at its end; never the machine's own server. PostgreSQL refuses to run as root, so as
root it runs as the ``postgres`` user through ``runuser`` (celery-notes §3.4). Missing
binaries fail the tests that need the server, with what to install: they do not skip.

Each test gets its own schema (``search_path``) in that server, so tests do not see one
another's rows and no database needs creating.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_USER = "groundswell"


def _bindir() -> Path:
    """The newest installed PostgreSQL server's bin folder (pg_config's, else a glob)."""
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if done.returncode == 0:
            candidates.append(Path(done.stdout.strip()))

    def version(p: str) -> tuple[int, ...]:
        part = Path(p).parent.name
        return tuple(int(x) for x in part.split(".") if x.isdigit())

    candidates += [
        Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version)[::-1]
    ]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    pytest.fail(
        "the ledger's PostgreSQL tests start their own server from the installed binaries, and "
        "found no initdb and pg_ctl (looked in pg_config --bindir and /usr/lib/postgresql/*/bin): "
        "install the server (apt-get install postgresql)",
        pytrace=False,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """``postgresql://groundswell@127.0.0.1:PORT/postgres`` of a server started for this
    session (each xdist worker has its own)."""
    bindir = _bindir()
    root = Path(tempfile.mkdtemp(prefix="gs-ledger-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root, ignore_errors=True)
            pytest.fail(
                "running as root, PostgreSQL must run as another user: there is no 'postgres' "
                "user (the postgresql package makes it)",
                pytrace=False,
            )
        os.chown(root, owner.pw_uid, owner.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = root / "data"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)

    done = run(
        str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", PG_USER, "-E", "UTF8",
        "--no-sync", "--locale=C",
    )  # fmt: skip
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"initdb failed: {done.stderr[-2000:]}", pytrace=False)
    port = 0
    for _ in range(3):  # another process may take the free port before the server binds it
        port = _free_port()
        options = (
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        done = run(
            str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"),
            "-w", "-t", "60", "start",
        )  # fmt: skip
        if done.returncode == 0:
            break
    else:
        log = (root / "log").read_text(errors="replace")[-2000:] if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {done.stderr[-1000:]} {log}", pytrace=False)
    try:
        yield f"postgresql://{PG_USER}@127.0.0.1:{port}/postgres"
    finally:
        run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


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
