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


def cpu_of(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


class CpuLedger:
    """Where a run's CPU goes: the worker pools (the tasks), the workers' parent processes
    (Celery's consumers: prefetch, acks, heartbeats), the broker and state Redis, and this
    process (submitting and polling). Read before and after a timed run."""

    def __init__(self, procs: list[WorkerProcess], redis_pid: int) -> None:
        self.parents = [p.proc.pid for p in procs if p.proc is not None]
        self.pools = [c for p in procs for c in p.children()]
        self.redis = [redis_pid]

    def read(self) -> dict[str, float]:
        return {
            "pool": cpu_of(self.pools),
            "parents": cpu_of(self.parents),
            "redis": cpu_of(self.redis),
            "submitter": time.process_time(),
        }


def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in before}


@contextmanager
def running_workers(
    workers: int, redis_url: str, output: Path, **settings: object
) -> Iterator[tuple[RunService, list[WorkerProcess]]]:
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
        service = RunService(settings, RunStore(redis_client(redis_url)), enqueue_with(app))
        yield service, procs
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
    corpus: str, workers: int, redis: RedisServer, work: Path, repeat: int
) -> tuple[float, dict, dict[str, float]]:
    """Best of ``repeat`` timed runs on warm workers (a first, untimed run warms them up),
    with the CPU seconds each part of the pipeline spent in that run."""
    output = work / f"out-{workers}w"
    with running_workers(workers, redis.url, output) as (service, procs):
        best: tuple[float, dict, dict[str, float]] | None = None
        ledger = None
        for attempt in range(repeat + 1):
            # Receipts are content-addressed: remove them so that every unit is computed again.
            shutil.rmtree(output / "receipts", ignore_errors=True)
            if attempt == 1:  # the pool processes exist once the first run has used them
                ledger = CpuLedger(procs, redis.proc.pid)
            before = ledger.read() if ledger else {}
            elapsed, summary = timed_run(service, corpus)
            if attempt and (best is None or elapsed < best[0]):  # attempt 0 warms the workers
                best = (elapsed, summary, spent(before, ledger.read()))
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
    cpu_in_process = float("inf")
    for i in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        reference = run_in_process(
            str(corpus), "default", str(work / f"inproc-b{i}"), get_settings()
        )
        timings.append(time.perf_counter() - t0)
        cpu_in_process = min(cpu_in_process, time.process_time() - c0)
    in_process = min(timings)
    rows.append(("in-process core", in_process, reference))
    cpu_rows = []

    redis_server = RedisServer().start()
    try:
        for workers in (1, 2):
            elapsed, summary, cpu = pipeline_runs(
                str(corpus), workers, redis_server, work, args.repeat
            )
            cpu_rows.append((workers, cpu))
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
    print(
        f"\nCPU seconds of the best run (in-process core: {cpu_in_process:.2f}): "
        "pool = the tasks, parents = the workers' main processes, redis = broker and state"
    )
    for workers, cpu in cpu_rows:
        total = sum(cpu.values())
        parts = ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
        print(
            f"  {workers} worker{'s' if workers > 1 else ' '}: {parts}; total {total:.2f} "
            f"({total - cpu_in_process:+.2f} against the in-process core)"
        )
    if args.json:
        print(json.dumps([{"mode": n, "seconds": e} for n, e, _ in rows]))


if __name__ == "__main__":
    main()
