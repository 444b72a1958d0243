"""200 documents land over time on moto's S3 server, and their notifications (the AWS event
JSON) reach a followed corpus through moto's SQS, read as ``groundswell follow --sqs`` reads
them: documents before their claims and after, overwrites, deletes, duplicated and reordered
notifications, and lost ones that reconciliation finds. A real worker runs each window; each
window's summary and Merkle root equal an in-process run over the corpus as it then is."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.streams.models import StreamSpec
from groundswell.shared.streams.service import Ingested, StreamService
from groundswell.shared.streams.sqs import SqsSource, sqs_client
from tests.conftest import Pipeline, s3_client
from tests.integration.corpus_gen import pick_documents, write_corpus
from tests.integration.test_streams import (
    FILES,
    Bucket,
    ids,
    notification,
    run_window,
    stream_pipeline,
)

pytestmark = pytest.mark.integration

DOCUMENTS = 200
GRACE = 900.0  # no document waits this long here: a partial one waits for the rest


@pytest.fixture
def landing(shared_corpus, corpus_index, tmp_path) -> Path:
    """200 small documents of the shared corpus with claims, candidates and labels."""
    folder = tmp_path / "landing"
    picked = pick_documents(shared_corpus, corpus_index, DOCUMENTS, max_bytes=6000)
    write_corpus(folder, shared_corpus, picked)
    assert len(ids(folder)) == DOCUMENTS
    return folder


@pytest.fixture
def pipe(service_settings, s3_endpoint, tmp_path) -> Iterator[Pipeline]:
    """Windows of every ready document (none waits out its grace period here)."""
    windows = {"stream_window_documents": 1000, "stream_grace_seconds": GRACE}
    yield from stream_pipeline(
        service_settings, s3_endpoint, tmp_path, sqs_endpoint_url=s3_endpoint, **windows
    )


class Queue:
    """An SQS queue on moto's server: the test sends the bucket's notifications (as it
    chooses: several records a message, some twice, out of order, some never), the stream
    takes them with ``follow``'s own reader."""

    def __init__(self, endpoint: str, pipe: Pipeline) -> None:
        self.client = s3_client(endpoint, "sqs")
        self.url = self.client.create_queue(QueueName=f"land-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        self.source = SqsSource(sqs_client(pipe.settings), self.url, wait_seconds=0)

    def send(self, records: list[dict[str, Any]], per_message: int = 4) -> None:
        bodies = [
            notification(*records[i : i + per_message]).decode()
            for i in range(0, len(records), per_message)
        ]
        for i in range(0, len(bodies), 10):  # SQS's batch limit
            entries = [{"Id": str(n), "MessageBody": b} for n, b in enumerate(bodies[i : i + 10])]
            self.client.send_message_batch(QueueUrl=self.url, Entries=entries)

    def drain(self, streams: StreamService, sid: str) -> Ingested:
        record = streams.get(sid)
        assert record is not None
        out = Ingested()
        while True:
            got = self.source.poll(streams, record)
            out.add(got)
            if got.events == 0 and self.waiting() == 0:
                return out

    def waiting(self) -> int:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        answer = self.client.get_queue_attributes(QueueUrl=self.url, AttributeNames=names)
        return sum(int(v) for v in answer["Attributes"].values())


def test_200_documents_landing_over_time_make_windows_equal_to_in_process_runs(
    pipe, landing, s3_endpoint, tmp_path
):
    rng = random.Random(30)
    bucket = Bucket(s3_endpoint, landing)
    queue = Queue(s3_endpoint, pipe)
    corpus = f"s3://{bucket.name}/corpus"
    streams = StreamService(pipe.service)
    stream, _ = streams.follow(StreamSpec(corpus=corpus, policy="default"))
    sid = stream.id
    # One in-process output for all the comparisons: each is a full run that reads every
    # document (no previous run), and computes what no earlier comparison did.
    compared = str(tmp_path / "in-process")

    def window() -> dict[str, Any]:
        summary = run_window(pipe, streams, sid, time.time() + 2)
        full = run_in_process(corpus, "default@1", compared, pipe.settings)
        for part in ("counts", "documents", "units"):
            assert summary[part] == full[part], part
        assert summary["index"]["units"] == full["index"]["units"]
        assert summary["index"]["merkle_root"] == full["index"]["merkle_root"]
        return summary

    def land(doc_ids: list[str], patterns: tuple[str, ...] = FILES) -> list[dict[str, Any]]:
        """PUT these files (distinct keys, so on threads), with their notifications."""
        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(bucket.put, [p.format(d) for d in doc_ids for p in patterns]))

    def shuffled(records: list[dict[str, Any]], twice: int = 0) -> list[dict[str, Any]]:
        """``records`` in another order, ``twice`` of them sent twice (far apart)."""
        out = records + rng.sample(records, twice)
        rng.shuffle(out)
        return out

    docs = ids(landing)
    rng.shuffle(docs)
    first, second, third = docs[:70], docs[70:140], docs[140:]
    doc_first, claims_first = second[:10], second[10:20]  # across two windows

    # Window 0: 70 documents whole, 10 documents without their claims and candidates yet,
    # 10 claims and candidates files without their document yet (their units fail, as an
    # in-process run's would); notifications reordered, 20 of them twice.
    records = [bucket.put("schema.json"), *land(first)]
    records += land(doc_first, ("documents/{}.txt",)) + land(claims_first, FILES[1:])
    queue.send(shuffled(records, twice=20))
    got = queue.drain(streams, sid)
    assert (got.applied, got.stale, got.ignored) == (len(records) - 1, 20, 1)  # schema: no input
    status = streams.tick(sid)
    assert status["ready"] == 70 and status["pending"] == 20, status
    zero = window()
    assert streams.windows(sid)[0].documents == 70
    assert zero["units"]["verify"]["failed"] == 10  # claims whose document is not there yet

    # Window 1: the other halves of those 20, 50 more documents whole; claims overwritten
    # twice (the older event after the newer), documents deleted (every file) and
    # candidates deleted alone; everything reordered, some twice.
    rewritten, gone, no_candidates = first[:6], first[6:10], first[10:13]
    records = land(doc_first, FILES[1:]) + land(claims_first, FILES[:1])
    records += land(second[20:])
    older, newer = [], []
    for doc_id in rewritten:
        lines = (landing / f"claims/{doc_id}.jsonl").read_bytes().splitlines(True)
        older.append(bucket.put(f"claims/{doc_id}.jsonl", b"".join(lines[:-1])))
        newer.append(bucket.put(f"claims/{doc_id}.jsonl", b"".join(lines[:-2])))
    removed = [bucket.delete(p.format(d)) for d in gone for p in FILES]
    removed += [bucket.delete(f"candidates/{d}.json") for d in no_candidates]
    queue.send(shuffled(records + newer + removed, twice=15))
    queue.send(older)  # late: each is older than its key's newer event
    got = queue.drain(streams, sid)
    assert (got.applied, got.stale) == (len(records + newer + removed), 15 + len(older))
    one = window()
    changed = {*doc_first, *claims_first, *second[20:], *rewritten, *gone, *no_candidates}
    assert streams.windows(sid)[1].documents == len(changed)
    assert one["units"]["verify"]["failed"] == 0
    assert one["units"]["verify"]["computed"] == len(changed) - len(gone) - len(no_candidates)
    assert one["units"]["admit"]["planned"] == 140 - len(gone) - len(no_candidates)

    # Window 2: the last 60 documents, one deleted document back, and two changes whose
    # notifications are lost (a claims file rewritten, a labels file rewritten): found by
    # reconciliation, which lists and compares with the latest run, reading no body.
    records = land(third) + land(gone[:1])
    lost_claims, lost_labels = first[20], first[21]
    bucket.put(f"claims/{lost_claims}.jsonl", b'{"id": "lost", "claim": "never notified"}\n')
    bucket.put(f"labels/{lost_labels}.json", b'{"claims": {}, "candidates": {}}')
    queue.send(shuffled(records, twice=10))
    got = queue.drain(streams, sid)
    assert (got.applied, got.stale) == (len(records), 10)
    assert streams.reconcile(sid).applied == 2
    assert streams.reconcile(sid).applied == 0  # found once
    two = window()
    assert streams.windows(sid)[2].documents == len(third) + 1 + 2
    assert two["units"]["verify"]["done"] == DOCUMENTS - len(gone) + 1
    assert streams.status(sid)["lag_seconds"] == 0.0
    # The first window's run says its 10 claims without a document failed; the others pass.
    states = [w.state for w in streams.windows(sid)]
    assert states == ["partially_failed", "succeeded", "succeeded"]
