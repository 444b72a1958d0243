"""Benchmark: groundswell's repair cascade against gtrex 1.1.0's on the same near-miss claims.

Documents as in ``bench/verify.py`` (a real 10-K of about 200 KB; about 1 MB of real SEC
filings joined end to end; read from ../shared/corpus, never copied). Each gets 100 claims per
category, fixed seed: verbatim and case-changed spans (accepted / normalized at verification),
near misses (dropped word, swapped word, changed figure: the alignment stage and its guards),
stitched quotations, plausible and unrelated fabrications, two-word misses.

Each engine runs in its own fresh process per document, under its DEFAULT policy with the
default threshold 0.65 (substitute mode), and every result is compared: action, stage, stored
text, the after-certificate's offsets and the alignment's score. Reported: CPU for the whole
document (preparation included: ladder, alignment index, guard views) and per claim, the ratio,
and peak RSS. Not a test; run it with ``python bench/repair.py``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from verify import ClaimMaker, document, floor  # noqa: E402  (bench/verify.py: inputs, floor)

SIZES = ("200KB", "1MB")
CATEGORIES = (
    "exact",
    "case",
    "near_miss_drop_word",
    "near_miss_swap_word",
    "near_miss_number",
    "stitched",
    "fabricated_plausible",
    "fabricated_unrelated",
    "short_2tok_miss",
)
PER_CATEGORY = 100


def claims_for(text: str) -> list[str]:
    maker = ClaimMaker(text, seed=20261130)
    out = [maker.make(c) for c in CATEGORIES for _ in range(PER_CATEGORY)]
    maker.rng.shuffle(out)
    return out


def worker(engine: str, size: str, out_path: str) -> None:
    text, _ = document(size)
    claims = claims_for(text)
    warnings.simplefilter("ignore")  # the default-threshold warning, once per document
    if engine == "gtrex":
        import gtrex

        def make(doc: str):
            return gtrex.Repairer(doc, gtrex.DEFAULT)
    else:
        from groundswell.shared.repair import Repairer, get_repair_policy
        from groundswell.shared.text.unicode import tables

        tables()  # per-process Unicode tables, not per document
        policy = get_repair_policy("default")

        def make(doc: str):
            return Repairer(doc, policy, warn=False)

    t0 = time.process_time()
    repairer = make(text)
    results = []
    for claim in claims:
        d = repairer.repair(claim).as_dict()
        after = d["after"] or {}
        alignment = d.get("alignment") or {}
        results.append(
            [d["action"], d["stage"], after.get("start"), after.get("end"), alignment.get("score")]
        )
    total = time.process_time() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    floor_cpu = None
    if engine == "groundswell":  # verification's floor on the same input (bench/verify.py)
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "doc.txt"
            path.write_text(text, encoding="utf-8")
            floor_cpu = min((floor(path, claims) for _ in range(3)), key=sum)
    Path(out_path).write_text(
        json.dumps(
            {
                "chars": len(text),
                "claims": len(claims),
                "total_cpu": total,
                "peak_mb": peak_mb,
                "floor_cpu": floor_cpu,
                "results": results,
            }
        ),
        encoding="utf-8",
    )


def run(engine: str, size: str) -> dict:
    out = REPO / "bench" / f".repair-{engine}-{size}.json"
    subprocess.run(
        [sys.executable, __file__, "--worker", engine, size, str(out)], check=True, cwd=REPO
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("ENGINE", "SIZE", "OUT"))
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=SIZES)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    print(f"{'document':<10}{'claims':>8}{'gtrex CPU s':>13}{'ours CPU s':>12}"
          f"{'ms/claim (g/o)':>17}{'ratio':>8}{'RSS MB (g/o)':>15}  agreement")  # fmt: skip
    for size in args.sizes:
        theirs = run("gtrex", size)
        ours = run("groundswell", size)
        n = ours["claims"]
        agree = sum(a == b for a, b in zip(ours["results"], theirs["results"], strict=True))
        actions: dict[str, int] = {}
        for action, stage, *_ in ours["results"]:
            actions[f"{action}/{stage}"] = actions.get(f"{action}/{stage}", 0) + 1
        ratio = theirs["total_cpu"] / ours["total_cpu"]
        print(
            f"{size:<10}{n:>8}{theirs['total_cpu']:>13.2f}{ours['total_cpu']:>12.2f}"
            f"{1000 * theirs['total_cpu'] / n:>9.2f}/{1000 * ours['total_cpu'] / n:<7.2f}"
            f"{ratio:>7.1f}x{theirs['peak_mb']:>8.0f}/{ours['peak_mb']:<6.0f}  {agree}/{n}"
        )
        print("          " + ", ".join(f"{k} {v}" for k, v in sorted(actions.items())))
        prep, finds = ours["floor_cpu"]
        print(
            f"          floor: reading and one normalisation per tier {prep:.3f} s, str.find "
            f"of each claim per tier {finds:.3f} s; ours {ours['total_cpu'] / prep:.1f}x the "
            f"preparation, {ours['total_cpu'] / (prep + finds):.2f}x the whole floor"
        )


if __name__ == "__main__":
    main()
