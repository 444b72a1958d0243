"""The Celery app: JSON only, late acks with requeue on a lost worker, no results.

Every choice here has its evidence in reference/celery-notes.md: acks_late with
reject_on_worker_lost (and a redelivery cap in the task base class), prefetch 1 on the
verification queue, a visibility timeout above the hard time limit in every place kombu
reads it, no result backend (results are receipts in object storage).
"""

from __future__ import annotations

import contextlib

from celery import Celery

from groundswell.shared.runs import kinds
from groundswell.shared.runs.service import (
    DELIVER,
    EXPORT,
    FINALIZE,
    HOOKS,
    LINEAGE,
    PLAN,
    READ_PAGES,
    RECONCILE,
    SCHEDULE,
    STREAMS,
    queue_of,
)
from groundswell.shared.runs.service import queues as all_queues
from groundswell.shared.settings import Settings, get_settings

# The run's own steps; each unit kind's task is groundswell.<kind> (task_names()).
STEP_TASKS = {
    PLAN: "groundswell.plan",
    FINALIZE: "groundswell.finalize",
    RECONCILE: "groundswell.reconcile",
    SCHEDULE: "groundswell.scheduled_run",
    EXPORT: "groundswell.export",
    HOOKS: "groundswell.hooks",
    DELIVER: "groundswell.deliver",
    LINEAGE: "groundswell.lineage",
    STREAMS: "groundswell.streams",
    READ_PAGES: "groundswell.read_pages",  # a read unit's helper, on the read queue
}


def task_names() -> dict[str, str]:
    """Every task by what the core enqueues: the run's steps and each unit kind."""
    plan, *steps = STEP_TASKS.items()
    return dict([plan, *((k.name, k.task) for k in kinds.all_kinds()), *steps])


def make_app(settings: Settings | None = None) -> Celery:
    s = settings or get_settings()
    kinds.load(s.kinds_extra)  # before the routes and the tasks, which name every kind
    app = Celery(
        "groundswell",
        broker=s.broker_url,
        include=[
            "groundswell.workers.tasks",
            "groundswell.workers.metrics_server",
            "groundswell.workers.registry",
            "groundswell.workers.tracing",
        ],
    )
    if s.broker_is_amqp:
        # RabbitMQ acknowledges for real: a dead consumer's messages come back at once, so no
        # visibility timeout; publisher confirms make a send fail loudly instead of silently.
        transport: dict[str, object] = {"confirm_publish": True}
    else:
        transport = {
            "visibility_timeout": s.visibility_timeout,
            # Restore unacked messages of dead workers promptly (kombu's default sweep is ~100 s).
            "unacked_restore_interval": 10,
            "unacked_restore_throttle": 1,
        }
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        event_serializer="json",
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        task_soft_time_limit=s.task_soft_time_limit,
        task_time_limit=s.task_time_limit,
        worker_prefetch_multiplier=1,
        # Task events, as Flower and celery-exporter read them: sent, received, started,
        # succeeded, failed, retried (and worker heartbeats). JSON, no arguments beyond ids.
        worker_send_task_events=True,
        task_send_sent_event=True,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        worker_hijack_root_logger=False,
        broker_transport_options=transport,
        result_backend_transport_options={"visibility_timeout": s.visibility_timeout},
        visibility_timeout=s.visibility_timeout,
        broker_connection_retry_on_startup=True,
        task_default_queue="control",
        task_routes={name: {"queue": queue_of(kind)} for kind, name in task_names().items()},
        task_create_missing_queues=True,
        # Beat: a Redis-backed schedule (entries can change at run time) with a lock; an
        # entry it cannot read is skipped, not fatal to every tick.
        beat_scheduler="groundswell.workers.schedules:BeatScheduler",
        redbeat_redis_url=s.redis_url or (None if s.broker_is_amqp else s.broker_url),
        redbeat_redis_options={"retry_period": 30, "socket_timeout": 10},
        redbeat_key_prefix="gs:redbeat:",
        result_expires=None,  # no result backend, so no backend_cleanup entry in beat
        redbeat_lock_timeout=max(30, int(s.reconcile_interval * 3)),
        beat_max_loop_interval=5,
        beat_schedule={
            "reconcile": {
                "task": STEP_TASKS[RECONCILE],
                "schedule": s.reconcile_interval,
                "options": {"queue": "control", "expires": s.reconcile_interval},
            },
            # Followed corpora: windows closed and finished, reconciliation when due.
            "streams": {
                "task": STEP_TASKS[STREAMS],
                "schedule": s.stream_tick_seconds,
                "options": {"queue": "control", "expires": s.stream_tick_seconds},
            },
        },
    )
    return app


def consumed_queues(app: object) -> set[str]:
    """The queues a worker of ``app`` consumes (its -Q; every queue when it names none)."""
    queues = getattr(getattr(app, "amqp", None), "queues", None)
    return set(getattr(queues, "consume_from", None) or all_queues())


def queue_depths(app: Celery) -> dict[str, int]:
    """Messages waiting in each queue, on any broker (a passive declare; 0 for a queue that
    does not exist yet)."""
    depths: dict[str, int] = {}
    with app.connection_for_read() as connection:
        for queue in all_queues():
            channel = connection.channel()
            try:
                depths[queue] = int(channel.queue_declare(queue, passive=True).message_count)
            except Exception:  # NOT_FOUND closes an AMQP channel; Redis raises it too
                depths[queue] = 0
            finally:
                with contextlib.suppress(Exception):
                    channel.close()
    return depths


def purge_queues(app: Celery) -> None:
    """Drop every waiting message of the groundswell queues (tests, and a broker reset)."""
    with app.connection_for_write() as connection:
        for queue in all_queues():
            channel = connection.channel()
            try:
                channel.queue_purge(queue)
            except Exception:
                pass
            finally:
                with contextlib.suppress(Exception):
                    channel.close()


def enqueue_with(app: Celery):
    """The ``enqueue(kind, args)`` callback the core uses: send a task by name."""

    def enqueue(kind: str, args: list) -> None:
        app.send_task(task_names()[kind], args=args, queue=queue_of(kind))

    return enqueue


app = make_app()
# Every task and every queue, the registry's kinds included (loaded by make_app above).
TASK_NAMES = task_names()
QUEUE_OF = {task: queue_of(task) for task in TASK_NAMES}
QUEUES = all_queues()
