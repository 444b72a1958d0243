"""Benchmark: groundswell's readers against groundgate 0.11.0's ``read`` on ../shared/raw.

Every file of the raw folder (15 PDFs, 3 inline-XBRL filings, 4 USLM XML files; never copied) is
read in this one process by both readers, each the best of ``--repeat`` runs (of 5 for a file
read in under half a second), alternating so that neither gets a warmer cache. Times are CPU
seconds of the process (``--wall`` for wall-clock seconds): reading is single-threaded, and CPU
time varies less with other load. Both readers are warmed up on one small PDF first (pdfminer
loads its font tables once per process). For each file: the seconds each reader took, the ratio
(groundgate's time over ours: above 1 means we are faster), the floor (``floor_reading``: the
streams inflated, or the markup stripped, with the standard library) and how many times that
ours takes, and whether the text, the layout JSON and the warnings are the same. Then the totals, for PDFs and for all files.

Then the pipeline: the same files (copied to a temporary corpus, with one claim each quoting a
line of the text) run through real workers (a private Redis; 1, then 2 worker processes, each
warmed up on one small PDF first) from submit to the end of the run, wall-clock: documents and
pages read per second, the ratio to the in-process reader above (its summed seconds) and what a
second run of the same corpus reads (nothing: its readings are stored). ``--no-pipeline`` skips
it.

Not a test; run it with ``python bench/read.py`` (``--only pdf`` for the PDFs alone).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def raw_dir() -> Path:
    from groundswell.shared.settings import get_settings

    return get_settings().shared_corpus.parent / "raw"


def groundgate_reading(path: Path) -> tuple[str, Any, tuple[str, ...]]:
    import groundgate.read

    doc = groundgate.read.read(path)
    layout = json.dumps(doc.layout.to_dict()) if doc.layout is not None else None
    return doc.text, layout, tuple(doc.warnings)


def our_reading(path: Path) -> tuple[str, Any, tuple[str, ...]]:
    from groundswell.shared.read import read_bytes

    data = path.read_bytes()
    if path.suffix.lower() == ".pdf":  # the reader itself, without the dispatcher's limits
        from groundswell.shared.read.pdf import read_pdf

        reading = read_pdf(data, max_pages=None, time_limit=None)
    else:
        reading = read_bytes(data, path.name)
    layout = json.dumps(reading.layout) if reading.layout is not None else None
    return reading.text, layout, tuple(reading.warnings)


_STREAM = None


def floor_reading(path: Path) -> int:
    """The floor of reading ``path`` with the standard library: a PDF's bytes and every one of
    its streams inflated (zlib; the content streams any text reader must decode, fonts and
    images too, since which is which needs the object graph), or a markup file decoded, its
    tags dropped by one regex and its entities decoded. No layout, fonts or text order. An
    encrypted PDF's streams do not inflate before they are decrypted (RC4 and AES are not in
    the standard library): its floor is the scan alone, and understates it."""
    import html
    import re
    import zlib

    global _STREAM
    if _STREAM is None:
        _STREAM = re.compile(rb"stream\r?\n")
    data = path.read_bytes()
    if path.suffix.lower() != ".pdf":
        return len(html.unescape(re.sub(r"<[^>]*>", " ", data.decode("utf-8", "replace"))))
    out = 0
    view = memoryview(data)
    for m in _STREAM.finditer(data):
        end = data.find(b"endstream", m.end())
        try:
            out += len(zlib.decompress(view[m.end() : end if end != -1 else len(data)]))
        except zlib.error:
            continue  # not deflated (or not a stream): nothing to inflate
    return out


# A file read in under QUICK seconds is read QUICK_RUNS times by each reader (the best counts):
# one run of a few milliseconds says little.
QUICK, QUICK_RUNS = 0.5, 5
CLOCK = time.process_time  # CPU seconds of this process: other load on the machine counts less


def timed(fn: Any, path: Path) -> tuple[float, Any]:
    start = CLOCK()
    result = fn(path)
    return CLOCK() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, help="the raw folder (default: ../shared/raw)")
    parser.add_argument("--only", choices=("pdf", "html", "xml"), help="one format only")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per reader")
    parser.add_argument("--wall", action="store_true", help="wall-clock time, not CPU time")
    parser.add_argument("--json", help="also write the rows as JSON here")
    parser.add_argument("--no-pipeline", action="store_true", help="the in-process part only")
    args = parser.parse_args()
    if args.wall:
        global CLOCK
        CLOCK = time.perf_counter
    folder = args.raw or raw_dir()
    files = sorted(
        p
        for p in folder.iterdir()
        if p.suffix.lower() in (".pdf", ".html", ".htm", ".xml")
        and (args.only is None or p.suffix.lower().lstrip(".").startswith(args.only[:3]))
    )
    if not files:
        raise SystemExit(f"no files to read in {folder}")
    pdfs = [p for p in files if p.suffix.lower() == ".pdf"]
    warm = min(pdfs or files, key=lambda p: p.stat().st_size)
    groundgate_reading(warm)
    our_reading(warm)

    rows = []
    texts: dict[Path, str] = {}
    header = (
        f"{'file':34} {'KB':>6} {'groundgate s':>12} {'ours s':>8} {'ratio':>6} "
        f"{'floor s':>8} {'vs floor':>8}  same"
    )
    print(header)
    print("-" * len(header))
    for path in files:
        theirs = ours = float("inf")
        expected = got = None
        runs = 0
        while runs < max(1, args.repeat) or (runs < QUICK_RUNS and ours < QUICK):
            t, expected = timed(groundgate_reading, path)
            theirs = min(theirs, t)
            t, got = timed(our_reading, path)
            ours = min(ours, t)
            runs += 1
        low = min(timed(floor_reading, path)[0] for _ in range(3))
        texts[path] = got[0]
        same = "text layout warnings" if expected == got else _what_differs(expected, got)
        row = {
            "file": path.name,
            "kb": round(path.stat().st_size / 1024),
            "groundgate": theirs,
            "ours": ours,
            "floor": low,
            "same": expected == got,
        }
        rows.append(row)
        print(
            f"{path.name:34} {row['kb']:6} {theirs:12.3f} {ours:8.3f} {theirs / ours:6.2f} "
            f"{low:8.3f} {ours / max(low, 1e-6):7.0f}x  {same}"
        )
    print("-" * len(header))
    for label, chosen in (
        ("PDFs", [r for r in rows if r["file"].lower().endswith(".pdf")]),
        ("all files", rows),
    ):
        if not chosen or (
            label == "all files"
            and len(chosen) == len(rows)
            and rows == chosen
            and all(r["file"].lower().endswith(".pdf") for r in rows)
        ):
            continue
        theirs = sum(r["groundgate"] for r in chosen)
        ours = sum(r["ours"] for r in chosen)
        identical = sum(r["same"] for r in chosen)
        low = sum(r["floor"] for r in chosen)
        print(
            f"{label + ' (' + str(len(chosen)) + ')':34} {'':6} {theirs:12.3f} {ours:8.3f} "
            f"{theirs / ours:6.2f} {low:8.3f} {ours / max(low, 1e-6):7.0f}x  "
            f"{identical}/{len(chosen)} identical"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    if not args.no_pipeline:
        pipeline_reading(texts, warm, sum(r["ours"] for r in rows))


def write_corpus(folder: Path, texts: dict[Path, str]) -> None:
    """The files as documents, each with one claim: the first words of a line of its text."""
    for sub in ("documents", "claims"):
        (folder / sub).mkdir(parents=True)
    for path, text in texts.items():
        shutil.copyfile(path, folder / "documents" / path.name)
        lines = [line.split() for line in text.splitlines()]
        words = next((w for w in lines if len(w) >= 6), None) or text.split()
        claim = {"id": "q1", "claim": " ".join(words[:8])}
        (folder / "claims" / f"{path.stem}.jsonl").write_text(json.dumps(claim) + "\n")


def pipeline_reading(texts: dict[Path, str], warm: Path, in_process: float) -> None:
    from bench.pipeline import running_workers, timed_run
    from groundswell.workers.embedded import RedisServer

    work = Path(tempfile.mkdtemp(prefix="groundswell-bench-read-"))
    corpus, warm_corpus = work / "corpus", work / "warm"
    write_corpus(corpus, texts)
    write_corpus(warm_corpus, {warm: texts[warm]})
    documents = len(texts)
    rows = []
    redis_server = RedisServer().start()
    try:
        for workers in (1, 2):
            output = work / f"out-{workers}w"
            with running_workers(workers, redis_server.url, output) as service:
                timed_run(service, str(warm_corpus))  # imports the readers in the pool
                for stored in ("readings", "receipts"):  # what the warm-up run stored
                    shutil.rmtree(output / stored, ignore_errors=True)
                first = timed_run(service, str(corpus))
                second = timed_run(service, str(corpus))
            rows.append((workers, first, second))
    finally:
        redis_server.stop()
        shutil.rmtree(work, ignore_errors=True)

    pages = rows[0][1][1].get("counts", {}).get("read.pages", 0)
    print(
        f"\npipeline: {documents} documents, {pages} PDF pages; seconds from submit to the end "
        f"of the run (wall clock); {os.cpu_count()} CPUs"
    )
    header = (
        f"{'mode':20} {'read':>4} {'s':>6} {'docs/s':>7} {'pages/s':>7} {'vs in-process':>13}"
        "  second run"
    )
    print(header)
    print("-" * len(header))
    print(
        f"{'in-process reader':20} {documents:4} {in_process:6.2f} {documents / in_process:7.2f} "
        f"{pages / in_process:7.1f} {1:12.2f}x"
    )
    for workers, (elapsed, summary), (again, cached) in rows:
        read = summary.get("units", {}).get("read", {}).get("computed", 0)
        reread = cached.get("units", {}).get("read", {}).get("computed", 0)
        failed = {k: v for k, v in summary.get("counts", {}).items() if k.startswith("read.failed")}
        mode = f"pipeline, {workers} worker{'s' * (workers > 1)}"
        print(
            f"{mode:20} {read:4} {elapsed:6.2f} {documents / elapsed:7.2f} {pages / elapsed:7.1f} "
            f"{in_process / elapsed:12.2f}x  {again:.2f} s, read {reread}"
            + "".join(f"; {n} {k.removeprefix('read.failed.')}" for k, n in failed.items())
        )


def _what_differs(expected: Any, got: Any) -> str:
    names = ("text", "layout", "warnings")
    return "DIFFERENT: " + ", ".join(
        n for n, a, b in zip(names, expected, got, strict=True) if a != b
    )


if __name__ == "__main__":
    main()
