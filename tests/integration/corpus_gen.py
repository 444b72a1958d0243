"""Build test corpora from ../shared/corpus: claims, candidates and labels generated from the text.

Documents are read from the shared corpus at run time and written only to temporary
folders or test buckets, never into the repository.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

NUMBER = re.compile(r"(?<![\w.,$])(\d{1,3}(?:,\d{3})+|\d+\.\d+)(?![\w]|[.,]\d)")
WORD_SPAN = re.compile(r"[A-Za-z][A-Za-z ,;'()-]{30,120}[a-z]")

SCHEMA = {
    "fields": {
        "figure_1": {"type": "number"},
        "figure_2": {"type": "number"},
        "figure_3": {"type": "number"},
        "figure_4": {"type": "number"},
    }
}


def pick_documents(
    corpus: Path, index: list[dict], count: int, max_bytes: int = 40_000
) -> list[dict]:
    """A deterministic mix of kinds: annual-report excerpts, drug labels, Federal Register text."""
    rows = sorted((r for r in index if r["length_bytes"] <= max_bytes), key=lambda r: r["id"])
    by_part: dict[str, list[dict]] = {}
    for row in rows:
        by_part.setdefault(row["part"], []).append(row)
    shares = {"tatqa": 0.5, "fda_labels": 0.25, "uslm": 0.25}
    picked: list[dict] = []
    for part, share in shares.items():
        picked += by_part.get(part, [])[: int(count * share) + 1]
    rest = [r for r in rows if r not in picked]
    picked += rest[: max(0, count - len(picked))]
    return picked[:count] if len(picked) >= count else picked


def _claims(doc_id: str, text: str, rng: random.Random) -> tuple[list[dict], dict[str, bool]]:
    spans = [m for m in WORD_SPAN.finditer(text)][:40]
    rng.shuffle(spans)
    claims: list[dict] = []
    labels: dict[str, bool] = {}

    def add(cid: str, claim: str, genuine: bool, **extra: Any) -> None:
        claims.append({"id": cid, "claim": claim, "source_doc": doc_id, **extra})
        labels[cid] = genuine

    for i, match in enumerate(spans[:6]):
        quote = match.group().strip()
        variant = i % 6
        if variant == 0:
            add(f"{doc_id}:exact", quote, True)
        elif variant == 1:
            add(f"{doc_id}:space", quote.replace(" ", "  ", 2), True)
        elif variant == 2:
            add(f"{doc_id}:case", quote.upper(), True)
        elif variant == 3:
            add(f"{doc_id}:at", quote, True, start=match.start(), end=match.start() + len(quote))
        elif variant == 4:
            add(
                f"{doc_id}:at-wrong",
                quote,
                False,
                start=max(0, match.start() - 7),
                end=match.end() - 7,
            )
        else:
            words = quote.split()
            if len(words) > 4:
                words[1], words[3] = words[3], words[1]
            add(f"{doc_id}:fabricated", " ".join(words) + " in all material respects", False)
    add(f"{doc_id}:invented", "The committee approved the merger unanimously on Tuesday.", False)
    return claims, labels


def _candidates(text: str, rng: random.Random) -> tuple[list[dict], dict[str, bool]]:
    matches = list(NUMBER.finditer(text))[:30]
    rng.shuffle(matches)
    candidates: list[dict] = []
    labels: dict[str, bool] = {}
    for i, match in enumerate(matches[:4], start=1):
        raw = match.group()
        value = raw.replace(",", "")
        start, end = match.start(), match.end()
        wrong = i == 2
        if wrong:
            value = str(int(float(value) * 10)) if "." not in value else value + "1"
        byte_start = len(text[:start].encode())
        byte_end = byte_start + len(raw.encode())
        evidence = (
            {"start": byte_start, "end": byte_end, "text": raw}
            if i % 2
            else {"text": text[max(0, start - 20) : end].split("\n")[-1]}
        )
        cid = f"n{i}"
        candidates.append(
            {
                "id": cid,
                "field": f"figure_{i}",
                "value": value,
                "evidence": evidence,
                "model": "gen",
            }
        )
        labels[cid] = not wrong
    candidates.append(
        {"id": "u1", "field": "not_in_schema", "value": "1", "evidence": {"text": "x"}}
    )
    labels["u1"] = False
    return candidates, labels


def write_corpus(
    target: Path, shared_corpus: Path, documents: list[dict], seed: int = 11
) -> dict[str, Any]:
    """Write the layout of DESIGN.md under ``target``; return counts."""
    rng = random.Random(seed)
    for sub in ("documents", "claims", "candidates", "labels"):
        (target / sub).mkdir(parents=True, exist_ok=True)
    (target / "schema.json").write_text(json.dumps(SCHEMA, indent=1))
    claims_total = candidates_total = 0
    for row in documents:
        doc_id = row["id"]
        data = (shared_corpus / "documents" / f"{doc_id}.txt").read_bytes()
        text = data.decode("utf-8")
        (target / "documents" / f"{doc_id}.txt").write_bytes(data)
        claims, claim_labels = _claims(doc_id, text, rng)
        candidates, cand_labels = _candidates(text, rng)
        (target / "claims" / f"{doc_id}.jsonl").write_text(
            "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in claims), encoding="utf-8"
        )
        (target / "candidates" / f"{doc_id}.json").write_text(
            json.dumps(candidates, ensure_ascii=False)
        )
        (target / "labels" / f"{doc_id}.json").write_text(
            json.dumps({"claims": claim_labels, "candidates": cand_labels})
        )
        claims_total += len(claims)
        candidates_total += len(candidates)
    return {"documents": len(documents), "claims": claims_total, "candidates": candidates_total}


def upload(folder: Path, client, bucket: str, prefix: str) -> int:
    count = 0
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.put_object(
                Bucket=bucket,
                Key=f"{prefix}/{path.relative_to(folder).as_posix()}",
                Body=path.read_bytes(),
            )
            count += 1
    return count


def with_producers(target: Path, producers: list[dict[str, Any]]) -> dict[str, str]:
    """Give each document's claims and candidates of a written corpus a ``producer`` member,
    the producers taken in turn by document id; returns each document's producer format."""
    out: dict[str, str] = {}
    docs = sorted(p.stem for p in (target / "claims").glob("*.jsonl"))
    for n, doc_id in enumerate(docs):
        producer = producers[n % len(producers)]
        claims = target / "claims" / f"{doc_id}.jsonl"
        lines = [json.loads(line) for line in claims.read_text(encoding="utf-8").splitlines()]
        claims.write_text(
            "".join(json.dumps({**r, "producer": producer}) + "\n" for r in lines),
            encoding="utf-8",
        )
        candidates = target / "candidates" / f"{doc_id}.json"
        if candidates.exists():
            items = json.loads(candidates.read_text(encoding="utf-8"))
            candidates.write_text(json.dumps([{**c, "producer": producer} for c in items]))
        out[doc_id] = producer["format"]
    return out
