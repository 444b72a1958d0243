"""Checks of the broker a worker is about to consume from.

RabbitMQ closes a channel whose delivery stays unacknowledged longer than its
server-wide ``consumer_timeout`` (30 minutes by default since 3.8.15), and with
``acks_late`` a delivery is acknowledged only when its task ends: a task that may run up
to the hard time limit needs a longer timeout, or the broker takes it back mid-run and
delivers it again.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from urllib.parse import urlsplit

from groundswell.shared.settings import Settings

_LOCAL = {"127.0.0.1", "localhost", "::1", None, ""}


def rabbitmq_consumer_timeout(settings: Settings) -> tuple[float | None, str]:
    """The server's consumer_timeout in seconds (None: no timeout) and where it was read.

    ``rabbitmqctl`` answers for a server on this host; otherwise the value the operator
    declared (``GROUNDSWELL_BROKER_CONSUMER_TIMEOUT``) is all a worker can know.
    """
    ctl = shutil.which("rabbitmqctl")
    if ctl and urlsplit(settings.broker_url).hostname in _LOCAL:
        try:
            done = subprocess.run(
                [ctl, "eval", "application:get_env(rabbit, consumer_timeout)."],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and done.returncode == 0:
            found = re.search(r"\{ok,\s*(\d+|infinity)\}", done.stdout)
            if found is None:
                return 1800.0, "rabbitmqctl (not set: the server's default)"
            if found.group(1) == "infinity":
                return None, "rabbitmqctl"
            return int(found.group(1)) / 1000, "rabbitmqctl"
    return settings.broker_consumer_timeout, "GROUNDSWELL_BROKER_CONSUMER_TIMEOUT"


def check_broker(settings: Settings, prefetch: int) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the broker for a worker with this prefetch."""
    errors: list[str] = []
    warnings: list[str] = []
    if not settings.broker_is_amqp:
        return errors, warnings
    timeout, source = rabbitmq_consumer_timeout(settings)
    if timeout is None:
        return errors, warnings
    limit = settings.task_time_limit
    if timeout <= limit:
        errors.append(
            f"RabbitMQ's consumer_timeout is {timeout:.0f} s ({source}) but a task may run "
            f"{limit} s (GROUNDSWELL_TASK_TIME_LIMIT): the broker would take a running task "
            "back and deliver it again. Raise consumer_timeout in rabbitmq.conf above the "
            "hard limit, or lower the limit."
        )
    elif prefetch > 1 and timeout <= prefetch * limit:
        warnings.append(
            f"this worker reserves {prefetch} messages and RabbitMQ's consumer_timeout is "
            f"{timeout:.0f} s ({source}): a reserved message waiting behind {prefetch - 1} "
            f"long tasks ({limit} s each at most) could time out; fine while tasks are short"
        )
    return errors, warnings
