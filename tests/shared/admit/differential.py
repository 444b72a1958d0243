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


def _shuffled_rows(
    corpus: Path, rng: random.Random, keep: Any, max_bytes: int
) -> list[dict[str, Any]]:
    """The rows of the corpus index that ``keep`` keeps, up to ``max_bytes``, in an order
    the seed fixes."""
    rows = []
    with (corpus / "index.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if keep(row) and row["length_bytes"] <= max_bytes:
                rows.append(row)
    rows.sort(key=lambda r: r["id"])
    rng.shuffle(rows)
    return rows


def _nfc_document(corpus: Path, doc_id: str) -> str:
    text = (corpus / "documents" / f"{doc_id}.txt").read_bytes().decode("utf-8")
    return unicodedata.normalize("NFC", text)  # callers normalise before extracting (§2.1)


def wide_packets(
    corpus: Path, count: int, per_doc: int = 40, seed: int = 7, max_bytes: int = 400_000
) -> list[dict[str, Any]]:
    """Packets from documents of every part of the corpus other than TAT-QA."""
    rng = random.Random(seed)
    rows = _shuffled_rows(corpus, rng, lambda r: r["part"] != "tatqa", max_bytes)
    out = []
    for row in rows[:count]:
        text = _nfc_document(corpus, row["id"])
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


# Role item quotes at word edges (issue 14): a unit or scale quote that occurs in the text only
# inside a longer word ("percent" of "percentage", "day" of "days", "USD" of "USDollars"), also
# inside a word and standalone, at the document's edges, next to punctuation, in another case,
# and value quotes inside words for contrast. groundgate reads a form "as a whole" with the
# text before the item but not past its end.
EDGE_SCHEMA: dict[str, Any] = {
    "fields": {
        "amount": {"type": "number", "multiple": True},
        "usd": {"type": "number", "unit": "USD", "multiple": True},
        "eur": {"type": "number", "unit": "EUR", "multiple": True},
        "pct": {"type": "number", "unit": "%", "multiple": True},
        "days": {"type": "integer", "unit": "days", "multiple": True},
        "chf": {"type": "number", "unit": "CHF", "multiple": True},
        "text": {"type": "string", "multiple": True},
        "row": {"type": "number", "unit": "USD", "multiple": True, "aliases": ["Revenue"]},
    },
    # A unit with no form is at every token: a currency name or the code repeats it (#423).
    "units": {"CHF": {"prefix": [], "suffix": []}},
}
EDGE_UNITS = {"usd": "USD", "eur": "EUR", "pct": "%", "days": "days", "chf": "CHF", "row": "USD"}
# Unit and scale quotes, each with the fields it is a form or name of.
EDGE_QUOTES: dict[str, tuple[str, ...]] = {
    "percent": ("pct",),
    "per cent": ("pct",),
    "%": ("pct",),
    "day": ("days",),
    "days": ("days",),
    "-day": ("days",),
    "dollar": ("usd",),
    "dollars": ("usd", "row"),
    "USD": ("usd", "row", "chf"),
    "US$": ("usd",),
    "$": ("usd", "row"),
    "EUR": ("eur",),
    "euro": ("eur",),
    "euros": ("eur",),
    "CHF": ("chf",),
    "Swiss franc": ("chf",),
    "Swiss francs": ("chf",),
    "franc": ("chf",),
}
EDGE_SCALES = (
    "in thousands",
    "in thousand",
    "thousand",
    "in millions",
    "in million",
    "millions of US dollar",
    "millions of US dollars",
    "millions of Swiss franc",
    "USD million",
    "mill",
    "in $ million",
)
_WORD = re.compile(r"[^\W_]+")


def _edge_quotes(text: str, quote: str, rng: random.Random) -> list[str]:
    """Quotes around occurrences of ``quote`` in the text: itself, and with a character of the
    text on either side (a letter of the word it is in, or punctuation), as a reader cuts."""
    out = [quote]
    for m in list(re.finditer(re.escape(quote), text))[:3]:
        a, b = m.span()
        if a > 0 and not text[a - 1].isspace():
            out.append(text[a - 1 : b])
        if b < len(text) and not text[b].isspace():
            out.append(text[a : b + 1])
        w = _WORD.search(text, a)
        if w is not None and w.start() <= a < w.end() and w.end() > b:
            out.append(text[a : w.end() - 1])  # the word cut one letter short
    rng.shuffle(out)
    return list(dict.fromkeys(out))[:4]


def edge_candidates(text: str, rng: random.Random, per_doc: int, tag: str) -> list[dict[str, Any]]:
    """Candidates of the unit fields at numbers of the text, with unit and scale items whose
    quotes sit at word edges, and value quotes inside words."""
    idx = _vocab_index(text)
    tokens = [t for t in idx.tokens if t.value is not None]
    if not tokens:
        return []
    present = [q for q in EDGE_QUOTES if q in text] or list(EDGE_QUOTES)
    # The quotes that occur only inside longer words here, as "percent" in a report that
    # says "percentage" but never "percent".
    inside = [
        q
        for q in present
        if q[-1].isalnum()
        and all(
            m.end() < len(text) and text[m.end()].isalnum() for m in re.finditer(re.escape(q), text)
        )
    ]
    scales = [q for q in EDGE_SCALES if q in text] or list(EDGE_SCALES)
    by_unit: dict[str, list[Any]] = {
        "pct": [t for t in tokens if text.startswith("%", t.end)],
        "usd": [t for t in tokens if "$" in text[max(0, t.start - 2) : t.start]],
        "days": [t for t in tokens if text.startswith(" day", t.end)],
    }
    cands: list[dict[str, Any]] = []

    def add(c: dict[str, Any]) -> None:
        c["id"] = f"{tag}{len(cands)}"
        cands.append(c)

    for _ in range(per_doc):
        t = rng.choice(tokens)
        value = str(t.value)
        vquote = text[t.start : t.end]
        if rng.random() < 0.5:
            value_item: dict[str, Any] = {"text": vquote}
        else:
            value_item = {"start": _byte(text, t.start), "end": _byte(text, t.end), "text": vquote}
        roll = rng.random()
        if roll < 0.6:
            base = rng.choice(inside if inside and rng.random() < 0.5 else present)
            field = rng.choice(EDGE_QUOTES[base])
            marked = by_unit.get(field)
            if marked and rng.random() < 0.7:
                # A number with its unit next to it, so a unit item repeats the unit there.
                t = rng.choice(marked)
                value = str(t.value)
                value_item = {"text": text[t.start : t.end]}
            for q in _edge_quotes(text, base, rng)[:2]:
                items = [dict(value_item), {"role": "unit", "text": q}]
                if field == "row":
                    items.append({"role": "field", "text": "Revenue"})
                add({"field": field, "value": value, "unit": EDGE_UNITS[field], "evidence": items})
        elif roll < 0.8:
            base = rng.choice(scales)
            field = rng.choice(["amount", "usd", "chf"])
            c: dict[str, Any] = {"field": field, "value": str(t.value * rng.choice([1000, 10**6]))}
            if field != "amount":
                c["unit"] = EDGE_UNITS[field]
            q = rng.choice(_edge_quotes(text, base, rng))
            c["evidence"] = [dict(value_item), {"role": "scale", "text": q}]
            add(c)
        else:
            # A value quote inside a word or a longer number: the value item's occurrences
            # are not bounded by words (§4.6), for contrast with the role items.
            w = _WORD.search(text, max(0, t.start - 3))
            if w is None or w.end() - w.start() < 2:
                continue
            a = rng.randrange(w.start(), w.end() - 1)
            b = rng.randrange(a + 1, w.end())
            inner = text[a:b]
            if inner.strip():
                add({"field": "text", "value": inner, "evidence": {"text": inner}})
                digits = re.sub(r"\D", "", inner)
                if digits:
                    add({"field": "amount", "value": digits, "evidence": {"text": inner}})
    return cands


# Short documents that put the quotes of EDGE_QUOTES at the edges a real text rarely has:
# the first and last characters of the document, brackets and punctuation, other cases.
EDGE_DOCUMENTS = (
    "percentage of sales was 5% in 2019",
    "Sales grew 5% (percentage points)",
    "percent: 5%",
    "Revenue was $12 in USDollars",
    "USDollars: revenue was $12",
    "Revenue\t$12\nin USD",
    "Revenue was $12.USD",
    "Revenue was $12 (USD)",
    "Revenue was $12 in usd and USDx",
    "Holidays lasted 7 days; the holiday",
    "7 days",
    "the -day rule: 30-day notice and 7 days",
    "Revenue was 5 in Swiss francs",
    "Swiss francophone revenue was 5 CHF",
    "Revenue was 5 CHFs",
    "CHF5 and 6 in CHF.",
    "Revenue 12 million in euros; EURO zone EUR 3 €",
    "In millions of US dollarsy: revenue was $5",
    "Figures within thousands: revenue was 5",
    "Figures (in thousandsx): revenue was 5",
    "Revenue was 5 millions of Swiss francs",
    "(in $ millions) revenue was $5",
    "Revenue\t5\nmillion",
    "Revenue\t5\tUSDollar\n",
    "USD\nRevenue\t5\n",
    "Revenue\tUSD5\tUSD 7\n",
    "caf\u00e9 percent 5% r\u00e9sum\u00e9 dollars $3",
    "REVENUE 5 PERCENTAGE percent 5%",
    "1,234 and 12,345 and 2019a and Q5 and 15%",
)


def edge_packets(
    corpus: Path, count: int, per_doc: int = 12, seed: int = 14
) -> list[dict[str, Any]]:
    """Packets of EDGE_SCHEMA: the short edge documents, and real documents of the corpus
    (TAT-QA reports and SEC filings, where "percentage", "dollars" and "days" are common)."""
    rng = random.Random(seed)
    docs = [(f"edge-{i}", text, "e") for i, text in enumerate(EDGE_DOCUMENTS)]
    rows = _shuffled_rows(corpus, rng, lambda r: r["part"] in ("tatqa", "sec_edgartools"), 120_000)
    out = []
    for doc_id, text, tag in docs + [(r["id"], None, "r") for r in rows[:count]]:
        if text is None:  # a document of the corpus, read in turn
            text = _nfc_document(corpus, doc_id)
        cands = edge_candidates(text, rng, per_doc, tag)
        packet = {"document": text, "schema": EDGE_SCHEMA, "policy": None}
        out.append(dict(packet, candidates=cands, document_id=doc_id))
    return out
