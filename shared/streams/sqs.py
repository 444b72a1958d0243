"""S3 event notifications from an SQS queue (boto3), as ``groundswell follow`` reads them.

A message is deleted only once its records are applied (the stream's state is written
first), so a consumer that dies redelivers it, and the repeat is a no-op. A message whose
records cannot be read is deleted too: reading it again would fail again (its errors are
logged and counted, and shown by the command).
"""

from __future__ import annotations

import time
from typing import Any

import boto3

from groundswell.shared.settings import Settings
from groundswell.shared.streams.models import StreamRecord
from groundswell.shared.streams.service import Ingested, StreamService


def sqs_client(settings: Settings) -> Any:
    secret = settings.s3_secret_access_key
    return boto3.session.Session().client(
        "sqs",
        endpoint_url=settings.sqs_endpoint_url,
        region_name=settings.s3_region,
        aws_access_key_id=settings.s3_access_key_id,
        aws_secret_access_key=secret.get_secret_value() if secret else None,
    )


# How long a busy follow loop pauses when the queue had nothing (SQS waits in whole seconds).
BUSY_PAUSE = 0.1


def busy(status: dict[str, Any]) -> bool:
    """A stream's status (``StreamService.status``) with documents on their way to a window
    or a window running: its follow loop ticks often."""
    return bool(status.get("run_id") or status.get("pending") or status.get("ready"))


class SqsSource:
    def __init__(self, client: Any, queue_url: str, wait_seconds: int = 1) -> None:
        self.client, self.queue_url, self.wait_seconds = client, queue_url, wait_seconds

    def poll(self, streams: StreamService, record: StreamRecord, busy: bool = False) -> Ingested:
        """Take up to 10 messages (waiting up to ``wait_seconds`` for one), apply them to
        the stream, delete them. ``busy`` (a window open or running, see
        :func:`busy`): no long poll, so the loop's next tick closes a window when it is due
        and sees its run finish within ``BUSY_PAUSE``, not a whole wait later."""
        answer = self.client.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0 if busy else self.wait_seconds,
        )
        if busy and not answer.get("Messages"):
            time.sleep(BUSY_PAUSE)
        out = Ingested()
        done = []
        try:
            for message in answer.get("Messages", []):
                name = f"sqs:{message['MessageId']}"
                out.add(streams.ingest(message["Body"], name, only=record))
                done.append({"Id": str(len(done)), "ReceiptHandle": message["ReceiptHandle"]})
        finally:  # what was applied goes; the rest comes back after its visibility timeout
            if done:
                self.client.delete_message_batch(QueueUrl=self.queue_url, Entries=done)
        return out
