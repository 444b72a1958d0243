"""Worker metrics under prefork: prometheus_client multiprocess mode, served by the parent.

Each pool child writes its own files under ``PROMETHEUS_MULTIPROC_DIR``; the parent serves
their sum on ``--metrics-port``. Children come and go (recycling, crashes), and the files of
dead children would pile up forever (client_python#236), so before each scrape the parent
folds a dead child's counters, histograms and high-water marks into one archive file per
type and removes its files; counters never go backwards.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from celery import signals

log = logging.getLogger("groundswell.metrics")

_FILE = re.compile(r"^(?P<type>counter|histogram|gauge_[a-z]+|summary)_(?P<pid>\d+)\.db$")
_lock = threading.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def compact_dead(directory: str) -> int:
    """Fold the files of dead processes into ``<type>_archive.db``; return files removed."""
    from prometheus_client import multiprocess
    from prometheus_client.mmap_dict import MmapedDict

    removed = 0
    dead: set[int] = set()
    for path in glob.glob(os.path.join(directory, "*.db")):
        match = _FILE.match(os.path.basename(path))
        if not match:
            continue
        pid = int(match.group("pid"))
        if pid == os.getpid() or _alive(pid):
            continue
        dead.add(pid)
        kind = match.group("type")
        if kind in ("counter", "histogram", "summary", "gauge_max"):
            # Counts add up; a high-water mark keeps the highest.
            fold = max if kind == "gauge_max" else (lambda old, value: old + value)
            source = MmapedDict(path, read_mode=True)
            archive = MmapedDict(os.path.join(directory, f"{kind}_archive.db"))
            try:
                for key, value, timestamp in source.read_all_values():
                    old, _ = archive.read_value(key)
                    archive.write_value(key, fold(old, value), timestamp)
            finally:
                archive.close()
                source.close()
            os.unlink(path)
            removed += 1
    for pid in dead:
        # Live gauges of a dead process must disappear (mark_process_dead removes them).
        multiprocess.mark_process_dead(pid, directory)
    return removed


def render(directory: str) -> bytes:
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess

    with _lock:
        compact_dead(directory)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
        return generate_latest(registry)


class _Handler(BaseHTTPRequestHandler):
    directory = ""

    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        body = render(self.directory)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def serve(port: int, directory: str, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"directory": directory})
    server = ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def served_tasks(queues: set[str]) -> list[tuple[str, str]]:
    """The ``(task, queue)`` label pairs of the tasks a worker consuming ``queues`` runs."""
    from groundswell.workers.app import QUEUE_OF, TASK_NAMES

    return [
        (TASK_NAMES[kind].rsplit(".", 1)[-1], queue)
        for kind, queue in QUEUE_OF.items()
        if queue in queues
    ]


@signals.worker_init.connect
def _start_metrics_server(sender=None, **_: object) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    port = int(os.environ.get("GROUNDSWELL_WORKER_METRICS_PORT") or 0)
    if directory and port:
        from groundswell.shared import metrics
        from groundswell.workers.app import consumed_queues

        # The series of rare events exist at zero from the start (the parent's own file).
        metrics.initialize(served_tasks(consumed_queues(getattr(sender, "app", None))))
        serve(port, directory)
        log.info("worker metrics on :%d/metrics", port)


@signals.worker_process_shutdown.connect
def _child_exit(pid: int | None = None, **_: object) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        from prometheus_client import multiprocess

        with contextlib.suppress(OSError):
            multiprocess.mark_process_dead(pid or os.getpid(), directory)
