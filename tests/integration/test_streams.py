"""A followed corpus: documents land over time on moto's S3 server, their notifications (the
AWS event JSON) are taken in any order, and each window is a run whose summary and Merkle root
equal an in-process run over the corpus as it then is. Real Redis, real workers."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.streams.models import StreamSpec
from groundswell.shared.streams.service import StreamService
from tests.conftest import Pipeline, s3_client
from tests.integration import test_listed_reuse

pytestmark = pytest.mark.integration

folder = test_listed_reuse.corpus_dir  # 12 documents of the shared corpus, in a folder
FILES = ("documents/{}.txt", "claims/{}.jsonl", "candidates/{}.json", "labels/{}.json")
GRACE = 5.0


class Bucket:
    """The corpus bucket and the notifications its writes would send (sent when asked)."""

    def __init__(self, endpoint: str, folder: Path) -> None:
        self.client = s3_client(endpoint)
        self.name = f"stream-{uuid.uuid4().hex[:8]}"
        self.client.create_bucket(Bucket=self.name)
        self.folder = folder
        self.prefix = "corpus/"
        # Sequencers as S3 makes them: hex, growing, of varying length (compare padded).
        self.sequence = itertools.count(7)

    def record(self, action: str, key: str, etag: str | None = None, size: int | None = None):
        sequencer = f"{next(self.sequence) * 3:X}"
        obj: dict[str, Any] = {"key": quote_plus(self.prefix + key), "sequencer": sequencer}
        if action == "put":
            obj |= {"eTag": etag, "size": size}
        return {
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "eventTime": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "eventName": "ObjectCreated:Put" if action == "put" else "ObjectRemoved:Delete",
            "s3": {"bucket": {"name": self.name}, "object": obj},
        }

    def put(self, key: str, body: bytes | None = None) -> dict[str, Any]:
        body = (self.folder / key).read_bytes() if body is None else body
        answer = self.client.put_object(Bucket=self.name, Key=self.prefix + key, Body=body)
        return self.record("put", key, answer["ETag"].strip('"'), len(body))

    def delete(self, key: str) -> dict[str, Any]:
        self.client.delete_object(Bucket=self.name, Key=self.prefix + key)
        return self.record("delete", key)


def notification(*records: dict[str, Any]) -> bytes:
    return json.dumps({"Records": list(records)}).encode()


def stream_pipeline(
    service_settings: dict, s3_endpoint: str, tmp_path: Path, **extra: object
) -> Iterator[Pipeline]:
    """A worker over the test's Redis, receipts in a fresh bucket, windows of 1 s."""
    out = f"out-{uuid.uuid4().hex[:8]}"
    s3_client(s3_endpoint).create_bucket(Bucket=out)
    values = {
        **service_settings,
        "storage_url": f"s3://{out}/out",
        "stream_window_seconds": 1,
        **extra,
    }
    pipe = Pipeline(values, tmp_path)
    pipe.start_worker("w1")
    yield pipe
    pipe.stop()


@pytest.fixture
def pipe(service_settings, s3_endpoint, tmp_path) -> Iterator[Pipeline]:
    yield from stream_pipeline(
        service_settings,
        s3_endpoint,
        tmp_path,
        stream_window_documents=50,
        stream_grace_seconds=GRACE,
    )


def ids(folder: Path) -> list[str]:
    return sorted(p.stem for p in (folder / "documents").glob("*.txt"))


def run_window(pipe: Pipeline, streams: StreamService, sid: str, now: float) -> dict[str, Any]:
    """Close the window that is ready at ``now``, run it on the workers, finish it."""
    streams.tick(sid, now)  # ready now; the window is 1 s long
    status = streams.tick(sid, now + 1.5)
    assert status["run_id"], status
    pipe.wait(status["run_id"])
    after = streams.tick(sid, now + 1.5)
    assert after["run_id"] is None and after["inflight"] == 0, after
    return pipe.service.summary(status["run_id"])


def equal_to_in_process(summary: dict, corpus: str, pipe: Pipeline, tmp_path: Path) -> None:
    full = run_in_process(corpus, "default@1", str(tmp_path / uuid.uuid4().hex), pipe.settings)
    assert summary["counts"] == full["counts"]
    assert summary["documents"] == full["documents"]
    assert summary["index"]["units"] == full["index"]["units"]
    assert summary["index"]["merkle_root"] == full["index"]["merkle_root"]


def test_documents_landing_over_time_make_windows_equal_to_in_process_runs(
    pipe, folder, s3_endpoint, tmp_path
):
    bucket = Bucket(s3_endpoint, folder)
    docs = ids(folder)
    early, late = docs[:6], docs[6:]
    staged = tmp_path / "staged"
    folder.rename(staged)  # the corpus lands from here
    bucket.folder = staged
    bucket.put("schema.json")
    for doc_id in early:
        for pattern in FILES:
            bucket.put(pattern.format(doc_id))
    corpus = f"s3://{bucket.name}/corpus"
    streams = StreamService(pipe.service)
    stream, created = streams.follow(StreamSpec(corpus=corpus, policy="default"))
    assert created and stream.policy == "default@1"
    assert streams.follow(StreamSpec(corpus=corpus, policy="default@1")) == (stream, False)
    sid = stream.id

    # Window 0. A document before its claims and candidates: it waits for them.
    a = late[0]
    doc_event = bucket.put(f"documents/{a}.txt")
    assert streams.ingest(notification(doc_event), "sqs:1").applied == 1
    status = streams.tick(sid)
    assert status["pending"] == 1 and status["run_id"] is None
    rest = [bucket.put(p.format(a)) for p in FILES[1:]]
    streams.ingest(notification(*rest), "sqs:2")
    first = run_window(pipe, streams, sid, time.time() + 2)
    equal_to_in_process(first, corpus, pipe, tmp_path)
    (window,) = streams.windows(sid)
    assert window.number == 0 and not window.changed and window.incomplete == []
    assert window.merkle_root == first["index"]["merkle_root"]
    assert window.state == "succeeded"

    # Window 1: claims and candidates before their document; an overwrite of claims; a
    # deleted document; duplicated and reordered notifications.
    b, c, d, e = late[1], early[0], early[1], early[2]
    before = [bucket.put(p.format(b)) for p in FILES[1:]]
    streams.ingest(notification(*reversed(before)), "sqs:3")
    assert streams.tick(sid)["ready"] == 0  # its document is not there yet
    shorter = b"".join((staged / f"claims/{c}.jsonl").read_bytes().splitlines(True)[:-1])
    overwrite_1 = bucket.put(f"claims/{c}.jsonl", shorter + b"\n")
    overwrite_2 = bucket.put(f"claims/{c}.jsonl", shorter)
    removed = [bucket.delete(p.format(d)) for p in FILES]
    # e's candidates are deleted; the create before it arrives late.
    created_e = bucket.record("put", f"candidates/{e}.json", "0" * 32, 10)
    deleted_e = bucket.delete(f"candidates/{e}.json")
    doc_b = bucket.put(f"documents/{b}.txt")
    got = streams.ingest(
        notification(overwrite_2, doc_b, *removed, deleted_e, overwrite_2), "sqs:4"
    )
    assert (got.applied, got.stale) == (1 + 1 + 4 + 1, 1)
    late_ones = streams.ingest(notification(overwrite_1, created_e, doc_b), "sqs:5")
    assert (late_ones.applied, late_ones.stale) == (0, 3)  # older or repeated: no-ops
    assert streams.store.key_state(sid, f"candidates/{e}.json")["present"] is False
    second = run_window(pipe, streams, sid, time.time() + 2)
    equal_to_in_process(second, corpus, pipe, tmp_path)
    window = streams.windows(sid)[1]
    assert window.changed and window.documents == 4 and window.incomplete == []
    assert second["documents"] == first["documents"]  # one landed, one deleted
    assert second["units"]["verify"]["computed"] == 2  # b's, c's; the rest reused unread

    # A repeat of an applied notification after its window changes nothing.
    assert streams.ingest(notification(doc_b, *removed), "sqs:6").applied == 0
    assert streams.tick(sid)["pending"] == 0

    # A lost notification: found by reconciliation (listing only), then checked.
    f = early[3]
    bucket.put(f"claims/{f}.jsonl", shorter)  # its notification never arrives
    found = streams.reconcile(sid)
    assert found.applied == 1, found
    assert streams.reconcile(sid).applied == 0  # found once
    # A document whose candidates never come: checked after the grace period, saying so.
    g = late[2]
    streams.ingest(
        notification(bucket.put(f"documents/{g}.txt"), bucket.put(f"claims/{g}.jsonl")), "sqs:7"
    )
    assert streams.tick(sid)["ready"] == 1  # f's; g waits for its candidates
    third = run_window(pipe, streams, sid, time.time() + GRACE + 1)
    equal_to_in_process(third, corpus, pipe, tmp_path)
    window = streams.windows(sid)[2]
    assert window.documents == 2
    assert window.incomplete == [
        {"doc_id": g, "missing": [f"candidates/{g}.json"], "waited": window.incomplete[0]["waited"]}
    ]
    assert window.incomplete[0]["waited"] >= GRACE
    assert streams.status(sid)["lag_seconds"] == 0.0

    # Redis loses what was in flight after an event was applied: reconciliation finds the
    # document again (the listing differs from the latest run; the key's state alone, which
    # says the event was applied, does not hide it).
    h = early[4]
    streams.ingest(notification(bucket.put(f"claims/{h}.jsonl", shorter)), "sqs:8")
    streams.store.drop_docs(sid, "pending")
    assert streams.tick(sid)["pending"] == 0
    assert streams.reconcile(sid).applied == 1
    assert streams.reconcile(sid).applied == 0
    fourth = run_window(pipe, streams, sid, time.time() + 2)
    equal_to_in_process(fourth, corpus, pipe, tmp_path)
    assert streams.windows(sid)[3].documents == 1
