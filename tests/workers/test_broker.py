"""The broker a worker consumes from: RabbitMQ's consumer_timeout against the hard limit."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from groundswell.shared.settings import Settings
from groundswell.workers import broker
from groundswell.workers.broker import check_broker
from groundswell.workers.embedded import service_env


def test_settings_refuse_a_declared_consumer_timeout_below_the_hard_limit():
    with pytest.raises(ValidationError, match="broker_consumer_timeout must exceed"):
        Settings(broker_url="amqp://guest:guest@rabbit:5672//", broker_consumer_timeout=500)
    Settings(broker_url="redis://x:6379/0", broker_consumer_timeout=500)  # not RabbitMQ: moot


def test_a_remote_server_is_judged_by_the_declared_timeout(monkeypatch):
    monkeypatch.setattr(broker.shutil, "which", lambda name: None)
    settings = Settings(broker_url="amqp://guest:guest@rabbit.example:5672//")
    assert check_broker(settings, prefetch=1) == ([], [])
    errors, warnings = check_broker(settings, prefetch=16)  # 16 x 600 s > 1800 s
    assert not errors and "reserves 16 messages" in warnings[0]
    assert check_broker(Settings(broker_url="redis://x:6379/0"), prefetch=16) == ([], [])


@pytest.mark.integration
def test_a_worker_will_not_consume_from_a_rabbitmq_that_would_take_its_tasks_back(
    rabbitmq_url,
):
    """The machine's RabbitMQ keeps the default consumer_timeout (1800 s): a worker whose
    tasks may run 2000 s refuses to start, naming both numbers and where they came from."""
    env = service_env(
        broker_url=rabbitmq_url,
        redis_url="redis://127.0.0.1:1/0",
        task_soft_time_limit=1900,
        task_time_limit=2000,
        visibility_timeout=2100,
        broker_consumer_timeout=3000,  # what the operator believed; the server says 1800
    )
    done = subprocess.run(
        [sys.executable, "-m", "groundswell", "worker", "--queues", "verify"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "consumer_timeout is 1800 s (rabbitmqctl)" in done.stderr
    assert "2000 s (GROUNDSWELL_TASK_TIME_LIMIT)" in done.stderr
