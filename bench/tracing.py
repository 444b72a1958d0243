"""Run time with tracing on and off: the cost of OpenTelemetry spans on a whole run.

    .venv/bin/python bench/tracing.py [--copies 20] [--reps 3] [--shared N]

A corpus of ``--copies`` copies of the sample corpus (9 documents each, new ids) runs on a
private stack (`groundswell run --embedded`: a private Redis and 2 real workers), each time
into a fresh store, alternately with ``OTEL_EXPORTER_OTLP_ENDPOINT`` unset and set to a
loopback OTLP/HTTP receiver in this process (it answers 200 to every export and counts the
bytes); with ``--shared N``, N real documents of the shared corpus instead, with generated
claims and candidates (as bench/pipeline.py), so the units do a real document's work. Prints
each run's wall time and the CPU time of all its processes (the machine may
be shared: CPU is the steadier measure), and the ratios on/off (goal: at most 1.03).
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
            def do_POST(self) -> None:
                collector.bytes += len(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--shared", type=int, default=0, help="N real documents instead of sample copies."
    )
    args = parser.parse_args()
    collector = Collector()
    with tempfile.TemporaryDirectory() as tmp:
        if args.shared:
            folder = shared_corpus(Path(tmp) / "corpus", args.shared)
        else:
            folder = corpus(Path(tmp) / "corpus", args.copies)
        documents = len(list((folder / "documents").iterdir()))
        times: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        for rep in range(args.reps):
            for traced in (False, True) if rep % 2 == 0 else (True, False):
                seconds, cpu = one(folder, traced, collector)
                times[traced].append(seconds)
                cpus[traced].append(cpu)
                print(
                    f"rep {rep + 1} tracing {'on ' if traced else 'off'} {seconds:7.2f} s wall "
                    f"{cpu:7.2f} s CPU (every process of the run)"
                )
    off, on = min(times[False]), min(times[True])
    cpu_off, cpu_on = statistics.median(cpus[False]), statistics.median(cpus[True])
    print(
        f"{documents} documents; fastest wall off {off:.2f} s, on {on:.2f} s: "
        f"{on / off:.3f}; median CPU off {cpu_off:.2f} s, on {cpu_on:.2f} s: "
        f"{cpu_on / cpu_off:.3f} (goal <= 1.03); {collector.bytes} bytes of spans exported"
    )


if __name__ == "__main__":
    main()
