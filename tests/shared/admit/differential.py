"""Packets built from the shared corpus's gold facts, for differential runs against groundgate.

Each gold fact with a number (TAT-QA annual-report excerpts: tables kept with tabs, and the
paragraphs around them) gives right candidates (quoted, and cited with byte offsets) and
planted errors: a value times ten, a changed digit, a wrong unit, an unscaled value before
"million", a value from another number of the sentence, a flipped sign, a planted "up to" or
"more than", two proposals for one field, a null literal, and malformed candidates. Row
labels and year headers give field and key items, so the table rules run on real tables.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from pathlib import Path
from typing import Any

from groundswell.shared.admit.index import TextIndex
from groundswell.shared.admit.packet import parse_schema
from groundswell.shared.admit.packs import BASE_ID, built_in_pack
from groundswell.shared.admit.text import fold

YEARS = ["2019", "2018", "2017", "2016"]
SCHEMA: dict[str, Any] = {
    "fields": {
        "amount": {"type": "number", "multiple": True},
        "amount_usd": {"type": "number", "unit": "USD", "multiple": True},
        "amount_eur": {"type": "number", "unit": "EUR", "multiple": True},
        "share": {"type": "number", "unit": "%", "multiple": True},
        "single": {"type": "number", "unit": "USD"},
        "by_year": {"type": "number", "keys": YEARS, "multiple": True},
        "text": {"type": "string", "multiple": True},
        "capped": {"type": "number", "comparator": "eq", "maximum": "100000000000"},
    }
}
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_YEAR = re.compile(r"\b(20[12]\d)\b")


def load_facts(corpus: Path) -> dict[str, list[dict[str, Any]]]:
    by_doc: dict[str, list[dict[str, Any]]] = {}
    with (corpus / "gold_facts.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            fact = json.loads(line)
            by_doc.setdefault(fact["doc_id"], []).append(fact)
    return by_doc


def _byte(text: str, i: int) -> int:
    return len(text[:i].encode("utf-8"))


def _vocab_index(text: str) -> TextIndex:
    return TextIndex(text, parse_schema({"fields": {}}).vocabulary)


def build_packet(
    doc_id: str, text: str, facts: list[dict[str, Any]], rng: random.Random
) -> dict[str, Any]:
    """One packet: the document (maybe with planted qualifiers) and its candidates."""
    assert built_in_pack(BASE_ID)  # the base pack loads and its digest holds
    spans = []
    for fact in facts:
        for ev in fact["evidence_spans"][:1]:
            s, e = ev["start"], ev["end"]
            if text[s:e] == ev["text"]:
                spans.append((fact, s, e))
    # Plant a qualifier before one cited number: both engines read the same new text.
    planted: dict[int, str] = {}
    numeric = [(f, s, e) for f, s, e in spans if _NUMBER.fullmatch(text[s:e].lstrip("$"))]
    if numeric and rng.random() < 0.7:
        _, s, e = rng.choice(numeric)
        planted[s] = rng.choice(["up to ", "more than ", "approximately ", "at least "])
    if planted:
        out, prev = [], 0
        shifts = []
        for at in sorted(planted):
            out.append(text[prev:at])
            out.append(planted[at])
            shifts.append((at, len(planted[at])))
            prev = at
        out.append(text[prev:])
        new_text = "".join(out)

        def move(i: int) -> int:
            return i + sum(n for at, n in shifts if at <= i)

        spans = [(f, move(s), move(e)) for f, s, e in spans]
        text = new_text
    idx = _vocab_index(text)
    cands: list[dict[str, Any]] = []
    n = 0

    def add(c: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        c.setdefault("id", f"{doc_id[-8:]}-{n}")
        cands.append(c)

    for fact, s, e in spans:
        quote = text[s:e]
        q_years = _YEAR.findall(fact["question"])
        key = q_years[0] if q_years and q_years[0] in YEARS else rng.choice(YEARS)
        tokens = [t for t in idx.tokens_in(s, e) if t.value is not None]
        if not tokens:
            add({"field": "text", "value": quote, "evidence": {"text": quote}})
            add(
                {
                    "field": "text",
                    "value": quote,
                    "evidence": {"start": _byte(text, s), "end": _byte(text, e), "text": quote},
                }
            )
            continue
        tok = tokens[0]
        value = tok.value
        assert value is not None
        unit_field = "amount_usd" if "$" in text[max(0, tok.start - 3) : tok.start] else "amount"
        if text[tok.end : tok.end + 2].strip().startswith("%"):
            unit_field = "share"
        unit = {"amount_usd": "USD", "share": "%", "amount": None}[unit_field]

        def cand(field: str, val: Any, ev: Any, u: Any = unit, **extra: Any) -> dict[str, Any]:
            c: dict[str, Any] = {"field": field, "value": val, "evidence": ev}
            if u is not None:
                c["unit"] = u
            c.update(extra)
            return c

        offsets = {"start": _byte(text, s), "end": _byte(text, e), "text": quote}
        add(cand(unit_field, str(value), {"text": quote}))
        add(cand(unit_field, str(value), dict(offsets)))
        add(cand(unit_field, str(value * 10), dict(offsets)))
        digits = str(abs(value))
        pos = next((i for i, ch in enumerate(digits) if ch.isdigit()), 0)
        changed = digits[:pos] + str((int(digits[pos]) + 1) % 10) + digits[pos + 1 :]
        add(cand(unit_field, ("-" if value < 0 else "") + changed, {"text": quote}))
        add(cand("amount_eur", str(value), dict(offsets), "EUR"))
        add(cand(unit_field, str(-value), {"text": quote}))
        add(cand(unit_field, str(value * 1000), {"text": quote}))
        add(cand("single", str(value), dict(offsets), "USD"))
        add(cand("single", str(value + 1), {"text": quote}, "USD"))
        add(cand("by_year", str(value), dict(offsets), None, key=key))
        # Field and key items from the table: the row label and a year header.
        line_start = text.rfind("\n", 0, tok.start) + 1
        tab = text.find("\t", line_start, tok.start)
        if tab > line_start:
            label = text[line_start:tab].strip()
            items: list[dict[str, Any]] = [dict(offsets)]
            if label:
                items.append({"role": "field", "text": label})
            items.append({"role": "key", "text": key})
            if unit is not None:
                items.append({"role": "unit", "text": "$" if unit == "USD" else "%"})
            add(cand("by_year", str(value), items, None, key=key))
            scaled = [dict(offsets), {"role": "scale", "text": "(in thousands"}]
            add(cand(unit_field, str(value * 1000), scaled))
        # A value from another number of the same sentence.
        s0, s1 = idx.sentence_of(tok.start)
        others = [t for t in idx.tokens_in(s0, s1) if t.value is not None and t.start != tok.start]
        if others:
            other = rng.choice(others)
            add(cand(unit_field, str(other.value), dict(offsets)))
    # Row labels are the aliases of the keyed field, so its field items can pass.
    schema = json.loads(json.dumps(SCHEMA))
    aliases: dict[str, str] = {}
    for c in cands:
        for item in c["evidence"] if isinstance(c.get("evidence"), list) else []:
            if item.get("role") == "field":
                aliases.setdefault(fold(" ".join(item["text"].split())), item["text"])
    if aliases:
        schema["fields"]["by_year"]["aliases"] = sorted(aliases.values())
    # Unscaled values before a scale word, anywhere in the document.
    for t in idx.tokens:
        if t.scaled is not None and t.value is not None and rng.random() < 0.5:
            quote = text[t.start : t.scale_end or t.end]
            add({"field": "amount", "value": str(t.value), "evidence": {"text": quote}})
            add({"field": "amount", "value": str(t.scaled), "evidence": {"text": quote}})
    # Null literals and malformed candidates.
    add({"field": "amount", "value": "N/A", "evidence": {"text": "x"}})
    add({"field": "amount", "value": 1.5, "evidence": {"text": "1"}})
    add({"field": 5, "value": "1"})
    add({"field": "amount", "value": "1", "evidence": "junk"})
    add({"field": "amount", "value": "1", "evidence": [{"start": 3}]})
    add({"field": "nope", "value": "1", "evidence": {"text": "1"}})
    add({"field": "amount", "value": "1", "evidence": {"start": 0, "end": 10**6, "text": "x"}})
    add({"field": "amount", "value": "1", "evidence": {"text": "no such quote in here"}})
    add({"field": "capped", "value": "1e5", "evidence": {"text": "1"}})
    add({"field": "amount", "value": "1", "confidence": 2, "evidence": {"text": "1"}})
    return {
        "document": text,
        "schema": schema,
        "policy": {"min_confidence": 0.5},
        "candidates": cands,
        "document_id": doc_id,
    }


def packets(corpus: Path, count: int, seed: int = 20260) -> list[dict[str, Any]]:
    """``count`` packets from distinct documents, chosen reproducibly."""
    facts = load_facts(corpus)
    rng = random.Random(seed)
    doc_ids = sorted(facts)
    rng.shuffle(doc_ids)
    out = []
    for doc_id in doc_ids[:count]:
        path = corpus / "documents" / f"{doc_id}.txt"
        text = unicodedata.normalize("NFC", path.read_bytes().decode("utf-8"))
        out.append(build_packet(doc_id, text, facts[doc_id], rng))
    return out


def oracle(packet: dict[str, Any]) -> dict[str, Any]:
    import groundgate

    return groundgate.admit(
        packet["document"],
        packet["schema"],
        packet["candidates"],
        packet.get("policy"),
        packet.get("document_id"),
    ).to_dict()


_DIGITS = re.compile(r"\d+")
WIDE_SCHEMA: dict[str, Any] = {
    "fields": {
        "amount": {"type": "number", "multiple": True},
        "usd": {"type": "number", "unit": "USD", "multiple": True},
        "pct": {"type": "number", "unit": "%", "multiple": True},
        "mg": {"type": "number", "unit": "mg", "multiple": True},
        "days": {"type": "integer", "unit": "days", "multiple": True},
        "ge": {"type": "number", "comparator": "ge", "multiple": True},
        "one": {"type": "number"},
        "dose": {
            "type": "number",
            "unit": "mg",
            "multiple": True,
            "keys": ["adults", "children", "pediatric patients", "2024", "2023"],
        },
    }
}


def wide_packet(doc_id: str, text: str, rng: random.Random, per_doc: int) -> dict[str, Any]:
    """Candidates around numbers anywhere in a document (SEC filings, drug labels, rules):
    spans cut at odd places, quotes, offsets and planted errors, over all unit fields."""
    found = list(_DIGITS.finditer(text))
    cands: list[dict[str, Any]] = []
    fields = list(WIDE_SCHEMA["fields"])
    units = {"usd": "USD", "pct": "%", "mg": "mg", "days": "days", "dose": "mg"}
    for i in range(min(per_doc, len(found))):
        m = rng.choice(found)
        s = max(0, m.start() - rng.choice([0, 0, 1, 2, 5]))
        e = min(len(text), m.end() + rng.choice([0, 0, 1, 3, 6, 12]))
        if rng.random() < 0.2:
            e = max(m.start() + 1, m.end() - 1)  # cut a number short
        quote = text[s:e]
        if not quote.strip():
            continue
        raw = m.group()
        value = rng.choice(
            [raw, raw, raw + "000", str(int(raw) * 10), "-" + raw, raw + "000000", raw[:-1] or "0"]
        )
        field = rng.choice(fields)
        cand: dict[str, Any] = {"id": f"w{i}", "field": field, "value": value}
        if field in units:
            cand["unit"] = units[field]
        if field == "dose":
            cand["key"] = rng.choice(WIDE_SCHEMA["fields"]["dose"]["keys"])
        if rng.random() < 0.5:
            cand["evidence"] = {"start": _byte(text, s), "end": _byte(text, e), "text": quote}
        else:
            cand["evidence"] = {"text": quote}
        if rng.random() < 0.15:
            cand["evidence"] = [cand["evidence"], {"role": "scale", "text": "in thousands"}]
        cands.append(cand)
    return {
        "document": text,
        "schema": WIDE_SCHEMA,
        "policy": None,
        "candidates": cands,
        "document_id": doc_id,
    }


def wide_packets(
    corpus: Path, count: int, per_doc: int = 40, seed: int = 7, max_bytes: int = 400_000
) -> list[dict[str, Any]]:
    """Packets from documents of every part of the corpus other than TAT-QA."""
    rng = random.Random(seed)
    rows = []
    with (corpus / "index.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["part"] != "tatqa" and row["length_bytes"] <= max_bytes:
                rows.append(row)
    rows.sort(key=lambda r: r["id"])
    rng.shuffle(rows)
    out = []
    for row in rows[:count]:
        text = (corpus / "documents" / f"{row['id']}.txt").read_bytes().decode("utf-8")
        text = unicodedata.normalize("NFC", text)  # callers normalise before extracting (§2.1)
        out.append(wide_packet(row["id"], text, rng, per_doc))
    return out


def filing_text(corpus: Path, size: int) -> str:
    """About ``size`` characters of SEC filings from the corpus, joined, in NFC."""
    rows = [json.loads(line) for line in (corpus / "index.jsonl").read_text().splitlines()]
    rows = sorted((r for r in rows if r["part"] == "sec_edgartools"), key=lambda r: r["id"])
    parts, total = [], 0
    for row in rows:
        text = (corpus / "documents" / f"{row['id']}.txt").read_bytes().decode("utf-8")
        parts.append(unicodedata.normalize("NFC", text))
        total += len(parts[-1])
        if total >= size:
            break
    return unicodedata.normalize("NFC", "\n\n".join(parts)[:size])


def dense_packet(corpus: Path, size: int, count: int, seed: int = 5) -> dict[str, Any]:
    """Many candidates over one document of filings: cited by offsets or by quote, some spans
    cut inside a number or without its sign, so candidates share tokens in every way."""
    rng = random.Random(seed)
    text = filing_text(corpus, size)
    index = _vocab_index(text)
    tokens = [t for t in index.tokens if t.value is not None]
    fields = list(WIDE_SCHEMA["fields"])
    units = {"usd": "USD", "pct": "%", "mg": "mg", "days": "days", "dose": "mg"}
    cands = []
    for i in range(count):
        t = rng.choice(tokens)
        s, e = rng.choice([(t.start, t.end), (t.dstart, t.end), (max(0, t.start - 1), t.end)])
        if rng.random() < 0.1:
            e = max(s + 1, e - 1)
        quote = text[s:e]
        value = rng.choice([t.value, t.value, abs(t.value), t.value * 1000, t.value + 1])
        field = rng.choice(fields)
        cand: dict[str, Any] = {"id": f"d{i}", "field": field, "value": str(value)}
        if field in units:
            cand["unit"] = units[field]
        if field == "dose":
            cand["key"] = rng.choice(WIDE_SCHEMA["fields"]["dose"]["keys"])
        roll = rng.random()
        if roll < 0.45 and quote.strip():
            cand["evidence"] = {"text": quote}
        elif roll < 0.55:
            # Offsets of another number with this number's text: re-anchoring decides.
            o = rng.choice(tokens)
            cand["evidence"] = {
                "start": _byte(text, o.start),
                "end": _byte(text, o.end),
                "text": quote,
            }
        else:
            cand["evidence"] = {"start": _byte(text, s), "end": _byte(text, e), "text": quote}
        cands.append(cand)
    return {
        "document": text,
        "schema": WIDE_SCHEMA,
        "policy": None,
        "candidates": cands,
        "document_id": f"dense-{size}",
    }
