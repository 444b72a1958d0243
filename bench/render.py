"""Benchmark: page images (shared/read/render.py, PDFium through pypdfium2, PNG written here)
against poppler's ``pdftoppm -png`` on the same pages of ../shared/raw's PDFs.

Each renderer runs in its own child process over the same pages (every page of each PDF, or
the first ``--pages`` of each), at ``--dpi`` dots per inch, writing one PNG a page: ours in a
Python child that renders them one after the other, pdftoppm as one call per PDF. For each:
wall-clock seconds, pages per second, peak resident memory (the children's maxrss, from
wait4) and the bytes of PNG written; then the ratio (pdftoppm's time over ours: above 1
means we are faster). The API renders a page once and keeps it (create-once, by source sha256,
page and resolution), so this is the cost of the first view of a page.

Not a test; run it with ``python bench/render.py`` (``--dpi 150``, ``--pages 5``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def raw_pdfs() -> list[Path]:
    from groundswell.shared.settings import get_settings

    raw = get_settings().shared_corpus.parent / "raw"
    return sorted(p for p in raw.iterdir() if p.suffix.lower() == ".pdf")


def pages_of(path: Path, most: int | None) -> int:
    from groundswell.shared.read.render import page_count

    n = page_count(path.read_bytes())
    return n if most is None else min(n, most)


def run_child(argv: list[str]) -> tuple[float, int]:
    """Run a child to its end: (wall seconds, its peak resident memory in KiB)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv[0]} exited {proc.returncode}")
    return seconds, usage.ru_maxrss


def worker(jobs: list[str], dpi: int, out: Path) -> None:
    """Ours, in this (child) process: each FILE:PAGES job rendered page by page."""
    from groundswell.shared.read.render import render_page

    for job in jobs:
        file, _, count = job.rpartition(":")
        data = Path(file).read_bytes()
        for page in range(1, int(count) + 1):
            png = render_page(data, page, dpi)
            (out / f"{Path(file).stem}-{page}.png").write_bytes(png)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--pages", type=int, default=None, help="pages of each PDF, at most")
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.dpi, Path(args.out))
        return
    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        raise SystemExit("pdftoppm is not installed: apt-get install poppler-utils")
    pdfs = raw_pdfs()
    jobs = [(p, pages_of(p, args.pages)) for p in pdfs]
    total = sum(n for _, n in jobs)
    print(f"{len(pdfs)} PDFs, {total} pages at {args.dpi} dpi")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        ours_dir, theirs_dir = Path(tmp, "ours"), Path(tmp, "pdftoppm")
        ours_dir.mkdir()
        theirs_dir.mkdir()
        argv = [sys.executable, __file__, "--dpi", str(args.dpi), "--out", str(ours_dir)]
        results["ours (pypdfium2)"] = run_child([*argv, "--worker", *(f"{p}:{n}" for p, n in jobs)])
        seconds, peak = 0.0, 0
        for path, n in jobs:
            s, m = run_child(
                [pdftoppm, "-png", "-r", str(args.dpi), "-f", "1", "-l", str(n), str(path),
                 str(theirs_dir / path.stem)]
            )  # fmt: skip
            seconds, peak = seconds + s, max(peak, m)
        results["pdftoppm"] = (seconds, peak)
        sizes = {
            "ours (pypdfium2)": sum(f.stat().st_size for f in ours_dir.iterdir()),
            "pdftoppm": sum(f.stat().st_size for f in theirs_dir.iterdir()),
        }
        written = {
            "ours (pypdfium2)": len(list(ours_dir.iterdir())),
            "pdftoppm": len(list(theirs_dir.iterdir())),
        }
    print(f"{'renderer':<18} {'seconds':>8} {'pages/s':>8} {'peak MiB':>9} {'PNG MiB':>8} pages")
    for name, (seconds, peak) in results.items():
        print(
            f"{name:<18} {seconds:8.2f} {total / seconds:8.1f} {peak / 1024:9.1f} "
            f"{sizes[name] / 2**20:8.1f} {written[name]}"
        )
    ratio = results["pdftoppm"][0] / results["ours (pypdfium2)"][0]
    print(f"time ratio pdftoppm/ours: {ratio:.2f} (above 1: ours is faster)")


if __name__ == "__main__":
    main()
