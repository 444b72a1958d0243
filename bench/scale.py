"""Scale: runs of tiny generated documents through real workers, measuring what grows.

    .venv/bin/python bench/scale.py                  # 10k and 100k units (a few minutes)
    .venv/bin/python bench/scale.py --full           # 10k, 100k and 1M units
    .venv/bin/python bench/scale.py --sizes 20000    # any sizes, in units (2 per document)

Each size is a fresh local corpus of tiny documents (a claims file and a candidates file
each, so two units a document; cached under --work between invocations) run by two
verify/admit worker processes and one control worker (planning and finalize; each task
reports its own peak memory, the high-water mark being reset as it starts) over a
private broker Redis and
a private state Redis, with a local output folder. Printed per size:

- units/s over the whole run (submit to finished), planning and finalize times;
- Redis: used_memory above the idle baseline, per planned unit, at its peak during the run
  and after it (state and broker Redis together), commands per unit (all Redis commands,
  broker traffic included, minus this process's polling) and state round trips per batch;
- peak RSS (VmHWM) of each process kind: planner and finalize tasks, unit tasks (both as
  reported by the tasks themselves), and the API while it serves receipt pages from the
  start, the middle and the end of the run and one document's receipts;
- the largest object the run left in storage;

then the growth exponent of each time between the two largest sizes and a projection to
ten million documents.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import redis  # noqa: E402

from groundswell.shared.runs.models import RunSpec  # noqa: E402
from groundswell.shared.runs.service import RunService  # noqa: E402
from groundswell.shared.runs.state import RunStore, redis_client  # noqa: E402
from groundswell.shared.settings import Settings, hash_api_key  # noqa: E402
from groundswell.workers.app import enqueue_with, make_app  # noqa: E402
from groundswell.workers.embedded import (  # noqa: E402
    RedisServer,
    WorkerProcess,
    free_port,
    service_env,
    stop_process,
    wait_for_port,
)

SCHEMA = {
    "fields": {
        "report_year": {"type": "integer", "required": True, "minimum": "1990", "maximum": "2100"},
        "employees": {"type": "integer"},
    }
}
API_KEY = "gs_bench_scale"
POLL = 0.05


def progress_bar(done: int, total: int, what: str) -> None:
    if sys.stderr.isatty():
        width = 30
        filled = int(width * done / max(total, 1))
        print(
            f"\r{what} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}",
            end="",
            file=sys.stderr,
        )
        if done >= total:
            print(file=sys.stderr)


def make_corpus(folder: Path, documents: int) -> Path:
    """``documents`` tiny documents with a claims and a candidates file each (cached)."""
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    for sub in ("documents", "claims", "candidates"):
        (folder / sub).mkdir(parents=True)
    (folder / "schema.json").write_text(json.dumps(SCHEMA))
    for i in range(documents):
        doc_id = f"doc-{i:08d}"
        year = 1990 + i % 35
        text = (
            f"Annual report {i} for the year {year}.\n"
            f"The company employed {100 + i % 900} people at the end of the year.\n"
            f"Net revenue was ${i % 1000}.{i % 10} million.\n"
        )
        (folder / "documents" / f"{doc_id}.txt").write_text(text)
        claims = [
            {"id": "q1", "claim": f"employed {100 + i % 900} people"},
            {"id": "q2", "claim": "revenue fell sharply"},
        ]
        (folder / "claims" / f"{doc_id}.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in claims)
        )
        candidates = [
            {"id": "c1", "field": "report_year", "value": year, "evidence": {"text": str(year)}}
        ]
        (folder / "candidates" / f"{doc_id}.json").write_text(json.dumps(candidates))
        if i % 1000 == 0:
            progress_bar(i, documents, f"corpus {documents} documents")
    progress_bar(documents, documents, f"corpus {documents} documents")
    done.write_text("ok")
    return folder


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def key_bytes(client: redis.Redis) -> int:
    """What the keys hold (MEMORY USAGE of each): the data a run puts in Redis, without the
    server's own buffers and the connections of the workers."""
    return sum(client.memory_usage(key) or 0 for key in client.scan_iter(count=1000))


# Commands this benchmark sends to watch the run (never sent by groundswell itself).
OWN_COMMANDS = {"info", "memory|usage", "memory|stats", "scan", "type"}


def command_calls(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def metric_values(port: int, name: str) -> dict[str, float]:
    """``{task: value}`` of a labelled gauge from a worker's /metrics."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1 :].split("} ")
            task = dict(p.split("=") for p in labels.split(","))["task"].strip('"')
            out[task] = max(out.get(task, 0.0), float(value))
    return out


def vm(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class Result:
    units: int
    batches: int = 0
    seconds: float = 0.0
    planning: float = 0.0
    finalize: float = 0.0
    plan_work: float = 0.0
    finalize_work: float = 0.0
    redis_peak: int = 0
    redis_after: int = 0
    keys_peak: int = 0
    keys_after: int = 0
    commands: int = 0
    state_evalsha: int = 0
    events: int = 0
    rss: dict[str, int] = field(default_factory=dict)
    idle_rss: int = 0
    api_idle: int = 0
    largest: tuple[int, str] = (0, "")
    merkle_root: str = ""

    @property
    def units_per_second(self) -> float:
        return self.units / self.seconds if self.seconds else 0.0


def run_size(units: int, work: Path) -> Result:
    documents = units // 2
    corpus = make_corpus(work / f"corpus-{documents}", documents)
    output = work / f"out-{documents}-{int(time.time())}"
    broker, state = RedisServer().start(), RedisServer().start()
    values = {
        "broker_url": broker.url,
        "redis_url": state.url,
        "storage_url": str(output),
        "api_key_hashes": hash_api_key(API_KEY),
    }
    settings = Settings(**values)
    app = make_app(settings)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    ports = {"control": free_port(), "units1": free_port(), "units2": free_port()}
    env = service_env(**values)
    procs = [
        WorkerProcess(
            {**env, "GROUNDSWELL_METRICS_DIR": tempfile.mkdtemp(prefix="gs-m-")},
            queues="control",
            name="control",
            metrics_port=ports["control"],
            log_path=logs / "control.log",
        ).start()
    ]
    for name in ("units1", "units2"):
        procs.append(
            WorkerProcess(
                {**env, "GROUNDSWELL_METRICS_DIR": tempfile.mkdtemp(prefix="gs-m-")},
                queues="verify,admit",
                name=name,
                metrics_port=ports[name],
                log_path=logs / f"{name}.log",
            ).start()
        )
    result = Result(units)
    try:
        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=0.5) or []) < 3:
            if time.monotonic() > deadline:
                raise RuntimeError("workers did not answer within 60 s")
        time.sleep(1)
        children = procs[0].children()
        result.idle_rss = max((vm(c, "VmRSS") for c in children), default=0)
        state_client = redis.Redis.from_url(state.url)
        broker_client = redis.Redis.from_url(broker.url)
        clients = (state_client, broker_client)
        base_memory = sum(used_memory(c) for c in clients)
        base_keys = sum(key_bytes(c) for c in clients)
        base_calls = [command_calls(c) for c in clients]
        service = RunService(settings, RunStore(redis_client(state.url)), enqueue_with(app))
        peak = {"memory": 0, "keys": 0}
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak["memory"] = max(peak["memory"], sum(used_memory(c) for c in clients))
                peak["keys"] = max(peak["keys"], sum(key_bytes(c) for c in clients))
                stop.wait(4 * POLL)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.monotonic()
        record, _ = service.submit(RunSpec(corpus=str(corpus)))
        planned_at = all_done_at = None
        polls = 0
        while True:
            progress = service.runs.progress(record.id)
            polls += 1
            now = time.monotonic()
            if progress is not None:
                if planned_at is None and progress.planning_done:
                    planned_at = now
                if all_done_at is None and progress.planning_done and progress.outstanding == 0:
                    all_done_at = now
                progress_bar(progress.done, max(progress.planned, 1), f"{units} units")
            if service.runs.get(record.id).terminal:
                break
            time.sleep(POLL)
        end = time.monotonic()
        stop.set()
        sampler.join()
        result.seconds = end - start
        result.planning = (planned_at or end) - start
        result.finalize = end - (all_done_at or end)
        result.redis_peak = peak["memory"] - base_memory
        result.redis_after = sum(used_memory(c) for c in clients) - base_memory
        result.keys_peak = peak["keys"] - base_keys
        result.keys_after = sum(key_bytes(c) for c in clients) - base_keys
        after_calls = [command_calls(c) for c in clients]
        calls = sum(
            n - before.get(name, 0)
            for before, after in zip(base_calls, after_calls, strict=True)
            for name, n in after.items()
            if name not in OWN_COMMANDS
        )
        # This process's polling: progress (3 commands) and the record (1) each time.
        result.commands = calls - polls * 4
        result.state_evalsha = after_calls[0].get("evalsha", 0) - base_calls[0].get("evalsha", 0)
        # Task events (for Flower and celery-exporter) are PUBLISHes on the broker.
        result.events = after_calls[1].get("publish", 0) - base_calls[1].get("publish", 0)
        summary = service.summary(record.id) or {}
        assert summary.get("index", {}).get("units") == units, summary.get("index")
        result.merkle_root = summary["index"]["merkle_root"]
        result.batches = int(state_client.hget(f"gs:run:{record.id}", "batches_done") or 0)
        rss: dict[str, float] = {}
        for port in ports.values():
            for task, value in metric_values(port, "groundswell_task_peak_rss_bytes").items():
                rss[task] = max(rss.get(task, 0.0), value)
        result.rss = {k: int(v) for k, v in rss.items()}
        work = metric_values(ports["control"], "groundswell_task_duration_seconds_sum")
        result.plan_work, result.finalize_work = work.get("plan", 0.0), work.get("finalize", 0.0)
        result.rss["api"], result.api_idle = api_rss(values, record.id, documents)
        result.largest = max(
            (p.stat().st_size, str(p.relative_to(output))) for p in output.rglob("*") if p.is_file()
        )
        return result
    finally:
        for proc in procs:
            proc.stop()
        broker.stop()
        state.stop()
        shutil.rmtree(output, ignore_errors=True)


def api_rss(values: dict, run_id: str, documents: int) -> tuple[int, int]:
    """Peak RSS of the API serving receipt pages across the run, and its idle RSS."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundswell", "api", "--port", str(port)],
        env=service_env(**values),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, timeout=30, proc=proc)
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"X-API-Key": API_KEY}, timeout=60
        ) as client:
            assert client.get("/healthz").status_code == 200
            idle = vm(proc.pid, "VmRSS")
            base = f"/v1/runs/{run_id}"
            assert client.get(base).status_code == 200
            for doc in (0, documents // 2, documents - 1):
                cursor = {"k": [f"doc-{doc:08d}", "admit"]}
                token = base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode().rstrip("=")
                page = client.get(f"{base}/receipts", params={"limit": 100, "cursor": token})
                assert page.status_code == 200, page.text
                doc_page = client.get(f"{base}/documents/doc-{doc:08d}/receipts")
                assert doc_page.status_code == 200, doc_page.text
            return vm(proc.pid, "VmHWM"), idle
    finally:
        stop_process(proc)


def mb(value: float) -> str:
    return f"{value / 1e6:.1f} MB"


def kb(value: float) -> str:
    return f"{value / 1e3:.1f} KB"


def report(results: list[Result], target_documents: int) -> None:
    print(f"\n{os.cpu_count()} CPUs; 2 unit workers + 1 control worker; local store\n")
    print(
        "Redis: 'keys' is what the keys hold (MEMORY USAGE, broker queues included), 'used' is\n"
        "used_memory (adds the server's buffers for the workers' connections); both above the\n"
        "idle baseline, summed over the broker and the state Redis.\n"
    )
    print(
        "'plan s' is when planning committed its last step (it is paced by the window, so\n"
        "about the run); 'plan work' and 'final work' are the time their tasks ran.\n"
    )
    print(
        f"{'units':>9} {'units/s':>8} {'wall s':>8} {'plan s':>7} {'plan work':>10} "
        f"{'final s':>8} {'final work':>11} "
        f"{'keys B/unit':>12} {'keys after':>11} {'used B/unit':>12} {'used after':>11} "
        f"{'cmds/unit':>10} {'events/unit':>12} {'evalsha/batch':>14}"
    )
    for r in results:
        print(
            f"{r.units:>9} {r.units_per_second:>8.0f} {r.seconds:>8.1f} {r.planning:>7.1f} "
            f"{r.plan_work:>10.1f} {r.finalize:>8.1f} {r.finalize_work:>11.1f} "
            f"{r.keys_peak / r.units:>12.1f} {kb(r.keys_after):>11} "
            f"{r.redis_peak / r.units:>12.1f} {kb(r.redis_after):>11} "
            f"{r.commands / r.units:>10.2f} {r.events / r.units:>12.2f} "
            f"{r.state_evalsha / max(r.batches, 1):>14.2f}"
        )
    print(
        f"\n{'units':>9} {'planner':>10} {'finalize':>10} {'verify':>10} {'admit':>10} "
        f"{'API page':>10} {'idle task':>10} {'idle API':>10} {'largest object':>16}"
    )
    for r in results:
        print(
            f"{r.units:>9} {mb(r.rss.get('plan', 0)):>10} {mb(r.rss.get('finalize', 0)):>10} "
            f"{mb(r.rss.get('verify', 0)):>10} {mb(r.rss.get('admit', 0)):>10} "
            f"{mb(r.rss.get('api', 0)):>10} {mb(r.idle_rss):>10} {mb(r.api_idle):>10} "
            f"{mb(r.largest[0]):>16}"
        )
    if len(results) < 2:
        return
    a, b = results[-2], results[-1]
    scale = math.log(b.units / a.units)

    def exponent(x: float, y: float) -> float:
        return math.log(y / x) / scale if x > 0 and y > 0 else float("nan")

    target = 2 * target_documents
    print(f"\ngrowth exponents between {a.units} and {b.units} units (1.0 is linear):")
    for name, x, y in (
        ("run time", a.seconds, b.seconds),
        ("plan work", a.plan_work, b.plan_work),
        ("finalize", a.finalize, b.finalize),
    ):
        e = exponent(x, y)
        print(
            f"  {name:<10} {e:5.2f}   projected at {target:,} units: {y * (target / b.units) ** e / 3600:6.2f} h"
        )
    print(
        f"projection to {target_documents:,} documents ({target:,} units) on this machine: "
        f"Redis keys at peak {kb(b.keys_peak)} (the window, not the run: "
        f"{b.keys_peak / target:.3f} B/unit), after {kb(b.keys_after)}; "
        f"task and API memory as above (flat); largest object {mb(b.largest[0])} "
        f"(an index piece: {b.largest[1]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="Units per run, comma separated.")
    parser.add_argument("--full", action="store_true", help="Sizes 10k, 100k and 1M units.")
    parser.add_argument(
        "--work",
        default=str(Path(tempfile.gettempdir()) / "groundswell-scale"),
        help="Where corpora are generated (kept between runs) and outputs written.",
    )
    parser.add_argument("--json", action="store_true", help="Also print the results as JSON.")
    args = parser.parse_args()
    sizes = [10_000, 100_000, 1_000_000] if args.full else [int(s) for s in args.sizes.split(",")]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for units in sizes:
        print(f"-- {units} units", file=sys.stderr)
        results.append(run_size(units, work))
    report(results, 10_000_000)
    if args.json:
        print(json.dumps([r.__dict__ | {"units_per_second": r.units_per_second} for r in results]))


if __name__ == "__main__":
    main()
