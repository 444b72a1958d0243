"""What a worker and the API load at start-up: never the ledger's database layer (SQLAlchemy,
psycopg) before a ledger is used. Each costs a process about 20 MB of resident memory and a
tenth of a second, in every prefork child (bench/scale.py's "idle task" and "idle API")."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

DATABASE = ("sqlalchemy", "psycopg", "groundswell.shared.ledger.store")

STARTS = {
    "worker": "import groundswell.workers.tasks\n",
    "api": "from groundswell.api.main import create_app\ncreate_app()\n",
}


def loaded_by(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code + "import sys\nprint(' '.join(sorted(sys.modules)))\n"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1].split()


@pytest.mark.parametrize("process", sorted(STARTS))
def test_start_up_loads_no_database_layer(process):
    loaded = loaded_by(STARTS[process])
    assert "groundswell.shared.settings" in loaded  # it did start
    assert [m for m in loaded if m.startswith(DATABASE)] == []


def test_an_unreachable_ledger_is_retried_as_a_store_of_the_moment(tmp_path, monkeypatch):
    """The task base class retries StorageError: the ledger kind raises the database's
    going away as one, and a refusal (a row it cannot hold) stays a failed unit."""
    from sqlalchemy.exc import OperationalError

    from groundswell.shared.storage import StorageError
    from groundswell.shared.units import ledger
    from groundswell.workers.base import TRANSIENT

    def away(*_args, **_kw):
        raise OperationalError("SELECT 1", {}, Exception("connection refused\nat host:5432"))

    monkeypatch.setattr(ledger, "open_ledger", away)

    class Runner:
        @contextlib.contextmanager
        def listed(self, _listing):
            yield

    class Work:
        context = object()
        spec = type("Spec", (), {"doc_ids": ["a"], "source": None, "batch": 0, "listing": None})()
        settings = type("S", (), {"ledger_database_url": "sqlite://"})()
        runner = Runner()

    with pytest.raises(ledger.LedgerUnavailable) as raised:
        ledger.execute(Work())  # type: ignore[arg-type]
    assert isinstance(raised.value, StorageError) and isinstance(raised.value, TRANSIENT)
    assert str(raised.value) == "(builtins.Exception) connection refused"
