"""How `run` ends for a user and for CI: its exit code follows the run's state, and Ctrl-C
says what becomes of the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from groundswell.workers.embedded import service_env
from tests.conftest import Pipeline, wait_until
from tests.integration.test_waiting_for_a_queue import pdf_corpus
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


def descendants(pid: int) -> set[int]:
    """The processes ``pid`` started, and theirs (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def interrupt_when(proc: subprocess.Popen, lines: list[str], seen: str) -> tuple[str, set[int]]:
    """Send SIGINT, as a terminal's Ctrl-C does, once stderr shows ``seen``; the run id and
    the processes the command had started."""
    wait_until(lambda: any(seen in line for line in lines) or proc.poll() is not None, timeout=120)
    assert proc.poll() is None, "".join(lines)
    run_id = next(line for line in lines if line.startswith("run ")).split()[1].rstrip(":")
    started = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130, "".join(lines)
    return run_id, started


def popen_groundswell(*args: str, env: dict[str, str]) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundswell", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    return proc, lines


def test_ctrl_c_on_a_private_stack_stops_it_and_says_what_becomes_of_the_run(tmp_path):
    corpus = tmp_path / "corpus"
    for sub in ("documents", "claims"):
        (corpus / sub).mkdir(parents=True)
    for i in range(600):  # one unit a batch: long enough to be interrupted while it runs
        (corpus / "documents" / f"d{i}.txt").write_text(TEXT)
        (corpus / "claims" / f"d{i}.jsonl").write_text('{"id": "g", "claim": "The rate"}\n')
    env = {**os.environ, "GROUNDSWELL_STORAGE_URL": str(tmp_path / "out")}
    env["GROUNDSWELL_BATCH_MAX_UNITS"] = "1"
    env.pop("GROUNDSWELL_BROKER_URL", None)
    proc, lines = popen_groundswell("run", str(corpus), "--embedded", env=env)
    run_id, started = interrupt_when(proc, lines, "run ")
    text = "".join(lines)
    assert "Aborted!" not in text and "Traceback" not in text, text
    assert f"interrupted: run {run_id} is left" in text
    assert "the private stack (workers and Redis) is stopped" in text
    assert "Run the corpus again to finish the work" in text
    assert "waiting for a worker" not in text  # the private workers announced first
    assert f"`groundswell cancel {run_id}`" in text
    # Pool processes exit just after their worker: give them a moment, not a leak.
    assert started
    wait_until(lambda: not [pid for pid in started if alive(pid)], what="the stack stopped")
    record = json.loads((tmp_path / "out" / "runs" / run_id / "run.json").read_text())
    assert record["state"] not in ("succeeded", "partially_failed", "failed", "cancelled")

    # Ctrl-C while `summary --wait` waits for the left run: one line, the run untouched.
    waiting, said = popen_groundswell("summary", run_id, "--wait", env=env)
    wait_until(lambda: any("Ctrl-C stops waiting" in x for x in said) or waiting.poll() is not None)
    os.killpg(waiting.pid, signal.SIGINT)
    assert waiting.wait(timeout=60) == 130, "".join(said)
    text = "".join(said)
    assert "Aborted!" not in text and "Traceback" not in text, text
    assert f"interrupted: stopped waiting for run {run_id}; the run itself goes on" in text

    cancelled = groundswell("cancel", run_id, env=env)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.split() == [run_id, "cancelled"]
    record_path = tmp_path / "out" / "runs" / run_id / "run.json"
    assert json.loads(record_path.read_text())["state"] == "cancelled"

    # A record that cannot be read: one line naming the run, no traceback.
    record_path.write_text('{"id": ')
    unreadable = groundswell("status", run_id, env=env)
    assert unreadable.returncode == 1, unreadable.stderr
    assert "Traceback" not in unreadable.stderr, unreadable.stderr
    last = unreadable.stderr.strip().splitlines()[-1]
    assert last.startswith(f"groundswell: run {run_id}'s record cannot be read: "), last


def test_ctrl_c_on_shared_workers_says_the_run_goes_on(service_settings, shared_raw, tmp_path):
    corpus = pdf_corpus(tmp_path / "corpus", shared_raw)
    pipeline = Pipeline(service_settings, tmp_path)
    try:
        pipeline.start_worker("checker", queues="verify,admit,control")  # no read: it waits
        redis = pipeline.service.runs.r
        wait_until(lambda: list(redis.scan_iter("gs:consumes:checker@*")), what="the worker up")
        env = service_env(**service_settings)
        proc, lines = popen_groundswell("run", str(corpus), "--wait", env=env)
        run_id, _ = interrupt_when(proc, lines, "waiting for a worker on queue 'read'")
        text = "".join(lines)
        assert "Aborted!" not in text and "Traceback" not in text, text
        assert f"interrupted: run {run_id} stays running and goes on in the workers" in text
        assert f"`groundswell status {run_id}`" in text
        assert not pipeline.service.get(run_id).terminal

        cancelled = groundswell("cancel", run_id, env=env)
        assert cancelled.stdout.split() == [run_id, "cancelled"], cancelled.stderr
        assert pipeline.service.get(run_id).state == "cancelled"
    finally:
        pipeline.stop()
