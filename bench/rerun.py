"""An unchanged rerun against the first run: time and S3 requests, on moto's S3 server.

    .venv/bin/python bench/rerun.py                  # 20k units (10k documents)
    .venv/bin/python bench/rerun.py --units 100000   # 100k units (upload alone is minutes)

The corpus is bench/scale.py's tiny documents (a claims and a candidates file each: two
units a document), uploaded to a moto S3 server; both runs are driven in this process
through the pipeline's own operations (plan, batches, finalize) over a private Redis, with a
local output folder, so every corpus request passes botocore's ``_make_api_call`` and is
counted there by operation: body GETs (documents/, claims/, candidates/, labels/), LISTs,
and the rest. Printed: each run's wall and CPU seconds and requests, and the rerun's ratios
against the goals (no body GET, at least 20x faster, LIST requests = listing pages).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from botocore.client import BaseClient  # noqa: E402

from bench.scale import make_corpus  # noqa: E402
from groundswell.shared.runs.models import RunSpec  # noqa: E402
from groundswell.shared.settings import Settings  # noqa: E402
from groundswell.workers.embedded import RedisServer  # noqa: E402
from tests.conftest import S3_CREDENTIALS, moto_endpoint, s3_client  # noqa: E402
from tests.shared.runs.driving import drive  # noqa: E402

BUCKET = "corpus-rerun"
BODIES = ("documents/", "claims/", "candidates/", "labels/")
FOLDERS = BODIES  # the listings planning pages


def counting() -> Counter:
    """Requests naming the corpus bucket, by kind: ``get`` (a body), ``list``, ``other``."""
    seen: Counter = Counter()
    original = BaseClient._make_api_call

    def call(self, operation, params):
        if params.get("Bucket") == BUCKET:
            key = str(params.get("Key", "")).removeprefix("corpus/")
            if operation == "ListObjectsV2":
                seen["list"] += 1
            elif operation == "GetObject" and key.startswith(BODIES):
                seen["get"] += 1
            else:
                seen["other"] += 1
        return original(self, operation, params)

    BaseClient._make_api_call = call
    return seen


def upload(folder: Path, endpoint: str) -> int:
    client = s3_client(endpoint)
    client.create_bucket(Bucket=BUCKET)
    files = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]

    def put(path: Path) -> None:
        key = f"corpus/{path.relative_to(folder).as_posix()}"
        client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())

    with ThreadPoolExecutor(8) as pool:
        for _ in pool.map(put, files):
            pass
    return len(files)


def pages(folder: Path, page_size: int) -> int:
    """Listing pages of planning's folders (an empty or missing folder is one request)."""
    sizes = [len(list((folder / f).glob("*"))) if (folder / f).is_dir() else 0 for f in FOLDERS]
    return sum(max(1, math.ceil(n / page_size)) for n in sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20_000, help="Units (2 a document).")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "gs-bench-rerun"))
    args = parser.parse_args()
    documents = args.units // 2
    work = Path(args.work)
    folder = make_corpus(work / f"corpus-{documents}", documents)
    redis = RedisServer()
    redis.start()
    try:
        with moto_endpoint() as endpoint, tempfile.TemporaryDirectory() as out:
            started = time.monotonic()
            files = upload(folder, endpoint)
            print(f"uploaded {files} files in {time.monotonic() - started:.0f} s", flush=True)
            settings = Settings(
                broker_url=redis.url,
                storage_url=out,
                s3_endpoint_url=endpoint,
                **S3_CREDENTIALS,
            )
            seen = counting()
            spec = RunSpec(corpus=f"s3://{BUCKET}/corpus")
            results = []
            for name in ("first", "rerun"):
                seen.clear()
                wall, cpu = time.monotonic(), time.process_time()
                service, record, _ = drive(settings, spec)
                wall, cpu = time.monotonic() - wall, time.process_time() - cpu
                assert record.state == "succeeded", record
                units = service.summary(record.id)["units"]
                cached = sum(u.get("cached", 0) for u in units.values())
                results.append((wall, cpu, Counter(seen)))
                print(
                    f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU; {cached} units reused; "
                    f"S3 requests: {seen['get']} body GETs, {seen['list']} LISTs, "
                    f"{seen['other']} other",
                    flush=True,
                )
    finally:
        redis.stop()
    (w1, c1, r1), (w2, c2, r2) = results
    listing = pages(folder, settings.list_page_size)
    print(
        f"\n{args.units} units ({documents} documents): the unchanged rerun is "
        f"{w1 / w2:.1f}x faster (wall; goal 20x), {c1 / c2:.1f}x less CPU; "
        f"body GETs {r2['get']} (first run {r1['get']}; goal 0); "
        f"LISTs {r2['list']} for {listing} listing pages (first run {r1['list']}); "
        f"requests {sum(r2.values())} against {sum(r1.values())} "
        f"({sum(r1.values()) / max(1, sum(r2.values())):.0f}x fewer)"
    )


if __name__ == "__main__":
    main()
