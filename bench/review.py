"""Review answers: what a POST and a GET of one task cost as the task's answers grow.

    .venv/bin/python bench/review.py [--counts 100,10000] [--reps 5]

A run of the sample corpus is driven in this process (a real redis-server, a local output
store); for each count one reviewer's answers to one task are stored first (straight into
the store, as the API stores them), then the API (in process) is timed: a POST of that
reviewer, a POST of a second reviewer, and a GET of the task, each the median of ``--reps``.
The cap on one reviewer's answers to a task is raised above the largest count, so the cost
of a long history is measured, not the refusal past the cap.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from groundswell.api.main import create_app  # noqa: E402
from groundswell.shared.cli.runs import SAMPLE_CORPUS  # noqa: E402
from groundswell.shared.review.store import RunReview  # noqa: E402
from groundswell.shared.runs.models import RunSpec  # noqa: E402
from groundswell.shared.settings import Settings, hash_api_key  # noqa: E402
from groundswell.workers.embedded import RedisServer  # noqa: E402
from tests.shared.runs.driving import drive  # noqa: E402

ANN, BOB = "gs_ann_bench", "gs_bob_bench"


def timed(call, reps: int) -> float:
    """The median seconds of ``reps`` calls."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,10000")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    redis = RedisServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(
                broker_url=redis.url,
                storage_url=str(Path(tmp) / "out"),
                api_key_hashes=[
                    f"ann:review:{hash_api_key(ANN)}",
                    f"bob:review:{hash_api_key(BOB)}",
                ],
                review_max_answers=max(counts) + 4 * args.reps,
                api_rate_per_key="100000/second",
                api_rate_per_address="100000/second",
            )
            service, record, _ = drive(settings, RunSpec(corpus=str(SAMPLE_CORPUS)))
            review = RunReview(service, record)
            rows = [row for _, row in review.store.rows(review.manifest())]
            client = TestClient(create_app(settings))
            print(f"{'answers':>8} {'POST same':>10} {'POST other':>11} {'GET':>9}  (median s)")
            for n, row in zip(counts, rows, strict=False):
                task = row["task"]
                start = datetime(2026, 1, 1, tzinfo=UTC)
                for i in range(n):
                    review.store.add_answer(
                        {
                            "format": "answer@1",
                            "task": task,
                            "reviewer": "ann",
                            "verdict": "unsure",
                            "decision": None,
                            "candidate": None,
                            "codes_kept": [],
                            "statements": None,
                            "nodes": None,
                            "reason_seen": False,
                            "keys": 1,
                            "ms": 100,
                            "time": "2026-01-01T00:00:00Z",
                        },
                        start + timedelta(microseconds=i),
                    )
                path = f"/v1/review/tasks/{task}/answers"

                def post(key: str, path: str = path) -> None:
                    got = client.post(path, json={"verdict": "unsure"}, headers={"X-API-Key": key})
                    assert got.status_code == 201, got.text

                def get(task: str = task) -> None:
                    got = client.get(f"/v1/review/tasks/{task}", headers={"X-API-Key": ANN})
                    assert got.status_code == 200, got.text

                same = timed(lambda: post(ANN), args.reps)
                other = timed(lambda: post(BOB), args.reps)
                shown = timed(get, args.reps)
                print(f"{n:>8} {same:>10.3f} {other:>11.3f} {shown:>9.3f}")
    finally:
        redis.stop()


if __name__ == "__main__":
    main()
