"""Pipeline throughput: the same corpus through 1 and 2 worker processes vs the in-process core.

    .venv/bin/python bench/pipeline.py [--documents 210] [--repeat 1]

Documents come from ../shared/corpus (read in place, copied only to a temp folder) with
generated claims and candidates. Receipts are removed before each timed run, so every unit
is computed. Each mode is warmed up by one untimed run (workers answer a ping, import and
build their tables) and reports the best of ``--repeat`` timed runs. The ratio is
pipeline throughput over in-process throughput: the cost of distribution on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groundswell.shared.runs.inprocess import run_in_process  # noqa: E402
from groundswell.shared.runs.models import RunSpec  # noqa: E402
from groundswell.shared.runs.service import RunService  # noqa: E402
from groundswell.shared.runs.state import RunStore, redis_client  # noqa: E402
from groundswell.shared.settings import Settings, get_settings  # noqa: E402
from groundswell.workers.app import enqueue_with, make_app  # noqa: E402
from groundswell.workers.embedded import RedisServer, WorkerProcess, service_env  # noqa: E402
from tests.integration.corpus_gen import pick_documents, write_corpus  # noqa: E402


@contextmanager
def running_workers(
    workers: int, redis_url: str, output: Path, **settings: object
) -> Iterator[RunService]:
    """``workers`` worker processes (one pool process each, every queue) over a flushed
    ``redis_url``, storing into ``output``, with other ``settings`` (default batching); the
    service to submit runs to, once all answer."""
    values = {"broker_url": redis_url, "storage_url": str(output), **settings}
    settings = Settings(**values)
    redis_client(redis_url).flushall()
    app = make_app(settings)
    procs = [
        WorkerProcess(service_env(**values), concurrency=1, name=f"bench{i}").start()
        for i in range(workers)
    ]
    try:
        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=0.5) or []) < workers:
            if time.monotonic() > deadline:
                raise RuntimeError("workers did not answer within 60 s")
        yield RunService(settings, RunStore(redis_client(redis_url)), enqueue_with(app))
    finally:
        for proc in procs:
            proc.stop()


def timed_run(service: RunService, corpus: str) -> tuple[float, dict]:
    """Wall-clock seconds from submitting a run of ``corpus`` to its end, and its summary."""
    start = time.perf_counter()
    record, _ = service.submit(RunSpec(corpus=corpus))
    while not service.get(record.id).terminal:
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    return elapsed, service.summary(record.id) or {}


def pipeline_runs(
    corpus: str, workers: int, redis_url: str, work: Path, repeat: int
) -> tuple[float, dict]:
    """Best of ``repeat`` timed runs on warm workers (a first, untimed run warms them up)."""
    output = work / f"out-{workers}w"
    with running_workers(workers, redis_url, output) as service:
        best: tuple[float, dict] | None = None
        for attempt in range(repeat + 1):
            # Receipts are content-addressed: remove them so that every unit is computed again.
            shutil.rmtree(output / "receipts", ignore_errors=True)
            elapsed, summary = timed_run(service, corpus)
            if attempt and (best is None or elapsed < best[0]):  # attempt 0 warms the workers
                best = (elapsed, summary)
        assert best is not None
        return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=210)
    parser.add_argument("--repeat", type=int, default=3, help="Best of N warm runs per mode.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    shared = get_settings().shared_corpus
    index = [json.loads(line) for line in (shared / "index.jsonl").read_text().splitlines() if line]
    work = Path(tempfile.mkdtemp(prefix="groundswell-bench-"))
    corpus = work / "corpus"
    sizes = write_corpus(corpus, shared, pick_documents(shared, index, args.documents))
    total_bytes = sum(p.stat().st_size for p in (corpus / "documents").iterdir())

    rows = []
    timings = []
    for i in range(args.repeat):
        t0 = time.perf_counter()
        reference = run_in_process(
            str(corpus), "default", str(work / f"inproc-b{i}"), get_settings()
        )
        timings.append(time.perf_counter() - t0)
    in_process = min(timings)
    rows.append(("in-process core", in_process, reference))

    redis_server = RedisServer().start()
    try:
        for workers in (1, 2):
            elapsed, summary = pipeline_runs(
                str(corpus), workers, redis_server.url, work, args.repeat
            )
            assert summary.get("counts") == reference["counts"], "pipeline and in-process disagree"
            rows.append(
                (f"pipeline, {workers} worker{'s' if workers > 1 else ''}", elapsed, summary)
            )
    finally:
        redis_server.stop()

    claims = reference["counts"].get("claims", 0)
    candidates = reference["counts"].get("candidates", 0)
    print(
        f"corpus: {sizes['documents']} documents ({total_bytes / 1e6:.1f} MB), {claims} claims, "
        f"{candidates} candidates; {os.cpu_count()} CPUs"
    )
    print(
        f"{'mode':<22} {'wall s':>8} {'claims/s':>10} {'cands/s':>9} {'units/s':>9} {'vs in-process':>14}"
    )
    for name, elapsed, summary in rows:
        units = summary["index"]["units"]
        print(
            f"{name:<22} {elapsed:8.2f} {claims / elapsed:10.0f} {candidates / elapsed:9.0f} "
            f"{units / elapsed:9.0f} {in_process / elapsed:13.2f}x"
        )
    if args.json:
        print(json.dumps([{"mode": n, "seconds": e} for n, e, _ in rows]))


if __name__ == "__main__":
    main()
