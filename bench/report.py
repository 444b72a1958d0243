"""The run report at scale: a page of a synthetic finished run of 1,000 and 10,000 documents.

    .venv/bin/python bench/report.py [--sizes 1000,10000] [--per-page 100] [--reps 3]

Each run (its index, receipts, texts and summary, in memory) is written through the index
writer as finalize writes it (tests/shared/runs/synthetic_run.py builds it); each cell
renders one page of the report (the first page, the last page by cursor, a code that only
two documents have) and prints its time (median of ``--reps``), its size and the objects it
read. A page should cost the same at every size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groundswell.shared.report.pages import ReportQuery  # noqa: E402
from groundswell.shared.report.service import report  # noqa: E402
from groundswell.shared.runs import index as run_index  # noqa: E402
from tests.shared.runs.synthetic_run import synthetic_run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--per-page", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(f"{'documents':>9}  {'page':<12} {'ms':>7} {'KB':>7} {'reads':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        service, record = synthetic_run(size, rare_every=max(size * 2 // 5, 1))
        store = service.store(None)
        last = f"doc-{size - args.per_page - 1:05d}"
        for name, query in (
            ("first", {}),
            ("last", {"after": last}),
            ("rare code", {"code": "RARE_CODE"}),
        ):
            times, page = [], ""
            for _ in range(args.reps):
                run_index._manifests.clear()
                run_index._pieces.clear()
                store.gets.clear()
                start = time.perf_counter()
                page = report(service, record, ReportQuery(per_page=args.per_page, **query))
                times.append(time.perf_counter() - start)
            print(
                f"{size:>9}  {name:<12} {1000 * statistics.median(times):>7.1f}"
                f" {len(page.encode()) / 1000:>7.1f} {store.reads:>6}"
            )


if __name__ == "__main__":
    main()
