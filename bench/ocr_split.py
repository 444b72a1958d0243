"""Benchmark: a long scan through 2 read workers vs 1 (issue 35 item 2: goal >= 1.8x).

    .venv/bin/python bench/ocr_split.py [--pages 40]  # any length: pages repeat past ~60 [--dpi 300] [--split 16]

The scan is made here: text pages of PDFs of ../shared/raw (bench/ocr.py's SOURCES, their
first pages, then their second, ...), rendered by PDFium at ``--dpi`` and wrapped as one
image-only PDF of ``--pages`` pages, with one claim. It is read as a run of real workers
(Redis, a local output folder, one pool process per worker, all queues) by 1 worker and then
by 2, each on a fresh output, so every page is recognised; with 2 the read unit shares the
pages out above ``--split`` pages (GROUNDSWELL_OCR_SPLIT_PAGES). Each run is timed from submit
to its end; the CPU seconds of each worker's pool process are read with its children's
(Tesseract runs as a child), before and after.

Printed: wall seconds and CPU seconds of each run, the wall ratio (1 worker over 2), and a
CPU-normalised ratio, the 1-worker run's CPU over the busiest worker's CPU in the 2-worker
run: what the wall ratio is when each worker has a core of its own, which a shared machine
does not give (its load average is printed too). The two readings are compared byte for
byte, and the pages each worker recognised are counted from the stored pieces.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ocr import SOURCES  # noqa: E402
from bench.pipeline import running_workers  # noqa: E402
from groundswell.shared.receipts import content_sha256  # noqa: E402
from groundswell.shared.runs.models import RunSpec  # noqa: E402
from groundswell.shared.runs.reading import Pieces, reader, reading_key  # noqa: E402
from groundswell.shared.settings import get_settings  # noqa: E402
from groundswell.shared.storage import open_store  # noqa: E402
from groundswell.workers.embedded import RedisServer  # noqa: E402

# A page Tesseract is unsure of at 300 dpi (a table: mean word confidence 38, under the floor
# of 50): with it the reading fails (ocr_low_confidence), as it should, and reads no text.
UNSURE = {("GSA2022.pdf", 2)}


def make_scan(raw: Path, pages: int, dpi: int) -> bytes:
    """An image-only PDF of ``pages`` text pages of SOURCES (but UNSURE), rendered one at a
    time: their first pages, then their second, ... and, past the last of them (about 60),
    the same pages again in the same order, so a scan of any length can be read (each page is
    recognised on its own: a repeated page costs what it cost the first time)."""
    import pypdfium2 as pdfium

    documents = [(name, pdfium.PdfDocument((raw / name).read_bytes())) for name in SOURCES]
    images = []
    for index in range(max(len(d) for _, d in documents)):
        for name, document in documents:
            if (name, index + 1) in UNSURE or index >= len(document) or len(images) >= pages:
                continue
            bitmap = document[index].render(scale=dpi / 72, grayscale=True)
            images.append(bitmap.to_pil().convert("L"))
    for _, document in documents:
        document.close()
    if not images:
        raise SystemExit("the sources have no pages")
    # The same image objects repeated: memory stays that of the distinct pages.
    cycled = [images[i % len(images)] for i in range(pages)]
    out = io.BytesIO()
    cycled[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=cycled[1:])
    return out.getvalue()


def cpu_with_children(pid: int) -> float:
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system + t.children_user + t.children_system


def run(workers: int, corpus: Path, work: Path, redis_url: str, values: dict) -> dict:
    output = work / f"out-{workers}w"
    with running_workers(workers, redis_url, output, **values) as (service, procs):
        # The pool processes exist once the workers answer a ping.
        pools = [[c for c in p.children()] for p in procs]
        before = [sum(cpu_with_children(c) for c in pool) for pool in pools]
        start = time.perf_counter()
        record, _ = service.submit(RunSpec(corpus=str(corpus)))
        while not service.get(record.id).terminal:
            time.sleep(0.2)
        wall = time.perf_counter() - start
        after = [sum(cpu_with_children(c) for c in pool) for pool in pools]
        summary = service.summary(record.id) or {}
    cpu = [a - b for a, b in zip(after, before, strict=True)]
    return {"wall": wall, "cpu": cpu, "summary": summary, "output": output, "pools": pools}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--split", type=int, default=16, help="GROUNDSWELL_OCR_SPLIT_PAGES")
    args = parser.parse_args()
    raw = get_settings().shared_corpus.parent / "raw"
    scan = make_scan(raw, args.pages, args.dpi)
    values = {
        "ocr_dpi": args.dpi,
        "ocr_split_pages": args.split,
        # A long scan on one worker takes seconds per page: no limit of a page's work cuts it.
        "read_seconds": 3600,
        # 300-dpi JPEG pages are ~0.55 MB each: 200 of them pass the 64 MB a document may have.
        "max_document_bytes": 512_000_000,
        "read_max_bytes": 512_000_000,
        "task_soft_time_limit": 3500,
        "task_time_limit": 3600,
        "visibility_timeout": 4000,
    }
    os.environ.update({f"GROUNDSWELL_{k.upper()}": str(v) for k, v in values.items()})
    get_settings.cache_clear()
    sha, name = content_sha256(scan), reader()
    with tempfile.TemporaryDirectory(prefix="gs-ocr-split-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        (corpus / "documents").mkdir(parents=True)
        (corpus / "claims").mkdir()
        (corpus / "documents" / "scan.pdf").write_bytes(scan)
        (corpus / "claims" / "scan.jsonl").write_text('{"id": "c1", "claim": "Protocol"}\n')
        redis = RedisServer().start()
        try:
            load = os.getloadavg()
            one = run(1, corpus, work, redis.url, values)
            two = run(2, corpus, work, redis.url, values)
        finally:
            redis.stop()
        for r in (one, two):
            if r["summary"].get("counts", {}).get("read.pages") != args.pages:
                raise SystemExit(f"the scan was not read: {json.dumps(r['summary'])[:2000]}")
        readings = [open_store(str(r["output"]), get_settings()) for r in (one, two)]
        key = reading_key(sha, name)
        same = readings[0].get(key) == readings[1].get(key)
        pieces = Pieces(readings[1], sha, name)
        by_pid: dict[int, int] = {}
        for page in readings[1].list_pages(pieces.prefix):
            for info in page:
                pid = json.loads(readings[1].get(info.key))["by"]["pid"]
                by_pid[pid] = by_pid.get(pid, 0) + 1
    per_worker = [sum(by_pid.get(pid, 0) for pid in pool) for pool in two["pools"]]
    for label, r in (("1 worker ", one), ("2 workers", two)):
        read = r["summary"].get("units", {}).get("read", {})
        print(
            f"{label}: {r['wall']:7.1f} s wall, CPU {' + '.join(f'{c:.1f}' for c in r['cpu'])} s "
            f"(read units computed {read.get('computed')}, pages {r['summary']['counts'].get('read.pages')})"
        )
    wall_ratio = one["wall"] / two["wall"]
    cpu_ratio = sum(one["cpu"]) / max(two["cpu"])
    print(
        f"{args.pages} pages at {args.dpi} dpi, split above {args.split}; {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} before"
    )
    print(f"pages recognised per worker (stored pieces, 2 workers): {per_worker}")
    print(f"2-worker CPU over 1-worker CPU: {sum(two['cpu']) / sum(one['cpu']):.3f} (work added)")
    print(f"wall ratio (1 worker / 2 workers): {wall_ratio:.2f}x  (goal >= 1.8x)")
    print(f"CPU-normalised ratio (1-worker CPU / busiest 2-worker CPU): {cpu_ratio:.2f}x")
    print(f"reading byte for byte the same: {same}")
    if not same:
        raise SystemExit("the readings differ")


if __name__ == "__main__":
    main()
