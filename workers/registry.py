"""Live workers announce their pool size and queues in Redis.

The parent process of each worker refreshes ``gs:worker:<node>`` (the number of pool
processes) and ``gs:consumes:<node>`` (the queues it consumes) with a short TTL, so a worker
that dies drops out within a TTL: the planning window (four batches per process) shrinks
with it, and a run with work on a queue no live worker consumes says so (its waiting_for).
It also refreshes ``gs:running:<node>``, the deliveries its pool executes, every third of a
lease: before a batch whose lease ran out is taken back, its holder is looked up there
(``shared.runs.liveness``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from celery import signals
from celery.worker import state as worker_state

log = logging.getLogger("groundswell.workers")

TTL_SECONDS = 30
_stop = threading.Event()


def _runs():
    from groundswell.shared.runs.state import RunStore, redis_client
    from groundswell.shared.settings import get_settings

    return RunStore(redis_client(get_settings().state_redis_url))


@signals.worker_ready.connect
def _announce(sender=None, **_: object) -> None:
    node = getattr(sender, "hostname", None) or "worker"
    controller = getattr(sender, "controller", None)
    # With --autoscale MAX,MIN the pool may grow to MAX processes.
    autoscale = getattr(controller, "autoscale", None)
    slots = int(autoscale[0] if autoscale else getattr(controller, "concurrency", 1) or 1)
    from groundswell.workers.app import consumed_queues

    queues = sorted(consumed_queues(getattr(sender, "app", None)))

    from groundswell.shared.settings import get_settings

    # As often as a lease is renewed: a delivery that ended drops out of the list that soon.
    every = min(TTL_SECONDS / 3, get_settings().lease_seconds / 3)

    def loop() -> None:
        announced = float("-inf")
        while not _stop.is_set():
            with contextlib.suppress(Exception):  # Redis down: the window falls back to its floor
                runs = _runs()
                # The pool's deliveries (this process tracks which child runs which message).
                running = [r.id for r in list(worker_state.active_requests)]
                runs.announce_running(node, running, every)
                if time.monotonic() - announced >= TTL_SECONDS / 3:
                    runs.register_worker(node, slots, TTL_SECONDS, queues)
                    announced = time.monotonic()
            _stop.wait(every)

    threading.Thread(target=loop, name="worker-registry", daemon=True).start()
    log.info("worker %s announced %d pool processes on %s", node, slots, ",".join(queues))


@signals.worker_shutdown.connect
def _withdraw(sender=None, **_: object) -> None:
    _stop.set()
    node = getattr(sender, "hostname", None)
    if node:
        with contextlib.suppress(Exception):
            _runs().unregister_worker(node)


@signals.worker_process_init.connect
def _freeze_imports(**_: object) -> None:
    # Everything imported so far lives as long as the process: keep it out of the garbage
    # collector's generations, so collections during a batch only scan what the batch made.
    import gc

    gc.freeze()
