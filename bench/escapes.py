"""Escapes, right values admitted, reviews and false rejections, per admission policy and family.

    .venv/bin/python bench/escapes.py [--policy default --policy guarded ...] [--seed 14]
                                      [--split dev|holdout|both] [--oracle N] [--json FILE]
                                      [--limit-docs N] [--examples K]

The labelled set is made at run time from ``../shared/corpus`` by ``bench/escapes_data.py``:
right values from TAT-QA's gold facts, and wrong values planted in eleven families (see that
module). Every packet is decided under each policy named (``default``: groundswell's
groundgate-compatible admission; ``guarded``: the guards of ``shared/guarded`` over it; an
unknown policy is skipped with a message).
For each policy, split (development and hold-out, by document-id hash) and family, it prints:

    escapes       wrong values admitted without review (count and % of wrong values)
    right adm.    right values admitted (% of right values)
    right rev.    right values sent to review (needs_verification)
    right rej.    right values rejected

with totals, then, under ``default``, the codes and the evidence shapes behind the escapes and
the flags that send right values to review. ``--oracle N`` also decides N packets, spread over
the set, with the installed groundgate (a dev-only oracle) and requires identical receipts.
A policy other than ``default`` is run by ``groundswell.shared.admit.admitter_for(policy,
document, schema)``, as the pipeline runs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.escapes_data import FAMILIES, SPLITS, Packet, labelled_packets  # noqa: E402
from groundswell.shared.admit import Admitter  # noqa: E402

OUTCOMES = ("admitted", "needs_verification", "rejected")


def admitter_factory(ref: str) -> Any:
    """A function (document, schema) -> object with ``admit(candidates)``, or None (with a
    message) when the policy does not exist here yet."""
    if ref == "default":
        return lambda document, schema: Admitter(document, schema, None)
    from groundswell.shared import admit as admit_pkg
    from groundswell.shared.policies import PolicyError, resolve_policy

    try:
        policy = resolve_policy(ref)
    except PolicyError as exc:
        print(f"policy {ref}: skipped ({exc})", file=sys.stderr)
        return None
    return lambda document, schema: admit_pkg.admitter_for(policy, document, schema)


def _shape(cand: dict[str, Any]) -> str:
    """The evidence shape of a candidate: the value item (row/sentence or cell) and roles."""
    items = cand["evidence"]
    value = items[0]
    span = "cell" if len(value["text"]) <= 16 and "\t" not in value["text"] else "row/sentence"
    kind = "offsets" if "start" in value else "quote"
    roles = sorted(i["role"] for i in items[1:])
    return f"{span} ({kind})" + (" + " + "+".join(roles) if roles else "")


class Tally:
    def __init__(self) -> None:
        # (policy, split, family) -> {"right"/"wrong": Counter(outcome)}
        self.counts: dict[tuple[str, str, str], dict[str, Counter]] = defaultdict(
            lambda: {"right": Counter(), "wrong": Counter()}
        )
        # (policy, split, family) -> Counter of codes / shapes
        self.escape_codes: dict[tuple, Counter] = defaultdict(Counter)
        self.escape_shapes: dict[tuple, Counter] = defaultdict(Counter)
        self.escape_contexts: dict[tuple, Counter] = defaultdict(Counter)
        self.review_codes: dict[tuple, Counter] = defaultdict(Counter)
        self.reject_codes: dict[tuple, Counter] = defaultdict(Counter)
        self.examples: dict[tuple, list] = defaultdict(list)
        # (policy, split) -> Counter of the codes that sent a right value default admits away
        self.lost: dict[tuple, Counter] = defaultdict(Counter)
        # (policy, split) -> how many of those lost right values, and of the escapes, are of a
        # field that names no column (no key, no year name) while the evidence or row holds
        # several values: nothing in the schema picks the cell
        self.no_column: dict[tuple, Counter] = defaultdict(Counter)
        # (policy, split) -> the lost right values sent away by a contradiction, in words
        self.exceptions: dict[tuple, list[str]] = defaultdict(list)

    def add(
        self,
        policy: str,
        p: Packet,
        decisions: list[dict[str, Any]],
        keep: int,
        base: dict[str, str] | None = None,
    ) -> None:
        """Count one packet's decisions; ``base`` (candidate id -> outcome under default)
        counts the right values default admits and this policy does not, by code."""
        by_id = {c["id"]: c for c in p.candidates}
        for d in decisions:
            cid = d["candidate_id"]
            right = p.labels.get(cid)
            if right is None:
                continue  # not labelled (or "not sure"): counted in neither
            unnamed = not _names_column(p.schema, by_id[cid])
            if right and base is not None and base.get(cid) == "admitted" != d["outcome"]:
                self.lost[(policy, p.split)]["+".join(d["codes"])] += 1
                if unnamed and "CELL_AMBIGUOUS" in d["codes"]:
                    self.no_column[(policy, p.split)]["lost"] += 1
                if "CELL_AMBIGUOUS" not in d["codes"]:
                    c = by_id[cid]
                    said = "; ".join(f["detail"] for f in d.get("guard") or [] if "detail" in f)
                    self.exceptions[(policy, p.split)].append(
                        f"{p.doc_id} {cid} {c['field']}={c['value']} ({'+'.join(d['codes'])}): "
                        f"{said}"
                    )
            if not right and d["outcome"] == "admitted" and unnamed:
                self.no_column[(policy, p.split)]["escapes"] += 1
            key = (policy, p.split, p.family)
            self.counts[key]["right" if right else "wrong"][d["outcome"]] += 1
            codes = "+".join(d["codes"]) or "(no code)"
            if not right and d["outcome"] == "admitted":
                self.escape_codes[key][codes] += 1
                self.escape_shapes[key][_shape(by_id[cid])] += 1
                self.escape_contexts[key][p.context] += 1
                if len(self.examples[key]) < keep:
                    self.examples[key].append(by_id[cid])
            if right and d["outcome"] == "needs_verification":
                for c in d["codes"]:
                    self.review_codes[key][c] += 1
                for m in d.get("missing") or []:
                    self.review_codes[key][f"missing:{m}"] += 1
            if right and d["outcome"] == "rejected":
                self.reject_codes[key][codes] += 1


def _names_column(schema: dict[str, Any], cand: dict[str, Any]) -> bool:
    """Whether the candidate's field names a column: its schema keys the field (and the
    candidate gives a key), or a name of the field is a year."""
    spec = (schema.get("fields") or {}).get(cand.get("field")) or {}
    if spec.get("keys") and cand.get("key"):
        return True
    return any(
        str(a).strip().isdigit() and len(str(a).strip()) == 4 for a in spec.get("aliases") or []
    )


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def rows_for(tally: Tally, policy: str, split: str) -> list[dict[str, Any]]:
    rows = []
    total = {"right": Counter(), "wrong": Counter()}
    for fam in FAMILIES:
        c = tally.counts.get((policy, split, fam))
        if c is None:
            continue
        total["right"].update(c["right"])
        total["wrong"].update(c["wrong"])
        rows.append(_row(fam, c))
    rows.append(_row("total", total))
    return rows


def _row(name: str, c: dict[str, Counter]) -> dict[str, Any]:
    r, w = c["right"], c["wrong"]
    nr, nw = sum(r.values()), sum(w.values())
    return {
        "family": name,
        "wrong": nw,
        "escapes": w["admitted"],
        "escapes_pct": round(100 * w["admitted"] / nw, 2) if nw else None,
        "wrong_review": w["needs_verification"],
        "wrong_rejected": w["rejected"],
        "right": nr,
        "right_admitted": r["admitted"],
        "right_admitted_pct": round(100 * r["admitted"] / nr, 2) if nr else None,
        "right_review": r["needs_verification"],
        "right_review_pct": round(100 * r["needs_verification"] / nr, 2) if nr else None,
        "right_rejected": r["rejected"],
        "right_rejected_pct": round(100 * r["rejected"] / nr, 2) if nr else None,
    }


def markdown(rows: list[dict[str, Any]], policy: str, split: str) -> str:
    out = [
        f"**{policy}, {'hold-out' if split == 'holdout' else 'development'}**",
        "",
        "| family | wrong | escapes | right | right admitted | right to review | right rejected |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        name = f"**{r['family']}**" if r["family"] == "total" else r["family"]
        esc = f"{r['escapes']} ({_pct(r['escapes'], r['wrong'])})" if r["wrong"] else "-"
        if r["right"]:
            adm = f"{r['right_admitted']} ({_pct(r['right_admitted'], r['right'])})"
            rev = f"{r['right_review']} ({_pct(r['right_review'], r['right'])})"
            rej = f"{r['right_rejected']} ({_pct(r['right_rejected'], r['right'])})"
        else:
            adm = rev = rej = "-"
        out.append(f"| {name} | {r['wrong']} | {esc} | {r['right']} | {adm} | {rev} | {rej} |")
    return "\n".join(out)


def _merge(counters: list[Counter]) -> Counter:
    out: Counter = Counter()
    for c in counters:
        out.update(c)
    return out


def analysis(tally: Tally, policy: str, splits: list[str], top: int = 4) -> str:
    lines = [f"Escapes under {policy} (codes of the admitted wrong values; evidence shapes):"]
    for fam in FAMILIES:
        codes = _merge([tally.escape_codes.get((policy, s, fam), Counter()) for s in splits])
        shapes = _merge([tally.escape_shapes.get((policy, s, fam), Counter()) for s in splits])
        where = _merge([tally.escape_contexts.get((policy, s, fam), Counter()) for s in splits])
        if not codes:
            continue
        lines.append(
            f"  {fam:14} {sum(codes.values()):5}  codes: "
            + ", ".join(f"{k} {v}" for k, v in codes.most_common(top))
        )
        lines.append(
            "  " + " " * 20 + "shapes: " + ", ".join(f"{k} {v}" for k, v in shapes.most_common(top))
        )
        lines.append(
            "  " + " " * 20 + "where: " + "; ".join(f"{k} {v}" for k, v in where.most_common(top))
        )
    lines.append(
        f"Right values sent to review under {policy} (flags and missing parts, by family):"
    )
    for fam in FAMILIES:
        codes = _merge([tally.review_codes.get((policy, s, fam), Counter()) for s in splits])
        if codes:
            lines.append(
                f"  {fam:14} " + ", ".join(f"{k} {v}" for k, v in codes.most_common(top + 2))
            )
    rej = _merge(
        [tally.reject_codes.get((policy, s, f), Counter()) for s in splits for f in FAMILIES]
    )
    if rej:
        lines.append(
            f"Right values rejected under {policy}: "
            + ", ".join(f"{k} {v}" for k, v in rej.most_common(top + 2))
        )
    return "\n".join(lines)


def real_evaluation(refs: list[str]) -> dict[str, Any]:
    """The real extractions of ``bench/real/afr`` (bench/escapes_real.py) decided by
    groundgate 0.11.0 (the installed oracle) and by each policy: per split, the counts, the
    escapes, and each right value that groundgate admits and the policy does not."""
    import groundgate

    from bench.escapes_real import real_packets

    packets = list(real_packets())
    deciders: dict[str, Any] = {
        f"groundgate {groundgate.__version__}": lambda doc, schema, cands: groundgate.admit(
            doc, schema, cands
        ).to_dict()
    }
    for ref in refs:
        factory = admitter_factory(ref)
        if factory is not None:
            deciders[ref] = lambda doc, schema, cands, f=factory: f(doc, schema).admit(cands)
    out: dict[str, Any] = {"packets": len(packets), "splits": {}}
    oracle = next(iter(deciders))
    for split in sorted({p.split for p in packets}):  # dev, holdout, holdout_2, ...
        part = [p for p in packets if p.split == split]
        rows, escapes, lost = [], [], []
        oracle_admits: set[tuple[str, str, str]] = set()
        for name, decide in deciders.items():
            c = {"right": Counter(), "wrong": Counter()}
            for p in part:
                for d in decide(p.document, p.schema, p.candidates)["decisions"]:
                    right = p.labels.get(d["candidate_id"])
                    if right is None:
                        continue
                    c["right" if right else "wrong"][d["outcome"]] += 1
                    at = (p.doc_id, p.context, d["candidate_id"])
                    if name == oracle and right and d["outcome"] == "admitted":
                        oracle_admits.add(at)
                    where = f"{p.doc_id} {d['candidate_id']} {d['field']}={d['value']}"
                    if not right and d["outcome"] == "admitted":
                        escapes.append(f"{name}: {where}")
                    if name != oracle and at in oracle_admits and d["outcome"] != "admitted":
                        lost.append(f"{name}: {where} ({'+'.join(d['codes'])})")
            rows.append(_row(name, c))
        docs = sorted({p.doc_id for p in part})
        out["splits"][split] = {"documents": docs, "rows": rows, "escapes": escapes, "lost": lost}
    return out


def real_markdown(real: dict[str, Any]) -> str:
    out = [
        f"Real extractions (bench/real/afr: {real['packets']} runs of 4 models over agency "
        "statements, labelled by a person), against groundgate:"
    ]
    names = {
        "dev": "development",
        "holdout": "hold-out",
        "holdout_2": "hold-out 2",
        "holdout_3": "hold-out 3",
        "holdout_4": "hold-out 4",
    }
    for split, part in real["splits"].items():
        out += [
            "",
            f"**{names.get(split, split)}** ({', '.join(part['documents'])})",
            "",
            "| decision | wrong | escapes | right | right admitted | right to review | "
            "right rejected |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in part["rows"]:
            out.append(
                f"| {r['family']} | {r['wrong']} | {r['escapes']} | {r['right']} | "
                f"{r['right_admitted']} | {r['right_review']} | {r['right_rejected']} |"
            )
        for line in part["escapes"]:
            out.append(f"  escape  {line}")
        for line in part["lost"] or ["(none)"]:
            out.append(f"  right value groundgate admits, sent away: {line}")
    return "\n".join(out)


def run_oracle(sample: list[Packet]) -> tuple[int, int, list[str]]:
    import groundgate

    same, problems = 0, []
    for p in sample:
        ours = Admitter(p.document, p.schema, None).admit(p.candidates)
        theirs = groundgate.admit(p.document, p.schema, p.candidates).to_dict()
        if ours["receipt_sha256"] == theirs["receipt_sha256"]:
            same += 1
        else:
            mine = {d["candidate_id"]: (d["outcome"], d["codes"]) for d in ours["decisions"]}
            gg = {d["candidate_id"]: (d["outcome"], d["codes"]) for d in theirs["decisions"]}
            problems.append(f"{p.doc_id} {p.family}: ours {mine} groundgate {gg}")
    return same, len(sample), problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--policy", action="append", help="policy ref (repeatable); default: default and guarded"
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--split", choices=("dev", "holdout", "both"), default="both")
    parser.add_argument(
        "--oracle", type=int, default=200, help="packets checked against groundgate (0: none)"
    )
    parser.add_argument("--json", type=Path, help="write the numbers as JSON to this file")
    parser.add_argument("--limit-docs", type=int, help="only the first N documents (a quick run)")
    parser.add_argument(
        "--examples", type=int, default=0, help="print K escaped candidates per family"
    )
    parser.add_argument(
        "--real",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also decide the real labelled extractions of bench/real (default: on)",
    )
    args = parser.parse_args(argv)
    refs = args.policy or ["default", "guarded"]
    splits = list(SPLITS) if args.split == "both" else [args.split]

    t0 = time.perf_counter()
    packets = [
        p for p in labelled_packets(args.seed, limit_docs=args.limit_docs) if p.split in splits
    ]
    t_gen = time.perf_counter() - t0
    docs = {p.doc_id for p in packets}
    print(
        f"labelled set: {len(docs)} documents, {len(packets)} packets, "
        f"{sum(sum(1 for v in p.labels.values() if v) for p in packets)} right and "
        f"{sum(sum(1 for v in p.labels.values() if not v) for p in packets)} wrong candidates "
        f"(seed {args.seed}; made in {t_gen:.1f} s)"
    )

    tally = Tally()
    policies, timings = [], {}
    base: dict[tuple[int, str], str] = {}  # (packet, candidate id) -> outcome under default
    for ref in refs:
        factory = admitter_factory(ref)
        if factory is None:
            continue
        policies.append(ref)
        t1 = time.perf_counter()
        admitters: dict[str, Any] = {}
        for n, p in enumerate(packets):
            a = admitters.get(p.doc_id)
            if a is None:
                admitters.clear()
                a = admitters[p.doc_id] = factory(p.document, p.schema)
            decisions = a.admit(p.candidates)["decisions"]
            if ref == "default":
                base.update({(n, d["candidate_id"]): d["outcome"] for d in decisions})
            before = None
            if ref != "default" and base:
                before = {d["candidate_id"]: base[(n, d["candidate_id"])] for d in decisions}
            tally.add(ref, p, decisions, args.examples, before)
        timings[ref] = time.perf_counter() - t1

    oracle = None
    if args.oracle and "default" in policies:
        step = max(1, len(packets) // args.oracle)
        sample = packets[::step][: args.oracle]
        t2 = time.perf_counter()
        same, n, problems = run_oracle(sample)
        oracle = {
            "same": same,
            "checked": n,
            "problems": problems,
            "seconds": time.perf_counter() - t2,
        }

    report: dict[str, Any] = {"seed": args.seed, "policies": {}, "oracle": oracle}
    for ref in policies:
        report["policies"][ref] = {}
        for split in splits:
            rows = rows_for(tally, ref, split)
            report["policies"][ref][split] = rows
            print()
            print(markdown(rows, ref, split))
    for ref in policies:
        print()
        print(analysis(tally, ref, splits))
        for split in splits:
            lost = tally.lost.get((ref, split))
            if ref != "default" and "default" in policies:
                n = sum(lost.values()) if lost else 0
                print(
                    f"Right values default admits and {ref} does not ({split}): {n}"
                    + (": " + ", ".join(f"{k} {v}" for k, v in lost.most_common(6)) if n else "")
                )
                unnamed = tally.no_column.get((ref, split), Counter())
                print(
                    f"  {unnamed['lost']} of them CELL_AMBIGUOUS on a field that names no column "
                    f"(no key, no year name); escapes of such fields: {unnamed['escapes']}"
                )
                for line in tally.exceptions.get((ref, split), []):
                    print(f"  contradicted: {line}")
        if args.examples:
            for (pol, split, fam), cands in sorted(tally.examples.items()):
                if pol == ref:
                    for c in cands:
                        print(f"  e.g. [{split} {fam}] {json.dumps(c, ensure_ascii=False)[:300]}")
    real = None
    if args.real:
        t3 = time.perf_counter()
        real = real_evaluation([r for r in refs if r in policies])
        timings["real set"] = time.perf_counter() - t3
        report["real"] = real
        print()
        print(real_markdown(real))
    report["lost"] = {f"{pol}/{split}": dict(c) for (pol, split), c in tally.lost.items()}
    report["no_column"] = {f"{pol}/{split}": dict(c) for (pol, split), c in tally.no_column.items()}
    report["contradicted"] = {
        f"{pol}/{split}": lines for (pol, split), lines in tally.exceptions.items()
    }
    if oracle is not None:
        print()
        print(
            f"groundgate oracle: {oracle['same']} of {oracle['checked']} packets give identical "
            f"receipts ({oracle['seconds']:.1f} s)"
        )
        for line in oracle["problems"][:10]:
            print("  differs:", line)
    print()
    print(
        f"time: set {t_gen:.1f} s; "
        + "; ".join(f"{ref} {t:.1f} s" for ref, t in timings.items())
        + f"; total {time.perf_counter() - t0:.1f} s"
    )
    if args.json:
        report["review_codes"] = {
            f"{pol}/{split}/{fam}": dict(c) for (pol, split, fam), c in tally.review_codes.items()
        }
        report["escape_codes"] = {
            f"{pol}/{split}/{fam}": dict(c) for (pol, split, fam), c in tally.escape_codes.items()
        }
        report["escape_shapes"] = {
            f"{pol}/{split}/{fam}": dict(c) for (pol, split, fam), c in tally.escape_shapes.items()
        }
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if oracle is not None and oracle["same"] != oracle["checked"] else 0


if __name__ == "__main__":
    sys.exit(main())
