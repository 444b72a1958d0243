"""Run time with tracing on and off: the cost of OpenTelemetry spans on a whole run.

    .venv/bin/python bench/tracing.py [--copies 20] [--reps 6] [--shared N]

A corpus of ``--copies`` copies of the sample corpus (9 documents each, new ids) runs on a
private stack (`groundswell run --embedded`: a private Redis and 2 real workers), each time
into a fresh store, alternately with ``OTEL_EXPORTER_OTLP_ENDPOINT`` unset and set to a
loopback OTLP/HTTP receiver in this process (it answers 200 to every export and counts the
bytes); with ``--shared N``, N real documents of the shared corpus instead, with generated
claims and candidates (as bench/pipeline.py), so the units do a real document's work. Runs
come in ``--reps`` pairs, off then on, then on then off, ... (after one warm-up run not
counted), so a change in the machine's load falls on both sides. Prints each run's wall
time and the CPU time of every process of the run (the command, Redis, each worker's parent
and pool children: all are its descendants and are waited for, so ``RUSAGE_CHILDREN`` holds
them), then for each side the median and the spread, the ratio of the medians and the median
of the ratios within pairs (goal: at most 1.03), and the load average before and after: on a
shared machine CPU is the steadier measure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "shared" / "sample" / "corpus"


def corpus(folder: Path, copies: int) -> Path:
    for sub in ("documents", "claims", "candidates", "labels"):
        (folder / sub).mkdir(parents=True)
    shutil.copy(SAMPLE / "schema.json", folder / "schema.json")
    for n in range(copies):
        for sub in ("documents", "claims", "candidates", "labels"):
            for f in (SAMPLE / sub).iterdir():
                shutil.copy(f, folder / sub / f"c{n:03d}-{f.name}")
    return folder


def shared_corpus(folder: Path, count: int) -> Path:
    """``count`` documents of ../shared/corpus with generated claims and candidates."""
    sys.path.insert(0, str(ROOT))
    from groundswell.shared.settings import get_settings
    from tests.integration.corpus_gen import pick_documents, write_corpus

    shared = get_settings().shared_corpus
    index = [json.loads(line) for line in (shared / "index.jsonl").read_text().splitlines() if line]
    write_corpus(folder, shared, pick_documents(shared, index, count))
    return folder


class Collector:
    def __init__(self) -> None:
        self.bytes = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keeps connections alive, as a collector does

            def do_POST(self) -> None:
                collector.bytes += len(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one(folder: Path, traced: bool, collector: Collector) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROUNDSWELL_", "OTEL_"))}
    store = tempfile.mkdtemp(prefix="gs-bench-store-")
    env["GROUNDSWELL_STORAGE_URL"] = store
    if traced:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.url
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "groundswell"), "run", str(folder), "--embedded", "-q"],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    shutil.rmtree(store, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-2000:])
    return seconds, cpu


def spread(values: list[float]) -> str:
    """Median, the range and the range as a share of the median."""
    mid = statistics.median(values)
    return (
        f"median {mid:.2f} s (min {min(values):.2f}, max {max(values):.2f}, "
        f"spread {(max(values) - min(values)) / mid:.1%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--reps", type=int, default=6, help="Pairs of runs (one off, one on).")
    parser.add_argument(
        "--shared", type=int, default=0, help="N real documents instead of sample copies."
    )
    args = parser.parse_args()
    collector = Collector()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        if args.shared:
            folder = shared_corpus(Path(tmp) / "corpus", args.shared)
        else:
            folder = corpus(Path(tmp) / "corpus", args.copies)
        documents = len(list((folder / "documents").iterdir()))
        one(folder, False, collector)  # warm the page cache and the bytecode: not counted
        times: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        ratios: list[float] = []
        for rep in range(args.reps):
            # off-on, on-off, ...: a drift of the machine's load falls on both sides alike
            pair: dict[bool, float] = {}
            for traced in (False, True) if rep % 2 == 0 else (True, False):
                seconds, cpu = one(folder, traced, collector)
                times[traced].append(seconds)
                cpus[traced].append(cpu)
                pair[traced] = cpu
                print(
                    f"pair {rep + 1} tracing {'on ' if traced else 'off'} {seconds:7.2f} s wall "
                    f"{cpu:7.2f} s CPU (every process of the run)",
                    flush=True,
                )
            ratios.append(pair[True] / pair[False])
    load_after = os.getloadavg()
    cpu_off, cpu_on = statistics.median(cpus[False]), statistics.median(cpus[True])
    print(f"{documents} documents, {args.reps} pairs of runs, alternating")
    print(f"CPU off: {spread(cpus[False])}")
    print(f"CPU on:  {spread(cpus[True])}")
    print(
        f"CPU on/off: {cpu_on / cpu_off:.3f} of the medians; per pair median "
        f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
        "goal <= 1.03"
    )
    print(f"wall off: {spread(times[False])}")
    print(f"wall on:  {spread(times[True])}")
    print(
        f"{collector.bytes} bytes of spans exported; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )


if __name__ == "__main__":
    main()
