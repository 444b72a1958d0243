"""A private PostgreSQL server started from the installed binaries, for tests and benchmarks.

The server runs in a temporary folder on a free loopback port and is stopped (and its folder
removed) by ``stop()``; never the machine's own server. The bin folder is looked up
(``pg_config --bindir``, else the newest ``/usr/lib/postgresql/*/bin``), not hard-coded.
PostgreSQL refuses to run as root, so as root it runs as the ``postgres`` user through
``runuser`` (celery-notes §3.4). It trades durability for speed (``fsync``,
``synchronous_commit`` and ``full_page_writes`` off): it holds nothing worth keeping.

``tests/shared/ledger/conftest.py`` starts one per test session; ``bench/ledger.py`` one per
benchmark run.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PG_USER = "groundswell"


class PostgresUnavailable(RuntimeError):
    """The server could not be started; the message says what to install or what failed."""


def bindir() -> Path:
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
    raise PostgresUnavailable(
        "a private PostgreSQL server is started from the installed binaries, and no initdb "
        "and pg_ctl were found (looked in pg_config --bindir and /usr/lib/postgresql/*/bin): "
        "install the server (apt-get install postgresql)"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """``with PostgresServer() as url:`` a ``postgresql://groundswell@127.0.0.1:PORT/postgres``
    of a server of its own. ``settings`` are extra ``-c name=value`` server settings."""

    def __init__(self, *, settings: dict[str, str] | None = None, prefix: str = "gs-pg-") -> None:
        self.settings = settings or {}
        self.prefix = prefix
        self.root: Path | None = None
        self.url = ""
        self._bindir: Path | None = None
        self._runas: list[str] = []

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self._runas, *args], capture_output=True, text=True, timeout=120)

    def start(self) -> str:
        self._bindir = bindir()
        root = self.root = Path(tempfile.mkdtemp(prefix=self.prefix))
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                self._cleanup()
                raise PostgresUnavailable(
                    "running as root, PostgreSQL must run as another user: there is no "
                    "'postgres' user (the postgresql package makes it)"
                ) from None
            os.chown(root, owner.pw_uid, owner.pw_gid)
            self._runas = ["runuser", "-u", "postgres", "--"]
        data = root / "data"
        done = self._run(
            str(self._bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", PG_USER,
            "-E", "UTF8", "--no-sync", "--locale=C",
        )  # fmt: skip
        if done.returncode != 0:
            self._cleanup()
            raise PostgresUnavailable(f"initdb failed: {done.stderr[-2000:]}")
        extra = "".join(f" -c {k}={v}" for k, v in self.settings.items())
        for _ in range(3):  # another process may take the free port before the server binds it
            port = free_port()
            options = (
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                f"-c synchronous_commit=off -c full_page_writes=off{extra}"
            )
            done = self._run(
                str(self._bindir / "pg_ctl"), "-D", str(data), "-o", options,
                "-l", str(root / "log"), "-w", "-t", "60", "start",
            )  # fmt: skip
            if done.returncode == 0:
                self.url = f"postgresql://{PG_USER}@127.0.0.1:{port}/postgres"
                return self.url
        log = (root / "log").read_text(errors="replace")[-2000:] if (root / "log").exists() else ""
        self._cleanup()
        raise PostgresUnavailable(f"PostgreSQL did not start: {done.stderr[-1000:]} {log}")

    def stop(self) -> None:
        if self.root is None:
            return
        if self.url and self._bindir is not None:
            self._run(str(self._bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast",
                      "-w", "stop")  # fmt: skip
        self._cleanup()

    def _cleanup(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
        self.url = ""

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
