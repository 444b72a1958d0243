"""The run commands as a user meets them: waiting that survives a Redis blip, a timeout,
and a summary that says what it left out."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import redis
from rich.console import Console

from groundswell.shared.cli import runs as cli_runs
from groundswell.shared.cli.render import print_summary
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.state import Progress


class _BlinkingService:
    """A run that ends after Redis failed to answer twice."""

    def __init__(self) -> None:
        self.calls = 0
        self.settings = SimpleNamespace(stall_seconds=60)

    def get(self, run_id: str):
        self.calls += 1
        if self.calls <= 2:
            raise redis.exceptions.ConnectionError("Connection refused")
        return SimpleNamespace(state="succeeded", terminal=self.calls > 3)

    def progress(self, run_id: str) -> Progress:
        return Progress(1, 1, 0, True, {})

    def reconcile(self) -> dict:
        return {}

    def waiting_for(self, run_id: str) -> None:
        return None


def test_waiting_survives_redis_not_answering(capsys, monkeypatch):
    monkeypatch.setattr(cli_runs.time, "sleep", lambda s: None)
    service = _BlinkingService()
    cli_runs._wait(service, "r1", show_progress=False)
    err = capsys.readouterr().err
    assert "reconnecting" in err and "Redis answers again" in err
    with pytest.raises(cli_runs.WaitTimeout):
        cli_runs._wait(_BlinkingService(), "r1", show_progress=False, timeout=0)


def test_a_summary_says_where_its_files_are_and_what_it_does_not_show():
    errors = [
        {"file": f"claims/d{i}.jsonl", "line": 1, "field": None, "message": "bad"}
        for i in range(25)
    ]
    summary = {
        "counts": {"ignored.documents_without_units": 2, "ignored.files": 3, "errors": 30},
        "rates": {},
        "units": {},
        "errors": errors,
        "errors_total": 30,
        "index": {"manifest": "runs/r/index/manifest.json", "merkle_root": "ab" * 32},
    }
    out = io.StringIO()
    print_summary(summary, "/srv/out", Console(file=out, width=200))
    text = out.getvalue()
    assert "receipts and run files under /srv/out" in text  # not the last error's file
    assert "and 10 more input errors" in text
    assert "2 documents without claims or candidates, 3 files outside the corpus layout" in text


@pytest.mark.integration
def test_run_stops_waiting_at_its_timeout(tmp_path):
    env = {**os.environ, "GROUNDSWELL_STORAGE_URL": str(tmp_path / "out")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "groundswell",
            "run",
            str(SAMPLE_CORPUS),
            "--embedded",
            "--timeout",
            "0.01",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4, done.stderr  # still going at --timeout
    assert "after 0.01 s" in done.stderr and "groundswell status" in done.stderr
    assert "worker logs:" in done.stderr


def test_while_planning_the_wait_line_says_how_far_the_listing_got():
    planning = Progress(56, 0, 0, False, {"planning.listed": 1234})
    assert cli_runs.progress_line("planning", planning) == (
        "planning: 1,234 objects listed, 56 units planned"
    )
    assert cli_runs.progress_line("running", Progress(56, 3, 0, True, {})) == "running"
