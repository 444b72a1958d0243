"""The Parquet export: rows a second and peak memory as a run grows (it must stay flat).

    .venv/bin/python bench/export.py [--units 100000,1000000]

Each size runs in a fresh process (its peak resident memory is its own): ``export_rows``
over a synthetic index of that many units, half verification units of 6 claims and half
admission units of 4 candidates, their receipts the real receipts of the sample corpus
(served from memory, so storage latency is left out and the writer itself is measured), into a
local folder. Prints units, rows, seconds, rows/s (wall and CPU: the machine may be shared), peak RSS and the Parquet bytes written.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))


def _receipts() -> dict[str, bytes]:
    """One sealed verification receipt of 6 claims and one admission receipt of 4 decisions."""
    from groundswell.shared.canonical import json_sha256

    def seal(body: dict) -> bytes:
        return json.dumps({**body, "receipt_sha256": json_sha256(body)}).encode()

    cert = {
        "verdict": "grounded",
        "tier": "whitespace",
        "grounded": True,
        "tier_sound": True,
        "scope": "document",
        "policy_fingerprint": "cfea68733030ab6e",
    }
    verify = {
        "kind": "verify",
        "policy": {"verify_fingerprint": "cfea68733030ab6e"},
        "records": [
            {
                "line": i + 1,
                "record": {"id": f"q{i:02d}", "claim": "Net sales rose 5 percent"},
                "certificate": {**cert, "start": 100 * i, "end": 100 * i + 24},
            }
            for i in range(6)
        ],
    }
    decisions = [
        {
            "candidate_id": f"c{i:02d}",
            "field": f"field_{i}",
            "key": None,
            "value": str(1000 + i),
            "unit": "USD",
            "outcome": ("admitted", "needs_verification", "rejected", "admitted")[i],
            "codes": [] if i % 2 else ["SCALE_WORD"],
            "evidence": {"start": 10 * i, "end": 10 * i + 4},
        }
        for i in range(4)
    ]
    admit = {
        "kind": "admit",
        "policy": {"admit_fingerprint": "91c8757574db7ae6"},
        "records": [{"id": d["candidate_id"], "producer": "model-a"} for d in decisions],
        "receipt": {"decisions": decisions},
    }
    return {"receipts/verify/r.json": seal(verify), "receipts/admit/r.json": seal(admit)}


class MemoryStore:
    url = "memory://bench"

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        return self.objects[key]


def one(units: int) -> dict:
    from groundswell.shared.export.service import export_rows
    from groundswell.shared.storage import open_store

    output = MemoryStore(_receipts())

    def rows():
        for i in range(units):
            kind = "verify" if i % 2 == 0 else "admit"
            yield {
                "doc_id": f"doc-{i // 2:08d}",
                "kind": kind,
                "status": "computed",
                "receipt": f"receipts/{kind}/r.json",
            }

    with tempfile.TemporaryDirectory() as folder:
        destination = open_store(folder, None)
        start, cpu = time.perf_counter(), time.process_time()
        manifest = export_rows(rows(), output, None, destination, "bench", "default@1", "now")
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        written = sum(f.bytes for f in manifest.files)
    total = sum(manifest.rows.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "units": units,
        "rows": total,
        "seconds": round(seconds, 2),
        "rows_per_s": round(total / seconds),
        "rows_per_cpu_s": round(total / cpu),
        "peak_rss_mb": round(peak / 2**20, 1),
        "parquet_mb": round(written / 2**20, 1),
        "files": len(manifest.files),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", default="100000,1000000")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    print(
        f"{'units':>9} {'rows':>9} {'s':>7} {'rows/s':>9} {'rows/CPU s':>10} {'peak RSS':>9} "
        f"{'parquet':>8} files"
    )
    for units in (int(u) for u in args.units.split(",")):
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(units)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(done.stdout)
        print(
            f"{r['units']:>9} {r['rows']:>9} {r['seconds']:>7} {r['rows_per_s']:>9} "
            f"{r['rows_per_cpu_s']:>10} "
            f"{r['peak_rss_mb']:>6} MB {r['parquet_mb']:>5} MB {r['files']}"
        )


if __name__ == "__main__":
    main()
