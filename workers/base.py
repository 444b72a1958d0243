"""The one task base class: retries, timing, metrics and the service live here, not in tasks."""

from __future__ import annotations

import os
import time

import botocore.exceptions
import redis.exceptions
from celery import Task
from celery.exceptions import Retry, SoftTimeLimitExceeded

from groundswell.shared import metrics, tracing
from groundswell.shared.later import Later
from groundswell.shared.runs.service import RunService
from groundswell.shared.runs.state import RunStore, redis_client
from groundswell.shared.settings import get_settings
from groundswell.shared.storage import StorageError

TRANSIENT = (
    StorageError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    botocore.exceptions.EndpointConnectionError,
    botocore.exceptions.ConnectTimeoutError,
    botocore.exceptions.ConnectionClosedError,
    botocore.exceptions.ReadTimeoutError,
    botocore.exceptions.ResponseStreamingError,
    botocore.exceptions.IncompleteReadError,
)
# The claims ledger's database away or busy is retried too: the ledger kind raises it as a
# StorageError (units/ledger.py), so no worker imports the database drivers to catch it.

_services: dict[int, RunService] = {}


def reset_peak_rss() -> None:
    """Start a new high-water mark of resident memory (Linux: write 5 to clear_refs), so
    that the peak read after a task is that task's, not the process's whole life's."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass  # not Linux, or not allowed: the peak is then the process's own


def peak_rss_bytes() -> int:
    """This process's peak resident memory (Linux VmHWM); 0 where /proc has no such line."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class GroundswellTask(Task):
    abstract = True
    acks_late = True
    reject_on_worker_lost = True
    ignore_result = True
    autoretry_for = TRANSIENT
    retry_backoff = True
    retry_backoff_max = 60  # far below the visibility timeout (celery-notes 1.7)
    retry_jitter = True
    max_retries = 5

    @property
    def service(self) -> RunService:
        """One service per process, made after fork (Redis and S3 clients are per process)."""
        svc = _services.get(os.getpid())
        if svc is None:
            from groundswell.workers.app import enqueue_with

            settings = get_settings()
            svc = RunService(
                settings, RunStore(redis_client(settings.state_redis_url)), enqueue_with(self.app)
            )
            _services[os.getpid()] = svc
        return svc

    def __call__(self, *args, **kwargs):
        task = self.name.rsplit(".", 1)[-1]
        info = self.request.delivery_info or {}
        queue = info.get("routing_key") or "direct"
        if info.get("redelivered"):
            metrics.TASK_REDELIVERIES.labels(task, queue).inc()
        in_progress = metrics.TASKS_IN_PROGRESS.labels(task, queue)
        in_progress.inc()
        reset_peak_rss()
        if args and isinstance(args[0], str):
            tracing.annotate(task=task, run_id=args[0])
        start = time.perf_counter()
        status = "failed"
        try:
            try:
                result = super().__call__(*args, **kwargs)
            except Later as later:  # the core asks for another go (a webhook's backoff)
                raise self.retry(countdown=later.countdown, max_retries=None) from None
            status = "succeeded"
            metrics.TASK_LAST_SUCCESS.labels(task).set(time.time())
            return result
        except Retry:
            status = "retried"
            raise
        finally:
            metrics.TASK_DURATION.labels(task, queue).observe(time.perf_counter() - start)
            rss = peak_rss_bytes()
            if rss:
                metrics.TASK_PEAK_RSS.labels(task).set(rss)
            metrics.TASKS.labels(task, queue, status).inc()
            in_progress.dec()


class BatchTask(GroundswellTask):
    """A verify or admit batch: ``(run_id, batch)``. A delivery that ends without recording
    gives its lease back: a retry (a transient error) does not count as a death toward the
    redelivery cap; a failure does, and says why."""

    abstract = True

    @property
    def token(self) -> str:
        """Which delivery holds a batch's lease: the message (a retry keeps its id)."""
        return self.request.id or "local"

    def execute(self, run_id: str, batch: str) -> str:
        # The worker's node name: its parent process lists the deliveries it runs.
        return self.service.execute(run_id, batch, self.token, self.request.hostname or "")

    def _give_back(self, args, why: str, retry: bool) -> None:
        try:
            run_id, batch = args[0], args[1]
            self.service.release(run_id, batch, self.token, why, retry=retry)
        except Exception:  # Redis down too: the lease expires and reconcile resends it
            pass

    def on_retry(self, exc, task_id, args, kwargs, einfo) -> None:
        self._give_back(args, "", retry=True)

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        if isinstance(exc, SoftTimeLimitExceeded):
            limit = self.soft_time_limit or self.app.conf.task_soft_time_limit
            why = f"the task ran past its time limit ({limit} s)"
        else:
            why = f"{type(exc).__name__}: {exc}"
        self._give_back(args, why, retry=False)
