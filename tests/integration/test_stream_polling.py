"""A follow loop with a window open or running polls SQS without waiting (moto's SQS)."""

from __future__ import annotations

import os
import time

import pytest

from groundswell.shared.streams.sqs import BUSY_PAUSE, SqsSource, busy
from tests.conftest import s3_client

pytestmark = pytest.mark.integration


def test_busy_status_means_a_window_on_its_way():
    idle = {"pending": 0, "ready": 0, "inflight": 0, "run_id": None}
    assert not busy(idle)
    assert busy({**idle, "pending": 1})  # documents waiting for their inputs
    assert busy({**idle, "ready": 2})  # a window about to close
    assert busy({**idle, "run_id": "r1"})  # a window running: its end is seen soon


def test_a_busy_poll_of_an_empty_queue_returns_at_once(s3_endpoint):
    sqs = s3_client(s3_endpoint, "sqs")
    queue = sqs.create_queue(QueueName=f"q-{os.urandom(4).hex()}")["QueueUrl"]
    source = SqsSource(sqs, queue, wait_seconds=1)

    def timed(is_busy: bool) -> float:
        start = time.monotonic()
        got = source.poll(None, None, busy=is_busy)  # type: ignore[arg-type]  # no message
        assert got.applied == 0
        return time.monotonic() - start

    assert timed(False) >= 0.9  # SQS's long poll: the whole wait
    assert BUSY_PAUSE <= timed(True) < 0.6
