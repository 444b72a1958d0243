"""Labelled admission candidates over real filings: right values and planted wrong ones.

Made at run time from ``../shared/corpus`` (read in place; nothing is copied into the
repository). The TAT-QA facts of ``gold_facts.jsonl`` name numbers of their documents by
offsets: the value of a span answer, or an operand of a computed answer. Each such number that
reads cleanly (a whole number token whose written value agrees with the gold value, with a scale
the document settles) is a **site**: a right value for a field of that document (the row label
of its table row, or its sentence), scaled and signed as the filing means it.

For each site the generator writes a candidate as an extractor would (a value item quoting the
table row or the sentence, or the cell by offsets; sometimes sign, scale, unit, field and key
items), labelled right, and then wrong candidates of several families, each labelled wrong:

    same_row        another number of the same row or sentence, the whole row/sentence quoted
    no_scale        a table value without the scale its heading or caption states (as written)
    competing       a second proposal for the same field (and key) next to the right one,
                    both cited (the pair is one packet; the right one is counted here too)
    other_year      the neighbouring column (other period) of the same row, under the site's key
    sign            a parenthesised (negative) value given as positive, with no sign item
    digit           one digit changed, or two adjacent digits transposed
    pct_vs_amount   the percentage of the row or sentence for an amount, or an amount for a %
    other_row       the same column of another row (a neighbouring label), the site's field item
    wrong_key       the right value under another period's key (keyed fields only)
    wrong_scale     the value scaled one step too far (thousands read as millions)
    year_as_value   a year of the column header given as the value
    date_day        the day of a date in the row or sentence ("as of September 29, 2019")
                    given as the value (added with guard revision 5)

Every packet holds one candidate (two for ``competing``), so families do not disturb each other
(a wrong value of another family would otherwise conflict with the right one of its field).

Half of the documents get a keyed schema (one field per row label, keyed by the column years),
the others one field per cell, named by its row label and its column's year (aliases; a
candidate may cite both as field items); which half is fixed by the document id's hash, as is
the split:
about 20% of the documents are the **hold-out** (``sha256(doc_id)`` first byte mod 5 == 0),
never used to tune a policy; the rest is **development**. Every random choice is seeded by the
run's seed, the document, the site and the family, so a set is the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

FAMILIES = (
    "right",
    "same_row",
    "no_scale",
    "competing",
    "other_year",
    "sign",
    "digit",
    "pct_vs_amount",
    "other_row",
    "wrong_key",
    "wrong_scale",
    "year_as_value",
    "date_day",
)
SPLITS = ("dev", "holdout")

_TOKEN = re.compile(r"(?<![\w.,])[-−]?\d[\d,]*(?:\.\d+)?")
_GROUPED = re.compile(r"^\d{1,3}(,\d{3})*(\.\d+)?$|^\d+(\.\d+)?$")
_YEAR = re.compile(r"^(19|20)\d\d$")
_SCALE_WORDS = {"thousand": 3, "million": 6, "billion": 9}
_AFTER_WORD = re.compile(r"\s{0,2}(thousand|million|billion|trillion)\b", re.IGNORECASE)
# Scale statements a filing puts in a heading or caption, with the power of ten each means.
_DOC_SCALES = [
    (re.compile(r"\bin\s+(?:[$€£]\s*)?(thousand|million|billion)s?\b", re.I), None),
    (re.compile(r"\b(thousand|million|billion)s\s+of\b", re.I), None),
    (re.compile(r"[$€£](?:'000|’000|000)(?![\w,.])"), 3),
    (re.compile(r"[$€£]k(?![\w])"), 3),
    (re.compile(r"[$€£]m(?![\w])"), 6),
    (re.compile(r"[$€£]bn(?![\w])"), 9),
]
# Row labels whose numbers a heading's "in thousands" does not scale
_UNSCALED = re.compile(
    r"per share|per unit|%|percent|ratio|number of|shares|employees|days|years|months|margin|rate",
    re.I,
)
_ANY_SCALE = re.compile(r"thousand|million|billion|'000|’000|[$€£]\s?(?:m|bn|k)\b", re.I)
_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP"}
_SCALE_NAMES = {"thousand": 3, "million": 6, "billion": 9}


def corpus_dir() -> Path:
    from groundswell.shared.settings import get_settings

    return get_settings().shared_corpus


def split_of(doc_id: str) -> str:
    """``holdout`` for about a fifth of the documents, fixed by the id's hash; else ``dev``."""
    return "holdout" if hashlib.sha256(doc_id.encode()).digest()[0] % 5 == 0 else "dev"


def keyed_doc(doc_id: str) -> bool:
    """Whether the document's schema keys its table fields by column year (half of them)."""
    return hashlib.sha256(doc_id.encode()).digest()[1] % 2 == 0


def _rng(seed: int, *parts: object) -> random.Random:
    h = hashlib.sha256(":".join(str(p) for p in (seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def canonical(d: Decimal) -> str:
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


# --- reading a document --------------------------------------------------------------------


@dataclass
class Tok:
    start: int  # code points
    end: int
    text: str
    written: Decimal  # the digits as written, without sign
    paren: bool  # "(2,088)"
    minus: bool
    scale_word: int  # power of ten of a scale word right after it, else 0
    percent: bool  # a % (or "percent") right after it
    currency: str | None  # a currency sign right before it

    @property
    def negative(self) -> bool:
        return self.paren or self.minus


@dataclass
class Line:
    start: int
    end: int
    text: str

    @property
    def tabbed(self) -> bool:
        return "\t" in self.text


@dataclass
class Doc:
    doc_id: str
    text: str
    lines: list[Line]
    tokens: list[Tok]
    scale: int | None  # the one power of ten its headings and captions state; None if several
    scale_item: tuple[int, int] | None  # the first such statement (code points)
    _bytes: list[int] = field(default_factory=list)

    def b(self, i: int) -> int:
        return self._bytes[i]

    def line_of(self, pos: int) -> Line:
        lo, hi = 0, len(self.lines) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.lines[mid].start <= pos:
                lo = mid
            else:
                hi = mid - 1
        return self.lines[lo]

    def tokens_in(self, start: int, end: int) -> list[Tok]:
        return [t for t in self.tokens if t.start >= start and t.end <= end]


def read_doc(doc_id: str, text: str) -> Doc:
    lines, pos = [], 0
    for raw in text.split("\n"):
        lines.append(Line(pos, pos + len(raw), raw))
        pos += len(raw) + 1
    tokens = []
    for m in _TOKEN.finditer(text):
        s, e = m.start(), m.end()
        tok = m.group()
        if tok.endswith(","):
            tok, e = tok[:-1], e - 1
        minus = tok[0] in "-−"
        digits = tok.lstrip("-−")
        if not _GROUPED.match(digits):
            continue
        after = text[e : e + 12]
        sw = _AFTER_WORD.match(after)
        before = text[max(0, s - 3) : s].rstrip(" ")
        tokens.append(
            Tok(
                start=s,
                end=e,
                text=tok,
                written=Decimal(digits.replace(",", "")),
                paren=before.endswith(("(", "($", "(€", "(£")) and after.lstrip().startswith(")"),
                minus=minus,
                scale_word=_SCALE_WORDS.get(sw.group(1).lower(), 12) if sw else 0,
                percent=bool(re.match(r"\s?(%|percent\b)", after)),
                currency=_CURRENCY.get(before[-1:]) if before else None,
            )
        )
    found: dict[int, tuple[int, int]] = {}
    for rx, power in _DOC_SCALES:
        for m in rx.finditer(text):
            p = power if power is not None else _SCALE_NAMES[m.group(1).lower()]
            found.setdefault(p, (m.start(), m.end()))
    scale = next(iter(found)) if len(found) == 1 else (0 if not found else None)
    item = found.get(scale) if scale else None
    offs, acc = [], 0
    for ch in text:
        offs.append(acc)
        acc += len(ch.encode("utf-8"))
    offs.append(acc)
    return Doc(doc_id, text, lines, tokens, scale, item, offs)


# --- sites: right values ---------------------------------------------------------------------


@dataclass
class Site:
    doc: Doc
    tok: Tok
    value: Decimal  # the right value: signed and scaled as the filing means it
    power: int  # the heading/caption scale applied (0 when none, or a scale word did it)
    unit: str | None
    line: Line
    slot: int | None  # tab slot of the token in its row (1 = first after the label)
    label: str | None  # the row label (table) or None
    key: str | None  # the column year over the token
    header: Line | None  # the header line holding the years
    span: tuple[int, int]  # the row (table) or the sentence (text), code points

    @property
    def table(self) -> bool:
        return self.line.tabbed


def _sentence(doc: Doc, line: Line, tok: Tok) -> tuple[int, int]:
    text = line.text
    rel_s, rel_e = tok.start - line.start, tok.end - line.start
    start = 0
    for m in re.finditer(r"[.;]\s+", text[:rel_s]):
        start = m.end()
    m = re.compile(r"[.;](\s|$)").search(text, rel_e)
    end = m.start() + 1 if m else len(text.rstrip())
    return line.start + start, line.start + end


def _slots(line: Line) -> list[tuple[int, int]]:
    out, pos = [], line.start
    for part in line.text.split("\t"):
        out.append((pos, pos + len(part)))
        pos += len(part) + 1
    return out


def _header(doc: Doc, line: Line, nslots: int) -> Line | None:
    """The nearest line above in the same table whose slots hold one year each."""
    i = doc.lines.index(line)
    for j in range(i - 1, max(-1, i - 40), -1):
        cand = doc.lines[j]
        if not cand.text.strip():
            return None
        if not cand.tabbed:
            continue
        years = [
            len(
                re.findall(
                    r"(?<!\d)(?:19|20)\d\d(?!\d)", cand.text[s - cand.start : e - cand.start]
                )
            )
            for s, e in _slots(cand)
        ]
        if sum(years) >= 2:
            found = re.findall(r"(?<!\d)(?:19|20)\d\d(?!\d)", cand.text)
            if len(years) != nslots or len(set(found)) != len(found):
                return None  # misaligned, or one year over two columns: no key
            return cand
    return None


def _unit_of(doc: Doc, tok: Tok, span: tuple[int, int], table: bool) -> str | None:
    if tok.percent:
        return "%"
    if tok.currency:
        return tok.currency
    if table:
        # the currency the table shows in this token's column (its slot in the rows above
        # and below, up to a blank line); one only. A share-count column beside a price
        # column has none.
        line = doc.line_of(tok.start)
        i = doc.lines.index(line)
        slot = next(n for n, (s, e) in enumerate(_slots(line)) if s <= tok.start < e)
        lo = hi = i
        while lo > 0 and doc.lines[lo - 1].text.strip():
            lo -= 1
        while hi + 1 < len(doc.lines) and doc.lines[hi + 1].text.strip():
            hi += 1
        signs = set()
        for other in doc.lines[lo : hi + 1]:
            slots = _slots(other)
            if other.tabbed and slot < len(slots):
                s, e = slots[slot]
                signs |= {_CURRENCY[c] for c in doc.text[s:e] if c in _CURRENCY}
        if len(signs) == 1:
            return signs.pop()
    return None


def make_site(doc: Doc, start: int, end: int, gold: Decimal | None, gold_scale: str) -> Site | None:
    tok = next((t for t in doc.tokens if t.start == start and t.end == end), None)
    if tok is None:
        # a span of "(2,088)" or "$1,496.5": the one token inside it
        inner = doc.tokens_in(start, end)
        if len(inner) != 1 or doc.text[start:end].strip("()$€£ %") != inner[0].text:
            return None
        tok = inner[0]
    if _YEAR.match(tok.text):
        return None
    line = doc.line_of(tok.start)
    if gold is not None and abs(gold) != tok.written:
        return None
    if gold is not None:
        negative = gold < 0
    else:  # brackets mean a negative amount in a table; in prose they are a footnote or a list
        negative = tok.minus or (tok.paren and line.tabbed)
    signed = -tok.written if negative else tok.written
    if line.tabbed:
        slots = _slots(line)
        slot = next(i for i, (s, e) in enumerate(slots) if s <= tok.start and tok.end <= e)
        if slot == 0:
            return None
        # each slot after the label holds one token: an unambiguous row
        row_toks = doc.tokens_in(line.start, line.end)
        if any(len([t for t in row_toks if s <= t.start < e]) > 1 for s, e in slots[1:]):
            return None
        label = line.text.split("\t", 1)[0].strip() or None
        header = _header(doc, line, len(slots))
        key = None
        if header is not None:
            hs, he = _slots(header)[slot]
            years = re.findall(r"(?<!\d)(?:19|20)\d\d(?!\d)", doc.text[hs:he])
            key = years[0] if len(years) == 1 else None
        span = (line.start, line.start + len(line.text.rstrip()))
    else:
        slot, label, header, key = None, None, None, None
        span = _sentence(doc, line, tok)
    unit = _unit_of(doc, tok, span, line.tabbed)
    label_pct = bool(label and re.search(r"%|percent", label, re.I))
    if label_pct and not tok.percent:
        unit = None  # a percentage row without a % sign: a plain number
    if tok.percent or gold_scale == "percent" or label_pct:
        if not tok.percent and gold_scale == "percent" and line.tabbed:
            unit = None  # a percentage column without a % sign: a plain number
        power = 0
    elif tok.scale_word:
        power = 0
        signed = signed * (Decimal(10) ** tok.scale_word)
        if gold_scale and _SCALE_NAMES.get(gold_scale, -1) != tok.scale_word:
            return None
    elif line.tabbed:
        if doc.scale is None:
            return None
        power = doc.scale
        if gold_scale in _SCALE_NAMES and _SCALE_NAMES[gold_scale] != power:
            return None
        if gold_scale == "" and power:
            return None  # "in thousands, except per share data": the gold says no scale here
        if power and gold_scale == "doc" and label and _UNSCALED.search(label):
            return None
        if not power and gold_scale == "doc" and _ANY_SCALE.search(doc.text):
            return None  # a scale stated in a form not read here ("$ million"): unsure
    else:
        if gold_scale in _SCALE_NAMES:
            return None  # a scale the sentence does not state at the number
        power = 0
    value = signed * (Decimal(10) ** power)
    return Site(doc, tok, value, power, unit, line, slot, label, key, header, span)


def iter_sites(corpus: Path | None = None, limit_docs: int | None = None) -> Iterator[list[Site]]:
    """The sites of each document, document by document, in doc id order."""
    corpus = corpus or corpus_dir()
    by_doc: dict[str, list[dict[str, Any]]] = {}
    with (corpus / "gold_facts.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("source") != "github:NExTplusplus/TAT-QA":
                continue
            by_doc.setdefault(row["doc_id"], []).append(row)
    for n, doc_id in enumerate(sorted(by_doc)):
        if limit_docs is not None and n >= limit_docs:
            break
        path = corpus / "documents" / f"{doc_id}.txt"
        if not path.exists():
            continue
        text = path.read_bytes().decode("utf-8")
        if not unicodedata.is_normalized("NFC", text):
            continue
        doc = read_doc(doc_id, text)
        seen: set[int] = set()
        sites = []
        for row in by_doc[doc_id]:
            spans = row.get("evidence_spans") or []
            span_answer = row["answer_type"] in ("span", "count") and len(spans) == 1
            operands = row["answer_type"] == "arithmetic"
            if not (span_answer and row["gold_value_numeric"] is not None) and not operands:
                continue
            gold = Decimal(str(row["gold_value_numeric"])) if span_answer else None
            if gold is not None and gold == gold.to_integral():
                gold = gold.quantize(Decimal(1))
            gold_scale = row.get("scale") or ""
            if operands and gold_scale == "percent":
                gold_scale = "doc"  # the operands of a ratio are amounts; the document says
            for sp in spans:
                s, e = sp["start"], sp["end"]
                if doc.text[s:e] != sp["text"] or s in seen:
                    continue
                site = make_site(doc, s, e, gold, gold_scale)
                if site is None:
                    continue
                seen.add(s)
                sites.append(site)
        if sites:
            yield sites


# --- candidates ---------------------------------------------------------------------------


@dataclass
class Packet:
    doc_id: str
    split: str
    family: str
    document: str
    schema: dict[str, Any]
    candidates: list[dict[str, Any]]
    labels: dict[str, bool]  # candidate id -> right
    context: str = ""  # where the site sits, for the analysis: table or text, keyed, scale


def context_of(site: Site, keyed: bool) -> str:
    """``table, keyed, scale after the value`` and the like: the site's setting in words."""
    parts = ["table" if site.table else "text"]
    if site.table:
        parts.append("keyed field" if keyed and site.key else "one-cell field")
    if site.power and site.doc.scale_item:
        start = site.doc.scale_item[0]
        if start > site.tok.start:
            parts.append("scale stated after the value")
        elif site.doc.line_of(start).tabbed:
            parts.append("scale on a tabbed header line")
        else:
            parts.append("scale in a heading above")
    return ", ".join(parts)


def _field_name(site: Site, keyed: bool) -> str:
    if site.table and keyed and site.key and site.label:
        return f"r{site.line.start}"  # one field per row (two rows may share a label)
    return f"s{site.tok.start}"


def _field_spec(site: Site, keyed: bool, years: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "number"}
    if site.unit:
        spec["unit"] = site.unit
    aliases = []
    if site.label and re.search(r"[A-Za-z]", site.label):
        aliases.append(site.label)
    if site.table and keyed and site.key and site.label and years:
        spec["keys"] = years
    elif site.table and site.key and aliases and site.key not in site.label:
        # a field of one cell: its names are the row label and the column header (#300)
        aliases.append(site.key)
    if aliases:
        spec["aliases"] = aliases
    return spec


def build_schema(sites: list[Site]) -> dict[str, Any]:
    keyed = keyed_doc(sites[0].doc.doc_id)
    fields: dict[str, Any] = {}
    for site in sites:
        name = _field_name(site, keyed)
        years = []
        if site.header is not None:
            years = list(dict.fromkeys(re.findall(r"(?<!\d)(?:19|20)\d\d(?!\d)", site.header.text)))
        spec = _field_spec(site, keyed, years)
        if name in fields:
            old = fields[name]
            if old.get("unit") != spec.get("unit"):
                old.pop("unit", None)  # a row with mixed units: no unit
            if "keys" in old and "keys" in spec:
                old["keys"] = list(dict.fromkeys(old["keys"] + spec["keys"]))
            continue
        fields[name] = spec
    return {"fields": fields}


def _item(doc: Doc, start: int, end: int, role: str | None = None, offsets: bool = True) -> dict:
    item: dict[str, Any] = {"text": doc.text[start:end]}
    if offsets:
        item = {"start": doc.b(start), "end": doc.b(end), "text": doc.text[start:end]}
    if role:
        item["role"] = role
    return item


def _cell(tok: Tok) -> tuple[int, int]:
    """A cell as a model quotes it: the number with its brackets and currency sign."""
    return tok.start, tok.end


def _value_item(site: Site, tok: Tok, rng: random.Random, whole: bool | None = None) -> dict:
    doc = site.doc
    if whole is None:
        whole = rng.random() < 0.6
    if whole:
        return _item(doc, site.span[0], site.span[1], offsets=rng.random() < 0.5)
    s, e = _cell(tok)
    return _item(doc, s, e)


def _roles(
    site: Site,
    rng: random.Random,
    schema: dict,
    field_name: str,
    key: str | None,
    tok: Tok | None = None,
) -> list[dict]:
    """Role items a model adds: sign (of the number it gives), scale, unit, field and key of
    the site (each sometimes)."""
    doc, items = site.doc, []
    tok = tok or site.tok
    spec = schema["fields"][field_name]
    if tok.paren and rng.random() < 0.5:
        items.append(_item(doc, tok.start - 1, tok.end + 1, "sign", offsets=False))
    if site.power and doc.scale_item and rng.random() < 0.6:
        items.append(_item(doc, *doc.scale_item, role="scale"))
    unit = spec.get("unit")
    if unit in ("USD", "EUR", "GBP") and not site.tok.currency and rng.random() < 0.5:
        sign = {"USD": "$", "EUR": "€", "GBP": "£"}[unit]
        if doc.text.rfind(sign, 0, site.tok.start) >= 0:
            items.append({"role": "unit", "text": sign})
    aliases = spec.get("aliases") or []
    if site.label in aliases and site.table and rng.random() < 0.6:
        s = site.line.start + site.line.text.index(site.label)
        items.append(_item(doc, s, s + len(site.label), "field"))
    if site.key in aliases and site.header is not None and rng.random() < 0.6:
        m = re.search(rf"(?<!\d){site.key}(?!\d)", site.header.text)
        if m:  # the column header as a second field item
            s = site.header.start + m.start()
            items.append(_item(doc, s, s + 4, "field"))
    if key and site.header is not None and spec.get("keys") and rng.random() < 0.6:
        m = re.search(rf"(?<!\d){key}(?!\d)", site.header.text)
        if m:
            s = site.header.start + m.start()
            items.append(_item(doc, s, s + 4, "key"))
    return items


def _cand(cid: str, field_name: str, value: Decimal, schema: dict, key: str | None, items) -> dict:
    c: dict[str, Any] = {"id": cid, "field": field_name, "value": canonical(value)}
    unit = schema["fields"][field_name].get("unit")
    if unit:
        c["unit"] = unit
    if schema["fields"][field_name].get("keys"):
        c["key"] = key
    c["evidence"] = items
    return c


def _tok_value(site: Site, tok: Tok) -> Decimal:
    """The value a token means read like the site (its sign, its scale word or the heading's)."""
    v = -tok.written if tok.negative else tok.written
    if tok.scale_word:
        return v * Decimal(10) ** tok.scale_word
    return v * Decimal(10) ** (site.power if not tok.percent else 0)


def _row_tokens(site: Site) -> list[Tok]:
    toks = site.doc.tokens_in(*site.span)
    return [t for t in toks if t is not site.tok and not _YEAR.match(t.text)]


def _mutate_digits(value: Decimal, rng: random.Random) -> Decimal | None:
    s = canonical(abs(value))
    digits = [i for i, ch in enumerate(s) if ch.isdigit()]
    if not digits:
        return None
    for _ in range(10):
        chars = list(s)
        if len(digits) >= 2 and rng.random() < 0.5:
            k = rng.randrange(len(digits) - 1)
            i, j = digits[k], digits[k + 1]
            chars[i], chars[j] = chars[j], chars[i]
        else:
            i = rng.choice(digits)
            chars[i] = rng.choice([d for d in "0123456789" if d != chars[i]])
        out = "".join(chars).lstrip("0") or "0"
        if out.startswith("."):
            out = "0" + out
        new = Decimal(out) * (-1 if value < 0 else 1)
        if new != value and canonical(new) != canonical(value):
            return new
    return None


def _key_differs(site: Site, key: str) -> bool:
    """Whether the row's cell under ``key`` holds another value than the site (or none)."""
    if site.header is None:
        return False
    slots = _slots(site.line)
    for j, (s, e) in enumerate(_slots(site.header)):
        if j < len(slots) and re.search(rf"(?<!\d){key}(?!\d)", site.doc.text[s:e]):
            toks = site.doc.tokens_in(*slots[j])
            return all(_tok_value(site, t) != site.value for t in toks)
    return False


@dataclass
class _At:
    """One site as the packets of its document see it."""

    n: int
    site: Site
    schema: dict[str, Any]
    fname: str
    key: str | None
    split: str
    context: str

    def packet(self, family: str, cands: list[dict], labels: dict[str, bool]) -> Packet:
        doc = self.site.doc
        return Packet(
            doc.doc_id, self.split, family, doc.text, self.schema, cands, labels, self.context
        )

    def candidate(
        self,
        cid: str,
        value: Decimal,
        rng: random.Random,
        tok: Tok | None = None,
        v_item: dict | None = None,
        drop: tuple[str, ...] = (),
        key: str | None = None,
    ) -> dict:
        """A candidate for the site's field: a value item (``v_item``, or the row/sentence or
        the cell of ``tok``), then the role items a model adds, less the roles in ``drop``."""
        tok = tok or self.site.tok
        key = key or self.key
        if v_item is None:
            v_item = _value_item(self.site, tok, rng)
        roles = _roles(self.site, rng, self.schema, self.fname, key, tok)
        items = [v_item, *(i for i in roles if i.get("role") not in drop)]
        return _cand(cid, self.fname, value, self.schema, key, items)

    def wrong(self, family: str, value: Decimal, rng: random.Random, **how: Any) -> Packet:
        """A packet of one wrong candidate of ``family``."""
        cid = f"{self.n}.{family}"
        return self.packet(family, [self.candidate(cid, value, rng, **how)], {cid: False})


def _line_item(doc: Doc, line: Line, rng: random.Random) -> dict:
    """A whole table line quoted, with its offsets or without (a quote)."""
    return _item(doc, line.start, line.start + len(line.text.rstrip()), offsets=rng.random() < 0.5)


def packets_for(sites: list[Site], seed: int = 14) -> Iterator[Packet]:
    """The packets of one document: each site's right value, then its planted wrong ones."""
    doc = sites[0].doc
    keyed = keyed_doc(doc.doc_id)
    schema = build_schema(sites)
    for n, site in enumerate(sites):
        fname = _field_name(site, keyed)
        spec = schema["fields"][fname]
        key = site.key if spec.get("keys") else None
        context = context_of(site, bool(key))
        at = _At(n, site, schema, fname, key, split_of(doc.doc_id), context)
        base = f"{doc.doc_id}:{site.tok.start}"
        yield from _families(at, spec, lambda family, base=base: _rng(seed, base, family))


def _families(at: _At, spec: dict[str, Any], rng_for: Any) -> Iterator[Packet]:
    site, doc, n = at.site, at.site.doc, at.n
    cid = f"{n}.right"
    yield at.packet("right", [at.candidate(cid, site.value, rng_for("right"))], {cid: True})

    others = [t for t in _row_tokens(site) if _tok_value(site, t) != site.value]
    # (a) another number of the row or sentence, the whole row/sentence quoted
    rng = rng_for("same_row")
    if others:
        t = rng.choice(others)
        v_item = _value_item(site, t, rng, whole=True)
        yield at.wrong("same_row", _tok_value(site, t), rng, tok=t, v_item=v_item)
    # (b) the number as written, without the heading's scale
    rng = rng_for("no_scale")
    written = -site.tok.written if site.value < 0 else site.tok.written
    if site.power and written != site.value:
        yield at.wrong("no_scale", written, rng, drop=("scale",))
    # (c) competing proposals for one field: the right one and another value, both cited
    rng = rng_for("competing")
    if others:
        t = rng.choice(others)
        good = at.candidate(f"{n}.competing.right", site.value, rng)
        bad = at.candidate(
            f"{n}.competing.wrong", _tok_value(site, t), rng, tok=t, v_item=_item(doc, *_cell(t))
        )
        pair = [good, bad] if rng.random() < 0.5 else [bad, good]
        yield at.packet("competing", pair, {good["id"]: True, bad["id"]: False})
    # (d) the neighbouring column (other period) of the same row, under the site's key
    rng = rng_for("other_year")
    if site.table and site.slot is not None:
        slots = _slots(site.line)
        neigh = [
            t
            for j in (site.slot + 1, site.slot - 1)
            if 1 <= j < len(slots)
            for t in doc.tokens_in(*slots[j])
            if _tok_value(site, t) != site.value
        ]
        if neigh:
            yield at.wrong("other_year", _tok_value(site, neigh[0]), rng, tok=neigh[0])
    # (e) a negative value given as positive
    rng = rng_for("sign")
    if site.value < 0:
        yield at.wrong("sign", -site.value, rng, drop=("sign",))
    # (f) a digit off, or two transposed
    rng = rng_for("digit")
    wrong = _mutate_digits(site.value, rng)
    if wrong is not None:
        yield at.wrong("digit", wrong, rng)
    # (g) a percentage for an amount, or an amount for a percentage
    rng = rng_for("pct_vs_amount")
    flip = [t for t in _row_tokens(site) if t.percent != site.tok.percent]
    if flip:
        t = rng.choice(flip)
        v = _tok_value(site, t) if not t.percent else t.written * (-1 if t.negative else 1)
        if v != site.value:
            yield at.wrong("pct_vs_amount", v, rng, tok=t)
    # (h) the same column of another row, with the site's own labels
    rng = rng_for("other_row")
    if site.table and site.slot is not None:
        i = doc.lines.index(site.line)
        rows = []
        for j in (i - 1, i + 1, i - 2, i + 2):
            if 0 <= j < len(doc.lines) and doc.lines[j].tabbed:
                sl = _slots(doc.lines[j])
                toks = doc.tokens_in(*sl[site.slot]) if site.slot < len(sl) else []
                if len(toks) == 1 and _tok_value(site, toks[0]) != site.value:
                    rows.append((doc.lines[j], toks[0]))
        if rows:
            line, t = rows[0]
            v_item = _line_item(doc, line, rng) if rng.random() < 0.5 else _item(doc, *_cell(t))
            yield at.wrong("other_row", _tok_value(site, t), rng, tok=t, v_item=v_item)
    # (i) the right value under another period's key
    rng = rng_for("wrong_key")
    choices = [k for k in (spec.get("keys") or []) if k != at.key and _key_differs(site, k)]
    if at.key and choices:
        yield at.wrong("wrong_key", site.value, rng, key=rng.choice(choices))
    # (j) scaled one step too far
    rng = rng_for("wrong_scale")
    if site.power and site.value:
        yield at.wrong("wrong_scale", site.value * 1000, rng, drop=("scale",))
    # (k) a year of the header as the value
    rng = rng_for("year_as_value")
    if site.header is not None and site.key:
        m = re.search(rf"(?<!\d){site.key}(?!\d)", site.header.text)
        if m and Decimal(site.key) != site.value:
            s = site.header.start + m.start()
            whole = rng.random() < 0.5
            v_item = _line_item(doc, site.header, rng) if whole else _item(doc, s, s + 4)
            yield at.wrong(
                "year_as_value", Decimal(site.key), rng, v_item=v_item, drop=("sign", "scale")
            )
    # (l) the day of a date of the row or sentence as the value, the whole of it quoted
    rng = rng_for("date_day")
    days = [t for t in _date_days(site) if t.written != abs(site.value)]
    if days:
        t = rng.choice(days)
        v_item = _value_item(site, t, rng, whole=True)
        yield at.wrong(
            "date_day", t.written, rng, tok=t, v_item=v_item, drop=("sign", "scale", "unit")
        )


_DATE_DAY = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.? (\d{1,2})\b"
)


def _date_days(site: Site) -> list[Tok]:
    """The tokens of the site's row or sentence that are the day of a written date."""
    doc, (s, e) = site.doc, site.span
    starts = {m.start(1) for m in _DATE_DAY.finditer(doc.text, s, e)}
    return [t for t in doc.tokens_in(s, e) if t.start in starts and t is not site.tok]


def labelled_packets(
    seed: int = 14, corpus: Path | None = None, limit_docs: int | None = None
) -> Iterator[Packet]:
    """Every packet of the labelled set, document by document (deterministic for a seed)."""
    for sites in iter_sites(corpus, limit_docs):
        yield from packets_for(sites, seed)
