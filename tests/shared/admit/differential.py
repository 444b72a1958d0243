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


# A unit form after the value on its own row or line (#249): "Granted\t147,800\t$7.06" does
# not put USD at a unit place of 147,800, since groundgate 0.11.0 reads a unit place as a unit
# item there would be, one that ends at or before the value. Rows carry a form after the value
# (a "$" or a code in a later cell, a "%" in another cell, a suffix after a later number, a
# form in the prose after the value), and for contrast a form before it at a unit place (a "$"
# cell in the header's column, a caption) or next to it. Candidates of fields with aliases cite
# the value by quote or offsets, with and without a field item on the row's label, and some
# with a unit item.
AFTER_UNITS = {"usd": "USD", "pct": "%", "eur": "EUR", "gbp": "GBP"}
_AFTER_FORMS = {
    "usd": ["$7.06", "$ 7.06", "7.06 USD", "USD 7.06", "$", "USD", "US$7", "(7.06) USD"],
    "pct": ["7.06%", "7.06 %", "%", "7 percent", "(7.06)%"],
    "eur": ["€7.06", "7.06 EUR", "EUR", "EUR 7", "7 euros"],
    "gbp": ["£7.06", "7.06 GBP", "GBP", "£"],
}
_BEFORE_FORMS = {"usd": "$", "pct": "%", "eur": "€", "gbp": "£"}
_AFTER_LABELS = ["Granted", "Exercised", "Net sales", "Revenue", "Forfeited", "Total"]
_AFTER_VALUES = ["147,800", "12", "3.5", "(250)", "1,024.75", "98"]
# Fixed rows at the edges of a value's table: where its unit places start and end.
AFTER_DOCUMENTS = (
    "\tShares\tPrice\nGranted\t147,800\t$7.06\n",
    "Granted\t147,800\t7.06%\n",
    "Granted\t147,800\tUSD\n",
    "Granted 147,800 shares at $7.06 each.",
    "Revenue was\n$\n(250) in total.",
    "Revenue ($\n250) in total.",
    "Revenue\t$\n\t(250)\t$7\n",
    "$\n\nRevenue\t250\n",
    "in USD\n\n\nRevenue\t250\t$\n",
    "in USD\n\t\t\nRevenue\t250\n",
    "\t$\n\t\t\nRevenue\t250\n",
    "\t$\nNote 5\nRevenue\t250\n",
    "\tUSD\nRevenue\t250\t7 USD\n",
    "USD\nRevenue 250 and $ 7\n",
    "\t$\t$\nRevenue\t250\t7\nOther\t3\t$4\n",
)


def _after_document(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    """A short table or sentence with unit forms after the values: the text, and the (label,
    unit field) of each row."""
    rows: list[tuple[str, str]] = []
    lines: list[str] = []
    tabbed = rng.random() < 0.75
    unit = rng.choice(list(AFTER_UNITS))
    shape = rng.random()
    if tabbed:
        if shape < 0.15:
            lines += [f"(in {AFTER_UNITS[unit]})", ""]  # a caption: a unit place
        head = "\t" + "\t".join(rng.sample(["Shares", "Price", "2019", "2018", "Amount"], 2))
        if shape > 0.85:
            form = _BEFORE_FORMS[unit]  # the column's form, before or after the header cell
            head = "\t2019 %\t2018 %" if unit == "pct" else f"\t{form} 2019\t{form} 2018"
        lines.append(head)
    for label in rng.sample(_AFTER_LABELS, rng.randint(1, 3)):
        f = rng.choice(list(AFTER_UNITS)) if rng.random() < 0.3 else unit
        value = rng.choice(_AFTER_VALUES)
        after = rng.choice(_AFTER_FORMS[f])
        if tabbed:
            cell = value
            if rng.random() < 0.15:  # a form next to the value, for contrast
                form = _BEFORE_FORMS[f]
                cell = f"{value}{form}" if f == "pct" else f"{form}{value}"
            sep = rng.choice(["\t", "\t", " "])
            lines.append(f"{label}\t{cell}{sep}{after}")
        else:
            tail = rng.choice([f" at {after} each", f", or {after}", f" ({after})", f" {after}"])
            lines.append(f"{label} was {value}{tail}.")
        rows.append((label, f))
    return "\n".join(lines) + rng.choice(["\n", "", "\n\n"]), rows


def _after_rows(text: str) -> list[tuple[int, int, str]]:
    """Lines of a real document with a number token and a unit form after it on the line:
    (start of the first such token, line end, the unit field of the form)."""
    idx = _vocab_index(text)
    out = []
    for t in idx.tokens:
        if t.value is None:
            continue
        end = text.find("\n", t.end)
        end = len(text) if end < 0 else end
        rest = text[t.end : end]
        for field, forms in (("usd", "$"), ("pct", "%"), ("eur", "€"), ("gbp", "£")):
            at = rest.find(forms)
            if at > 0 and rest[:at].strip():  # not next to the value: something between
                out.append((t.start, end, field))
                break
    return out


def _label_before(text: str, start: int) -> str | None:
    """The words of the value's line before it (a row label or the start of the sentence)."""
    a = text.rfind("\n", 0, start) + 1
    line = text[a:start]
    label = line.split("\t")[0] if "\t" in line else line
    words = _WORD.findall(label)
    if not words or not any(w.isalpha() for w in words):
        return None
    # The last few words, as they stand in the text (a mention is matched whole, §4.5).
    found = re.search(r"[^\W\d_][^\t\n]*$", label.rstrip(" \t:"))
    if found is None:
        return None
    return " ".join(found.group().split()[-4:])


def after_unit_packets(
    corpus: Path, count: int, synthetic: int = 60, per_doc: int = 10, seed: int = 249
) -> list[dict[str, Any]]:
    """Packets whose values have a unit form after them on their line: short synthetic tables
    and sentences, and lines of TAT-QA reports and SEC filings."""
    rng = random.Random(seed)
    docs: list[tuple[str, str, list[tuple[int, str, str]]]] = []
    made = [(text, [(label, "pct" if "%" in text else "usd")]) for text in AFTER_DOCUMENTS for label in ("Granted", "Revenue")
            if label in text]  # fmt: skip
    for i in range(synthetic + len(made)):
        text, rows = made[i] if i < len(made) else _after_document(rng)
        idx = _vocab_index(text)
        picks = []
        for label, field in rows:
            at = text.index(label)
            t = next((t for t in idx.tokens if t.start > at and t.value is not None), None)
            if t is not None:
                picks.append((t.start, label, field))
        docs.append((f"after-{i}", text, picks))
    rows = _shuffled_rows(corpus, rng, lambda r: r["part"] in ("tatqa", "sec_edgartools"), 120_000)
    for row in rows:
        if len(docs) >= synthetic + len(made) + count:
            break
        text = _nfc_document(corpus, row["id"])
        found = _after_rows(text)
        rng.shuffle(found)
        picks = []
        for start, _, field in found[: per_doc * 2]:
            label = _label_before(text, start)
            if label is not None:
                picks.append((start, label, field))
        if picks:
            docs.append((row["id"], text, picks[:per_doc]))
    out = []
    for doc_id, text, picks in docs:
        idx = _vocab_index(text)
        by_start = {t.start: t for t in idx.tokens}
        aliases: dict[str, dict[str, str]] = {f: {} for f in AFTER_UNITS}
        cands: list[dict[str, Any]] = []
        for start, label, field in picks:
            t = by_start[start]
            key = fold(" ".join(label.split()))
            aliases[field].setdefault(key, label)
            unit = AFTER_UNITS[field]
            quote = text[t.start : t.end]
            for shape in range(4):
                if shape % 2:
                    item: dict[str, Any] = {
                        "start": _byte(text, t.start),
                        "end": _byte(text, t.end),
                        "text": quote,
                    }
                else:
                    item = {"text": quote}
                items = [item]
                if shape < 2 or rng.random() < 0.3:
                    items.append({"role": "field", "text": label})
                if rng.random() < 0.2:
                    items.append({"role": "unit", "text": _BEFORE_FORMS[field]})
                name = f"{field}_row" if rng.random() < 0.8 else field
                cand = {"field": name, "value": str(t.value), "unit": unit, "evidence": items}
                cand["id"] = f"a{len(cands)}"
                cands.append(cand)
        fields: dict[str, Any] = {}
        for f, unit in AFTER_UNITS.items():
            fields[f] = {"type": "number", "unit": unit, "multiple": True}
            names = list(aliases[f].values()) or [_AFTER_LABELS[0]]
            fields[f"{f}_row"] = {
                "type": "number",
                "unit": unit,
                "multiple": True,
                "aliases": names,
            }
        schema = {"fields": fields}
        out.append({"document": text, "schema": schema, "policy": None, "candidates": cands,
                    "document_id": doc_id})  # fmt: skip
    return out
