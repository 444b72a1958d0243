"""A followed corpus's latency: from a document's PUT to its checked result, at 1 and 10 docs/s.

    .venv/bin/python bench/streams.py [--documents 30] [--rates 1,10] [--workers 2]

moto's server is the S3 and SQS endpoint; the corpus bucket sends its own notifications to an
SQS queue, read as ``groundswell follow --sqs`` reads it (in a thread of this process), with
real worker processes over a private Redis. Each document's claims, candidates and labels are
PUT first and its document last, so the document's PUT completes its inputs; its latency ends
when this process sees the window that checked it finished (its receipt written and the
window's run finalized, index, summary and Merkle root: later than the receipt alone). Windows
close after ``--window-seconds`` (default 1) or 50 documents, and run one after another.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.pipeline import running_workers  # noqa: E402
from groundswell.shared.runs.layout import changed_key  # noqa: E402
from groundswell.shared.settings import get_settings  # noqa: E402
from groundswell.shared.streams.models import StreamSpec  # noqa: E402
from groundswell.shared.streams.service import StreamService  # noqa: E402
from groundswell.shared.streams.sqs import SqsSource, busy, sqs_client  # noqa: E402
from groundswell.workers.embedded import RedisServer  # noqa: E402
from tests.conftest import S3_CREDENTIALS, moto_endpoint, s3_client  # noqa: E402
from tests.integration.corpus_gen import pick_documents, write_corpus  # noqa: E402

INPUTS = ("claims/{}.jsonl", "candidates/{}.json", "labels/{}.json", "documents/{}.txt")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p * (len(ordered) - 1))))]


def measure(args, rate: float, endpoint: str, redis: RedisServer, folder: Path, work: Path):
    s3, sqs = s3_client(endpoint), s3_client(endpoint, "sqs")
    bucket = f"stream-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    queue = sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
    s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": arn["QueueArn"],
                    "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"],
                }
            ]
        },
    )

    def put(key: str) -> None:
        s3.put_object(Bucket=bucket, Key=f"corpus/{key}", Body=(folder / key).read_bytes())

    docs = sorted(p.stem for p in (folder / "documents").glob("*.txt"))
    base, landing = docs[:10], docs[10 : 10 + args.documents]
    put("schema.json")
    for doc_id in base:
        for pattern in INPUTS:
            put(pattern.format(doc_id))
    settings = {
        "s3_endpoint_url": endpoint,
        **S3_CREDENTIALS,
        "sqs_endpoint_url": endpoint,
        "stream_window_seconds": args.window_seconds,
        "stream_window_documents": 50,
        "stream_grace_seconds": 10,
        "stream_reconcile_seconds": 3600,
    }
    with running_workers(args.workers, redis.url, work / f"out-{rate}", **settings) as (service, _):
        streams = StreamService(service)
        corpus = f"s3://{bucket}/corpus"
        record, _ = streams.follow(StreamSpec(corpus=corpus, policy="default"))
        source = SqsSource(sqs_client(service.settings), queue, wait_seconds=1)
        stop = threading.Event()

        def follow() -> None:  # what `groundswell follow --sqs` does
            state: dict = {}
            while not stop.is_set():
                source.poll(streams, record, busy(state))
                state = streams.periodic(only=record.id).get(record.id) or {}

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        try:
            # Window 0 (the stream's first: every document compared by listing).
            put(f"documents/{base[0]}.txt")
            wait_for(lambda: streams.status(record.id)["windows"] >= 1, 120)
            put_at: dict[str, float] = {}
            seen: dict[str, float] = {}
            finished: set[int] = set()
            output = service.store(service.output_url)
            # Where a window's time goes: open (first ready to closed), its run (submitted
            # to finished; queued: until its planning began), and until it is seen here.
            parts: dict[str, list[float]] = {
                "open_s": [],
                "queued_s": [],
                "run_s": [],
                "seen_s": [],
            }

            def collect() -> None:
                for window in streams.windows(record.id)[1:]:
                    if window.number in finished or window.state == "running":
                        continue
                    finished.add(window.number)
                    now = time.time()
                    run = service.get(window.run_id)
                    created, begun, ended = (
                        datetime.fromisoformat(t).timestamp()
                        for t in (run.created_at, run.started_at, run.finished_at)
                    )
                    parts["open_s"].append(window.closed_at - window.opened_at)
                    parts["run_s"].append(ended - created)
                    parts["queued_s"].append(begun - created)
                    parts["seen_s"].append(now - ended)
                    for doc_id in json.loads(output.get(changed_key(window.run_id))):
                        seen.setdefault(doc_id.removeprefix("documents/"), now)

            start = time.time()
            for i, doc_id in enumerate(landing):
                while time.time() < start + i / rate:
                    collect()
                    time.sleep(0.01)
                for pattern in INPUTS:
                    put(pattern.format(doc_id))
                put_at[doc_id] = time.time()
            wait_for(lambda: (collect(), set(put_at) <= set(seen))[1], 300)
        finally:
            stop.set()
            thread.join(10)
        latencies = [seen[d] - put_at[d] for d in put_at]
        return {
            "rate": rate,
            "documents": len(latencies),
            "windows": len(finished),
            "p50_s": round(statistics.median(latencies), 2),
            "p95_s": round(percentile(latencies, 0.95), 2),
            "max_s": round(max(latencies), 2),
            **{f"window_{k}_p50": round(statistics.median(v), 2) for k, v in parts.items() if v},
        }


def wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done in {timeout} s")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=30)
    parser.add_argument("--rates", default="1,10")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window-seconds", type=float, default=1.0)
    args = parser.parse_args()
    shared = get_settings().shared_corpus
    with open(shared / "index.jsonl", encoding="utf-8") as fh:
        index = [json.loads(line) for line in fh if line.strip()]
    work = Path(tempfile.mkdtemp(prefix="gs-bench-streams-"))
    folder = work / "corpus"
    write_corpus(folder, shared, pick_documents(shared, index, args.documents + 10))
    redis = RedisServer().start()
    try:
        with moto_endpoint() as endpoint:
            for rate in (float(r) for r in args.rates.split(",")):
                result = measure(args, rate, endpoint, redis, folder, work)
                print(json.dumps(result), flush=True)
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
