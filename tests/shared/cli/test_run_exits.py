"""How `run` ends for a user and for CI: its exit code follows the run's state, and Ctrl-C
says what becomes of the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.shared.cli.test_runs_cli import groundswell

pytestmark = pytest.mark.integration

TEXT = "The rate was 4.5 percent in 2024. Net sales were $7,000 million.\n"


def partly_bad_corpus(root: Path) -> Path:
    """One good document and one whose claims file has a broken line: partially failed."""
    for sub in ("documents", "claims"):
        (root / sub).mkdir(parents=True)
    for name in ("good", "broken"):
        (root / "documents" / f"{name}.txt").write_text(TEXT)
    good = json.dumps({"id": "g", "claim": "The rate was 4.5 percent"})
    (root / "claims" / "good.jsonl").write_text(good + "\n")
    (root / "claims" / "broken.jsonl").write_text(good + '\n{"id": "y", "claim": \n')
    return root


def test_a_partially_failed_run_exits_3_and_says_so(tmp_path):
    corpus = partly_bad_corpus(tmp_path / "corpus")
    env = {**os.environ, "GROUNDSWELL_STORAGE_URL": str(tmp_path / "out")}
    env.pop("GROUNDSWELL_BROKER_URL", None)
    done = groundswell("run", str(corpus), "--embedded", "--json", env=env)
    assert json.loads(done.stdout)["state"] == "partially_failed", done.stderr
    assert done.returncode == 3, done.stderr
    assert "partially_failed: exit 3" in done.stderr


def test_run_help_lists_the_exit_codes():
    done = groundswell("run", "--help")
    text = " ".join(done.stdout.split())
    assert "0 succeeded, 1 failed or cancelled, 2 bad usage or input" in text
    assert "3 partially failed, 4 still going at --timeout" in text
