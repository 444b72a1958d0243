"""Benchmark: groundswell's verification engine against gtrex 1.1.0 on real filing text.

Documents (from ../shared/corpus, never copied): one real 10-K of about 200 KB, and about 1 MB
and 5 MB of real SEC filings joined end to end (no single filing is that large). Each document
gets 1,100 claims, 100 per category, generated with a fixed seed: verbatim spans, spans with
layout whitespace, typography and case variants, plausible and unrelated fabrications, near
misses (dropped word, swapped word, changed figure), stitched quotations and two-word misses.

Each engine runs in its own fresh process per document (so peak RSS is its own), under the
DEFAULT policy of each, and every certificate is compared: verdicts, tiers and offsets must
agree. Reported: CPU per claim (document preparation included), the first claim's latency on a
fresh verifier (a verbatim claim, and a miss, which needs every tier), the costliest claim of the
second half (both engines warm), three claims that occur only inside words (every occurrence is
found and refused: the worst case of the search), and peak RSS; the floor on the same input
(``floor``); then each command line end to end on the 1 MB document and on one claim (its
start-up), CPU seconds of the child process (``command_line``; ``--cli`` prints only that).
Not a test; run it with ``python bench/verify.py``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SIZES = {"200KB": 200_000, "1MB": 1_000_000, "5MB": 5_000_000}
CLAIMS_PER_CATEGORY = 100
CATEGORIES = (
    "exact",
    "whitespace",
    "typography",
    "case",
    "fabricated_plausible",
    "fabricated_unrelated",
    "near_miss_drop_word",
    "near_miss_swap_word",
    "near_miss_number",
    "stitched",
    "short_2tok_miss",
)
_WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "so no out up what about into than them can only other time new some could these two may "
    "first then do any like my now over such our man me even most made after also did many "
    "before must through back years where much your way down should because each just those "
    "people how too little state good very make world still own see men work long get here "
    "between both life being under never day same another know while last might us great old "
    "year off come since against go came right used take three"
)
COMMON_WORDS = tuple(_WORDS.split())
TYPOGRAPHIC = re.compile("[\u2018\u2019\u201c\u201d\u2013\u2014\u00a0]")
FOLD_TABLE = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u2013": "-",
    "\u2014": "-",
    "\u00a0": " ",
}
FOLD = str.maketrans(FOLD_TABLE)


def corpus_dir() -> Path:
    from groundswell.shared.settings import get_settings

    return get_settings().shared_corpus


def document(size: str) -> tuple[str, list[str]]:
    """The benchmark document of ``size`` and the filings it is made of."""
    root = corpus_dir()
    rows = [
        json.loads(line)
        for line in (root / "index.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    if size == "200KB":
        ids = ["sec-aapl-10k-2024-11-01"]
    else:
        filings = sorted(
            r["id"]
            for r in rows
            if r["part"] == "sec_edgartools" and r["kind"] in ("10-K", "10-Q", "20-F")
        )
        ids, total = [], 0
        for doc_id in filings:
            if total >= SIZES[size]:
                break
            ids.append(doc_id)
            total += next(r["length_chars"] for r in rows if r["id"] == doc_id) + 2
    parts = [(root / "documents" / f"{i}.txt").read_text(encoding="utf-8") for i in ids]
    text = "\n\n".join(parts)
    if len(text) > SIZES[size] * 1.05:
        # Cut at the first line end past the target size.
        cut = text.find("\n", SIZES[size])
        text = text[: cut if cut != -1 else SIZES[size]]
    return text, ids


class ClaimMaker:
    def __init__(self, text: str, seed: int) -> None:
        self.text = text
        self.rng = random.Random(seed)
        self.words = [m.span() for m in re.finditer(r"\S+", text)]
        self.vocab = sorted({text[a:b] for a, b in self.words[::7] if text[a:b].isalpha()})

    def span(self, lo: int = 8, hi: int = 25, want: re.Pattern[str] | None = None) -> str:
        for _ in range(2000):
            i = self.rng.randrange(len(self.words) - hi)
            n = self.rng.randint(lo, hi)
            a, b = self.words[i][0], self.words[i + n - 1][1]
            s = self.text[a:b]
            if want is None or want.search(s):
                return s
        return s

    def make(self, category: str) -> str:
        rng = self.rng
        if category == "exact":
            return self.span()
        if category == "whitespace":
            return " ".join(self.span(want=re.compile(r"\n|  |\u00a0")).split())
        if category == "typography":
            return " ".join(self.span(want=TYPOGRAPHIC).translate(FOLD).split())
        if category == "case":
            return " ".join(self.span().translate(FOLD).split()).lower()
        if category == "fabricated_plausible":
            a, b = self.span().split(), self.span().split()
            return " ".join(a[: len(a) // 2] + b[len(b) // 2 :])
        if category == "fabricated_unrelated":
            return " ".join(rng.choice(COMMON_WORDS) for _ in range(rng.randint(8, 20)))
        words = self.span().split()
        if category == "near_miss_drop_word":
            del words[rng.randrange(1, len(words) - 1)]
            return " ".join(words)
        if category == "near_miss_swap_word":
            words[rng.randrange(1, len(words) - 1)] = rng.choice(self.vocab)
            return " ".join(words)
        if category == "near_miss_number":
            s = self.span(want=re.compile(r"\d"))
            digits = [m.start() for m in re.finditer(r"\d", s)]
            i = rng.choice(digits)
            return s[:i] + str((int(s[i]) + rng.randint(1, 9)) % 10) + s[i + 1 :]
        if category == "stitched":
            return self.span(8, 14) + " ... " + self.span(8, 14)
        if category == "short_2tok_miss":
            return f"{rng.choice(self.vocab).lower()} {rng.choice(COMMON_WORDS)}ed"
        raise ValueError(category)

    def claims(self) -> list[tuple[str, str]]:
        out = [(c, self.make(c)) for c in CATEGORIES for _ in range(CLAIMS_PER_CATEGORY)]
        self.rng.shuffle(out)
        return out


IN_WORD = ("e", "ing", "tion of")
FIRST_EXACT = "exact"
FIRST_MISS = "fabricated_unrelated"


def floor(path: Path, claims: list[str]) -> tuple[float, float]:
    """The floor on this input, CPU seconds: read and decode the document once, normalise it
    once per tier of the default ladder with the fastest standard-library primitives (split
    and join, html.unescape, one translate, NFKC, casefold, one regex for the skeleton), and
    find each claim in each tier's text with ``str.find`` (the claim normalised likewise).
    No offsets, boundaries or certificates. Returns (preparing the tiers, the finds): the
    first is what any verifier must spend on a document it has not seen; the second what a
    verifier without an index spends on the claims."""
    import html
    import unicodedata

    fold = str.maketrans({**FOLD_TABLE, "\u2212": "-", "\u00ad": ""})
    not_alnum = re.compile(r"[\W_]+")

    def tiers(x: str) -> list[str]:
        ws = " ".join(x.split())
        typo = " ".join(unicodedata.normalize("NFKC", html.unescape(ws).translate(fold)).split())
        case = typo.casefold()
        return [x, ws, typo, case, not_alnum.sub("", case)]

    t0 = time.process_time()
    texts = tiers(path.read_bytes().decode("utf-8"))
    t1 = time.process_time()
    for claim in claims:
        for text, needle in zip(texts, tiers(claim), strict=True):
            text.find(needle)
    return t1 - t0, time.process_time() - t1


def worker(engine: str, size: str, out_path: str) -> None:
    """Run one engine over one document in this (fresh) process and write the results."""
    text, _ = document(size)
    claims = ClaimMaker(text, seed=20261129).claims()
    if engine == "gtrex":
        import gtrex

        def make(doc: str):
            return gtrex.Verifier(doc, gtrex.DEFAULT)
    else:
        from groundswell.shared.text.unicode import tables
        from groundswell.shared.verify import DEFAULT, Verifier

        tables()  # per-process Unicode tables, not per document

        def make(doc: str):
            return Verifier(doc, DEFAULT)

    # First-claim latency: fresh verifiers, a verbatim claim and a miss.
    first = {}
    for label, category in (("exact", FIRST_EXACT), ("miss", FIRST_MISS)):
        claim = next(c for cat, c in claims if cat == category)
        t0 = time.process_time()
        make(text).verify(claim)
        first[label] = time.process_time() - t0

    t0 = time.process_time()
    verifier = make(text)
    results = []
    worst = 0.0
    worst_claim = ""
    for n, (_, claim) in enumerate(claims):
        c0 = time.process_time()
        d = verifier.verify(claim).as_dict()
        spent = time.process_time() - c0
        # Early claims pay for normalizing the document (lazily, tier by tier); "worst" is the
        # costliest claim of the second half, once both engines are warm.
        if n >= len(claims) // 2 and spent > worst:
            worst, worst_claim = spent, claim
        results.append([d["verdict"], d["tier"], d["start"], d["end"]])
    total = time.process_time() - t0

    # Claims that occur only inside words: every occurrence is found and refused.
    inword = {}
    for claim in IN_WORD:
        c0 = time.process_time()
        d = verifier.verify(claim).as_dict()
        inword[claim] = time.process_time() - c0
        results.append([d["verdict"], d["tier"], d["start"], d["end"]])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    floor_cpu = None
    if engine == "groundswell":  # the floor on the same input, once the peak is taken
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "doc.txt"
            path.write_text(text, encoding="utf-8")
            floor_cpu = min((floor(path, [c for _, c in claims]) for _ in range(3)), key=sum)
    Path(out_path).write_text(
        json.dumps(
            {
                "chars": len(text),
                "claims": len(claims),
                "total_cpu": total,
                "first": first,
                "worst": worst,
                "worst_claim": worst_claim[:60],
                "in_word": inword,
                "peak_mb": peak_mb,
                "floor_cpu": floor_cpu,
                "results": results,
            }
        ),
        encoding="utf-8",
    )


def run(engine: str, size: str) -> dict:
    out = REPO / "bench" / f".verify-{engine}-{size}.json"
    subprocess.run(
        [sys.executable, __file__, "--worker", engine, "--size", size, "--out", str(out)],
        check=True,
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--worker", choices=("gtrex", "groundswell"))
    parser.add_argument("--size", choices=tuple(SIZES))
    parser.add_argument("--out")
    parser.add_argument("--cli", action="store_true", help="Only the command-line rows.")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.size, args.out)
        return
    if args.cli:
        print(command_line())
        return

    rows = []
    for size in args.sizes.split(","):
        theirs = run("gtrex", size)
        ours = run("groundswell", size)
        agree = sum(a == b for a, b in zip(theirs["results"], ours["results"], strict=True))
        rows.append((size, theirs, ours, agree))

    def ms(x: float) -> str:
        return f"{x * 1000:,.2f}"

    def ratio(a: float, b: float) -> str:
        return f"{a / max(b, 1e-6):,.1f}x"

    in_word = " / ".join(repr(c) for c in IN_WORD)
    header = (
        "| document | engine | CPU ms/claim | claims/s | first claim ms (verbatim / miss)"
        f" | worst warm claim ms | in-word claims ms ({in_word}) | peak RSS MB |"
    )
    lines = [
        f"{CLAIMS_PER_CATEGORY * len(CATEGORIES):,} claims per document "
        f"({CLAIMS_PER_CATEGORY} per category), CPU time, each engine in a fresh process.",
        "",
        header,
        "|" + "---|" * 8,
    ]
    for size, theirs, ours, _ in rows:
        for name, d in (("gtrex 1.1.0", theirs), ("groundswell", ours)):
            per = d["total_cpu"] / d["claims"]
            words = " / ".join(ms(d["in_word"][c]) for c in IN_WORD)
            lines.append(
                f"| {size} ({d['chars']:,} chars) | {name} | {ms(per)} | {1 / per:,.0f} "
                f"| {ms(d['first']['exact'])} / {ms(d['first']['miss'])} | {ms(d['worst'])} "
                f"| {words} | {d['peak_mb']:,.0f} |"
            )
    lines += [
        "",
        "| document | throughput | first claim (verbatim / miss) | worst warm claim"
        " | in-word claims | peak RSS | same verdict, tier, offsets |",
        "|" + "---|" * 7,
    ]
    for size, theirs, ours, agree in rows:
        lines.append(
            f"| {size} | {ratio(theirs['total_cpu'], ours['total_cpu'])} "
            f"| {ratio(theirs['first']['exact'], ours['first']['exact'])} / "
            f"{ratio(theirs['first']['miss'], ours['first']['miss'])} "
            f"| {ratio(theirs['worst'], ours['worst'])} "
            f"| {ratio(sum(theirs['in_word'].values()), sum(ours['in_word'].values()))} "
            f"| {ratio(theirs['peak_mb'], ours['peak_mb'])} "
            f"| {agree:,} of {len(ours['results']):,} |"
        )
    lines.append("")
    lines.append("Ratios are gtrex / groundswell: above 1 means groundswell is faster or smaller.")
    lines.append("")
    for size, theirs, ours, _ in rows:
        prep, finds = ours["floor_cpu"]
        lines.append(
            f"floor {size}: reading and one normalisation per tier {prep:.3f} s, then str.find "
            f"of each claim in each tier {finds:.3f} s (together {prep + finds:.3f}); "
            f"groundswell {ours['total_cpu']:.3f} s = {ours['total_cpu'] / prep:.1f}x the "
            f"preparation, {ours['total_cpu'] / (prep + finds):.2f}x the whole floor; gtrex "
            f"{theirs['total_cpu'] / (prep + finds):.1f}x the whole floor"
        )
    lines.append("")
    lines.append(command_line())
    print("\n".join(lines))


def interleaved_cpu(commands: dict[str, list[str]], env: dict[str, str], repeat: int) -> dict:
    """Best CPU seconds of each command over ``repeat`` rounds, the commands taking turns in
    each round (after one untimed round, which makes the per-user caches: bytecode, Unicode
    tables), so a busy spell of the machine weighs on all alike: start-up is a twentieth of a
    second, and one noisy run would decide a ratio of two."""
    best = dict.fromkeys(commands, float("inf"))
    for n in range(repeat + 1):
        for name, args in commands.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(args, capture_output=True, check=True, env=env)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if n:
                spent = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
                best[name] = min(best[name], spent)
    return best


def command_line(size: str = "1MB", repeat: int = 3, startup_repeat: int = 15) -> str:
    """Each command line end to end, CPU seconds: ``verify`` of the benchmark's claims on one
    document, and of one claim on a one-line source (start-up), under the default policy, with
    an empty store of our own (nothing published: the built-in is meant)."""
    import os
    import tempfile

    text, _ = document(size)
    claims = ClaimMaker(text, seed=20261129).claims()
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        work = Path(tmp)
        (work / "doc.txt").write_text(text, encoding="utf-8")
        rows = [{"id": n, "claim": c, "source_path": "doc.txt"} for n, (_, c) in enumerate(claims)]
        (work / "claims.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
        )
        one = {"id": 1, "claim": "net sales rose", "source": "In 2024 net sales rose 2%."}
        (work / "one.jsonl").write_text(json.dumps(one) + "\n", encoding="utf-8")
        env = {**os.environ, "GROUNDSWELL_STORAGE_URL": str(work / "store")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
        cpu, outputs = {}, {}

        def command(tool: str, name: str) -> list[str]:
            out = str(work / f"{tool}-{name}.jsonl")
            return [
                str(bin_dir / tool),
                "verify",
                str(work / f"{name}.jsonl"),
                "--root",
                tmp,
                "-o",
                out,
            ]

        load = [os.getloadavg()[0]]
        # both tools best of ``repeat``, taking turns: a busy spell weighs on both alike
        runs = interleaved_cpu(
            {t: command(t, "claims") for t in ("groundswell", "gtrex")}, env, repeat
        )
        load.append(os.getloadavg()[0])
        one = interleaved_cpu(
            {
                **{t: command(t, "one") for t in ("groundswell", "gtrex")},
                "python": [sys.executable, "-c", "pass"],  # the interpreter both start
            },
            env,
            startup_repeat,
        )
        load.append(os.getloadavg()[0])
        for tool in ("groundswell", "gtrex"):
            cpu[tool, "claims"] = runs[tool]
            cpu[tool, "one"] = one[tool]
        for tool, key in (("groundswell", "groundswell"), ("gtrex", "gtrex")):
            outputs[tool] = [
                [json.loads(line)[key][k] for k in ("verdict", "tier", "start", "end")]
                for line in (work / f"{tool}-claims.jsonl").read_text().splitlines()
            ]
    cpu["python"] = one["python"]
    agree = sum(a == b for a, b in zip(outputs["gtrex"], outputs["groundswell"], strict=True))
    ours, theirs = cpu["groundswell", "claims"], cpu["gtrex", "claims"]
    one_ours, one_theirs = cpu["groundswell", "one"], cpu["gtrex", "one"]
    return (
        f"Command line, CPU s (`verify CLAIMS -o OUT`, {len(claims):,} claims on the {size} "
        f"document; best of {repeat}, the two taking turns): groundswell {ours:.3f}, gtrex "
        f"{theirs:.3f}: {theirs / ours:.1f}x; same verdict, tier, offsets {agree:,} of "
        f"{len(claims):,}\n"
        f"Start-up, CPU s (`verify` of one claim on a one-line source, best of "
        f"{startup_repeat}, the two taking turns): "
        f"groundswell {one_ours:.3f}, gtrex {one_theirs:.3f}: {one_theirs / one_ours:.2f}x "
        f"(the interpreter alone, `python -c pass`: {cpu['python']:.3f}); "
        f"so the {size} run is groundswell {one_ours:.3f} start-up + {ours - one_ours:.3f} "
        f"work, gtrex {one_theirs:.3f} + {theirs - one_theirs:.3f}\n"
        f"load average (1 min) at the start, between and at the end: "
        f"{' / '.join(f'{x:.1f}' for x in load)} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
