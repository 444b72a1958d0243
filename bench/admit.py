"""Admission speed: groundgate 0.11.0 and groundswell on the same packets, in one run.

    .venv/bin/python bench/admit.py [--sizes 50000,500000,2000000] [--counts 10,100,1000]
                                    [--reps 1] [--mode offsets|quote] [--skip-groundgate]

Documents are real text from ../shared/corpus (SEC filings and annual reports, then other
parts), concatenated in a fixed order to about each size and normalised to NFC. Candidates
are drawn uniformly over the number tokens of the document, as an extractor that cites
offsets and text proposes them: 85% the right value, 10% a wrong value (rejected after a
re-anchoring attempt) and 5% a wrong unit; ``--mode quote`` cites only the quote. Both engines get the same packet; the receipts
must agree (their receipt digests are compared), and the table prints each time and the
ratio groundgate / groundswell. Each cell times ``admit`` end to end (packet checks, digests
and all decisions), CPU seconds, the median of ``--reps`` runs; beside it the floor of the
same packet (see ``floor``) and how many times that groundswell takes.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groundswell.shared.admit import admit  # noqa: E402
from groundswell.shared.admit.index import TextIndex  # noqa: E402
from groundswell.shared.admit.packet import parse_schema  # noqa: E402
from groundswell.shared.settings import get_settings  # noqa: E402

SCHEMA: dict[str, Any] = {
    "fields": {
        "amount": {"type": "number", "multiple": True},
        "usd": {"type": "number", "unit": "USD", "multiple": True},
        "pct": {"type": "number", "unit": "%", "multiple": True},
        "limit": {"type": "number", "unit": "USD", "comparator": "le", "multiple": True},
        "year_amount": {
            "type": "number",
            "keys": ["2025", "2024", "2023", "2022"],
            "multiple": True,
        },
    }
}


def corpus_text(size: int) -> str:
    """About ``size`` bytes of real documents, in a fixed order."""
    corpus = get_settings().shared_corpus
    rows = [json.loads(line) for line in (corpus / "index.jsonl").read_text().splitlines()]
    order = {"sec_edgartools": 0, "tatqa": 1}
    rows.sort(key=lambda r: (order.get(r["part"], 2), r["id"]))
    parts: list[str] = []
    total = 0
    for row in rows:
        text = (corpus / "documents" / f"{row['id']}.txt").read_bytes().decode("utf-8")
        text = unicodedata.normalize("NFC", text)
        parts.append(text)
        total += len(text.encode("utf-8")) + 2
        if total >= size:
            break
    doc = "\n\n".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")
    return unicodedata.normalize("NFC", doc)


def candidates(text: str, count: int, seed: int, mode: str = "offsets") -> list[dict[str, Any]]:
    rng = random.Random(seed)
    index = TextIndex(text, parse_schema({"fields": {}}).vocabulary)
    tokens = [t for t in index.tokens if t.value is not None]
    out = []
    for i in range(count):
        t = rng.choice(tokens)
        prefix = text[max(0, t.start - 1) : t.start]
        suffix = text[t.end : t.end + 1]
        if prefix == "$":
            field, unit = rng.choice([("usd", "USD"), ("limit", "USD")])
            start = t.start - 1
        elif suffix == "%":
            field, unit, start = "pct", "%", t.start
        else:
            field, unit = rng.choice([("amount", None), ("year_amount", None)])
            start = t.start
        end = t.end + (1 if field == "pct" else 0)
        quote = text[start:end]
        value = str(t.value)
        roll = rng.random()
        if roll < 0.10:
            value = str(t.value * 10 + 1)  # a wrong value
        elif roll < 0.15:
            unit = "EUR" if unit != "EUR" else "USD"  # a wrong unit
            field = "usd"
        b0 = len(text[:start].encode("utf-8"))
        b1 = b0 + len(quote.encode("utf-8"))
        cand: dict[str, Any] = {
            "id": f"c{i}",
            "field": field,
            "value": value,
            "evidence": {"start": b0, "end": b1, "text": quote}
            if mode == "offsets"
            else {"text": quote},
        }
        if unit is not None:
            cand["unit"] = unit
        if field == "year_amount":
            cand["key"] = rng.choice(SCHEMA["fields"]["year_amount"]["keys"])
        out.append(cand)
    return out


def timed(fn: Any, reps: int) -> tuple[float, Any]:
    """The median CPU seconds of ``reps`` calls, and the last result."""
    times, result = [], None
    for _ in range(reps):
        t0 = time.process_time()
        result = fn()
        times.append(time.process_time() - t0)
    return statistics.median(times), result


def floor(text: str, cands: list[dict[str, Any]]) -> None:
    """The floor of a packet on this machine: the text's UTF-8 bytes and its NFC check once
    (each needed to read byte offsets), then each candidate's quote found with one
    ``bytes.find`` and its value parsed as a number. No checks, codes or receipt."""
    data = text.encode("utf-8")
    unicodedata.is_normalized("NFC", text)
    for cand in cands:
        data.find(cand["evidence"]["text"].encode("utf-8"))
        float(cand["value"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50000,500000,2000000")
    parser.add_argument("--counts", default="10,100,1000")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--mode", choices=("offsets", "quote"), default="offsets")
    parser.add_argument("--skip-groundgate", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(c) for c in args.counts.split(",")]
    gg = None
    if not args.skip_groundgate:
        import groundgate as gg
    print("| document | candidates | groundgate | groundswell | ratio | floor | vs floor |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        text = corpus_text(size)
        label = f"{len(text.encode('utf-8')) / 1e6:.2f} MB" if size >= 1e6 else f"{size // 1000} KB"
        for count in counts:
            cands = candidates(text, count, seed=size + count, mode=args.mode)
            ours_t, ours = timed(lambda t=text, c=cands: admit(t, SCHEMA, c), args.reps)
            floor_t = min(timed(lambda t=text, c=cands: floor(t, c), 1)[0] for _ in range(3))
            low = f"{floor_t:.4f} s | {ours_t / max(floor_t, 1e-6):.0f}x"
            if gg is None:
                print(f"| {label} | {count} | - | {ours_t:.3f} s | - | {low} |", flush=True)
                continue
            theirs_t, theirs = timed(
                lambda t=text, c=cands: gg.admit(t, SCHEMA, c).to_dict(), args.reps
            )
            same = (
                "" if theirs["receipt_sha256"] == ours["receipt_sha256"] else " (receipts differ!)"
            )
            print(
                f"| {label} | {count} | {theirs_t:.3f} s | {ours_t:.3f} s | "
                f"{theirs_t / ours_t:.1f}x{same} | {low} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
