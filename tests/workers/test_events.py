"""Task events for Flower and celery-exporter, and Celery's usual worker options.

A real ``groundswell worker`` started with ``-n``, ``-l``, ``-P``, ``--autoscale`` and
``--max-tasks-per-child`` answers ``inspect`` under that node name with that pool, and the
tasks it runs arrive as events at a receiver like the ones those tools run.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.cli.runs import _autoscale, worker_argv
from groundswell.workers.app import TASK_NAMES
from groundswell.workers.embedded import service_env, stop_process
from tests.conftest import wait_until


class Events:
    """A receiver of the broker's event stream in a thread (what Flower does)."""

    def __init__(self, app) -> None:
        self.app = app
        self.seen: list[dict] = []
        self.receiver = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.app.connection_for_read() as connection:
            self.receiver = self.app.events.Receiver(connection, handlers={"*": self.seen.append})
            self.receiver.capture(limit=None, timeout=None, wakeup=False)

    def __enter__(self) -> Events:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.receiver is not None:
            self.receiver.should_stop = True
        self.thread.join(5)

    def of(self, kind: str, hostname: str | None = None) -> list[dict]:
        return [
            e
            for e in list(self.seen)
            if e.get("type") == kind and hostname in (None, e.get("hostname"))
        ]


@pytest.mark.integration
def test_a_worker_takes_celerys_options_and_sends_task_events(pipeline, tmp_path):
    node = f"probe-{tmp_path.name[-6:]}@%h"
    expected = node.replace("%h", socket.gethostname())
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groundswell",
            "worker",
            "-Q",
            "verify,admit,control",
            "-n",
            node,
            "-l",
            "warning",
            "-P",
            "prefork",
            "--autoscale",
            "2,1",
            "--max-tasks-per-child",
            "7",
        ],
        env=service_env(**pipeline.values),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        inspect = pipeline.app.control.inspect(timeout=1)
        stats = wait_until(lambda: inspect.stats(), what=f"{expected} to answer inspect")
        assert set(stats) == {expected}
        pool = stats[expected]["pool"]
        assert pool["max-tasks-per-child"] == 7
        assert pool["implementation"].endswith("prefork:TaskPool")
        assert stats[expected]["autoscaler"]["max"] == 2
        assert stats[expected]["autoscaler"]["min"] == 1
        # It announces what its pool may grow to: the planning window follows.
        redis = pipeline.service.runs.r
        wait_until(lambda: redis.get(f"gs:worker:{expected}") == "2", what="2 slots announced")

        with Events(pipeline.app) as events:
            # The worker's heartbeats say the receiver listens and the worker sends events.
            wait_until(lambda: events.of("worker-heartbeat", expected), what="a heartbeat")
            pipeline.app.send_task(TASK_NAMES["reconcile"], queue="control")
            done = wait_until(lambda: events.of("task-succeeded", expected), what="task-succeeded")
            uuid = done[0]["uuid"]
            sent = events.of("task-sent")
            assert any(e["uuid"] == uuid and e["queue"] == "control" for e in sent)
            assert {e["uuid"] for e in events.of("task-started", expected)} >= {uuid}
    finally:
        stop_process(proc)
        log.close()
    text = (tmp_path / "worker.log").read_text()
    assert " INFO/" not in text  # -l warning


def test_the_worker_passes_celerys_options_on():
    argv = worker_argv(
        ["admit"],
        "admit-1@%h",
        16,
        "debug",
        pool="threads",
        concurrency=8,
        max_tasks_per_child=100,
        max_memory_per_child=500_000,
    )
    pairs = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert argv[0] == "worker"
    assert pairs["-Q"] == "admit" and pairs["-n"] == "admit-1@%h"
    assert pairs["--pool"] == "threads" and pairs["--concurrency"] == "8"
    assert pairs["--loglevel"] == "DEBUG" and pairs["--prefetch-multiplier"] == "16"
    assert pairs["--max-memory-per-child"] == "500000"
    assert "--autoscale" not in argv


def test_autoscale_reads_max_and_min():
    assert _autoscale(None, None, "8,2") == "8,2"
    assert _autoscale(None, None, "4") == "4,0"  # as Celery reads it: MIN 0
    assert _autoscale(None, None, None) is None


@pytest.mark.parametrize(
    "args, words",
    [
        (["--autoscale", "1,4"], "MAX,MIN"),
        (["--autoscale", "x,1"], "MAX,MIN"),
        (["-P", "gevent"], "'gevent' is not one of"),
        (["-P", "solo", "--autoscale", "4,1"], "needs the prefork pool"),
        (["-l", "loud"], "'loud' is not one of"),
        (["--max-tasks-per-child", "0"], "x>=1"),
    ],
)
def test_bad_worker_options_are_refused_saying_why(args, words, monkeypatch):
    monkeypatch.setenv("GROUNDSWELL_BROKER_URL", "redis://127.0.0.1:1/0")
    result = CliRunner().invoke(main, ["worker", "-Q", "verify", *args])
    assert result.exit_code == 2, result.output
    assert words in result.output
