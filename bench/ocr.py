"""Benchmark: the OCR reader (reader ocr-1, shared/read/ocr.py) against ``ocrmypdf`` on the
same scan, with the same engine (Tesseract), one page at a time.

The scan is made here: the first page of each of ``--pages`` text PDFs of ../shared/raw,
rendered by PDFium at ``--dpi`` and wrapped as one image-only PDF (Pillow), so the true text is
each page's text layer. Each side runs in a child process with one Tesseract thread
(OMP_THREAD_LIMIT=1) and one job: ours reads the scan (``read_bytes``: render, recognise,
compose the text and layout), ``ocrmypdf --force-ocr -j 1`` writes a PDF with a text layer
(which our PDF reader then reads, outside the timing, for its accuracy). For each: wall
seconds, CPU seconds (the children's, Tesseract included), pages per second and pages per
CPU second (per core), and character accuracy against the text layers; then the ratio of
ocrmypdf's CPU time over ours (above 1: we are faster per core).

Not a test; run it with ``python bench/ocr.py`` (``--pages 4``, ``--dpi 300``).
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# Text PDFs of ../shared/raw whose first page is mostly running text.
SOURCES = (
    "NCT06159946_Prot_000.pdf",
    "20071229X02007.pdf",
    "NCT06153992_ICF_001.pdf",
    "20080102X00002.pdf",
    "GSA2022.pdf",
    "20071231X02009.pdf",
)


def make_scan(raw: Path, pages: int, dpi: int) -> tuple[bytes, list[str]]:
    """An image-only PDF of the first page of ``pages`` sources, and each page's true text."""
    import pypdfium2 as pdfium

    from groundswell.shared.read.pdf import read_pdf

    images, truths = [], []
    for name in SOURCES[:pages]:
        data = (raw / name).read_bytes()
        truths.append(read_pdf(data, pages=[1]).text)
        document = pdfium.PdfDocument(data)
        images.append(document[0].render(scale=dpi / 72, grayscale=True).to_pil().convert("L"))
        document.close()
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out.getvalue(), truths


def accuracy(truth: str, read: str) -> float:
    a, b = " ".join(truth.split()), " ".join(read.split())
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(m.size for m in matcher.get_matching_blocks()) / len(a)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run a child to its end: (wall seconds, CPU seconds of it and its children)."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode:
        raise SystemExit(f"{argv[0]} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def page_texts(reading) -> list[str]:
    data = reading.text.encode()
    return [data[p["start"] : p["end"]].decode() for p in reading.layout["pages"]]


def ours_child(scan: str, out: str) -> None:
    import json

    from groundswell.shared.read import read_bytes

    reading = read_bytes(Path(scan).read_bytes(), "scan.pdf")
    Path(out).write_text(json.dumps(page_texts(reading)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        ours_child(*args.child)
        return
    import json

    from groundswell.shared.read.pdf import read_pdf
    from groundswell.shared.settings import get_settings

    raw = get_settings().shared_corpus.parent / "raw"
    scan, truths = make_scan(raw, min(args.pages, len(SOURCES)), args.dpi)
    n = len(truths)
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "GROUNDSWELL_OCR_DPI": str(args.dpi)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "scan.pdf").write_bytes(scan)
        wall, cpu = timed(
            [sys.executable, __file__, "--child", str(folder / "scan.pdf"), str(folder / "o")],
            env,
        )
        texts = json.loads((folder / "o").read_text())
        rows.append(("ours (ocr-1)", wall, cpu, texts))
        ocrmypdf = shutil.which("ocrmypdf")
        if ocrmypdf:
            argv = [ocrmypdf, "--force-ocr", "-j", "1", "--output-type", "pdf", "--optimize"]
            argv += ["0", "--image-dpi", str(args.dpi), "-q"]
            wall, cpu = timed([*argv, str(folder / "scan.pdf"), str(folder / "m.pdf")], env)
            them = read_pdf((folder / "m.pdf").read_bytes())
            rows.append(("ocrmypdf", wall, cpu, page_texts(them)))
    print(f"{n} pages at {args.dpi} dpi, one Tesseract thread, one job")
    print(f"{'':14} {'wall s':>8} {'cpu s':>8} {'pages/s':>8} {'pages/cpu-s':>12} {'accuracy':>9}")
    for name, wall, cpu, texts in rows:
        acc = [accuracy(t, r) for t, r in zip(truths, texts, strict=True)]
        print(
            f"{name:14} {wall:8.1f} {cpu:8.1f} {n / wall:8.3f} {n / cpu:12.3f} "
            f"{min(acc):.4f}-{max(acc):.4f}"
        )
    if len(rows) == 2:
        print(f"ocrmypdf's cpu time over ours: {rows[1][2] / rows[0][2]:.2f}x (above 1: faster)")
    else:
        print("ocrmypdf is not installed (apt-get install ocrmypdf): ours alone")


if __name__ == "__main__":
    main()
