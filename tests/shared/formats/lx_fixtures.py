"""LangExtract annotated documents over real documents of ../shared/corpus, built with
LangExtract's own data classes and written by ``lx.io.save_annotated_documents`` (no model call).

Each document gets extractions of every kind a LangExtract run writes: exact spans, case-shifted
ones (LangExtract's token match ignores case), token-offset ones (the interval on token bounds
covers more than ``extraction_text``), unaligned ones (``char_interval`` null; some found in the
text, some not; some with outside evidence), ``match_lesser`` spans covering two characters of a
long extraction, ``match_fuzzy`` spans of an altered text, role attributes (a ``field_text``
list, also one too long, and a list for another role), keyed and unknown fields. One document
in eight is made non-NFC (decomposed).
"""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

import langextract as lx
from langextract.core.data import AlignmentStatus, AnnotatedDocument, CharInterval, Extraction

SCHEMA = {
    "fields": {
        "amount": {"type": "number", "multiple": True},
        "dollars": {"type": "number", "unit": "USD", "multiple": True},
        "count": {"type": "integer", "multiple": True},
        "name": {"type": "string", "multiple": True},
        "sales": {"type": "number", "keys": ["2019", "2018"], "multiple": True},
        "percent": {"type": "number", "unit": "percent", "multiple": True},
    }
}

NUMBER = re.compile(r"(?<![\w.,$])(\$?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)(?![\w])")
WORDS = re.compile(r"\b[A-Z][a-z]{3,}(?: [A-Za-z][a-z]{2,}){1,2}\b")
SENTENCE = re.compile(r"[A-Z][^.\n]{40,90}[.]")


def _on_boundary(text: str, i: int) -> bool:
    return i >= len(text) or unicodedata.combining(text[i]) == 0


def documents(corpus: Path, count: int) -> list[tuple[str, str]]:
    """``count`` real documents (id, text) spread over the corpus's parts, with numbers in
    them; long ones cut at a line break so a test admits each in well under a second."""
    paths = sorted((corpus / "documents").glob("*.txt"))
    picked: list[tuple[str, str]] = []
    step = max(1, len(paths) // (count * 2))
    for path in paths[::step] + paths:
        if len(picked) == count:
            break
        if any(path.stem == p for p, _ in picked):
            continue
        text = path.read_text(encoding="utf-8")
        if len(text) > 12_000:
            text = text[: text.rfind("\n", 0, 12_000) + 1] or text[:12_000]
        if len(NUMBER.findall(text)) >= 6 and WORDS.search(text):
            picked.append((path.stem, text))
    return picked


def _x(cls: str, text: str, span: tuple[int, int] | None, status, **attrs) -> Extraction:
    return Extraction(
        extraction_class=cls,
        extraction_text=text,
        char_interval=CharInterval(*span) if span else None,
        alignment_status=status,
        attributes={k: v for k, v in attrs.items()} or None,
    )


def extractions(text: str, rng: random.Random) -> list[Extraction]:
    numbers = [m for m in NUMBER.finditer(text) if _on_boundary(text, m.end())]
    words = [m for m in WORDS.finditer(text) if _on_boundary(text, m.end())]
    sentences = [m for m in SENTENCE.finditer(text) if _on_boundary(text, m.end())]
    out: list[Extraction] = []
    exact = AlignmentStatus.MATCH_EXACT
    for m in rng.sample(numbers, min(4, len(numbers))):
        s, e = m.span()
        shown = m.group(0)
        plain = (m.group(2) + (m.group(3) or "")).replace(",", "")
        kind = rng.randrange(6)
        if kind == 0:  # exact, the value as written
            out.append(_x("amount", shown, (s, e), exact))
        elif kind == 1:  # exact, a value attribute and a unit
            cls = "dollars" if m.group(1) else "percent" if m.group(4) else "count"
            unit = {"dollars": "USD", "percent": "percent"}.get(cls)
            out.append(
                _x(cls, shown, (s, e), exact, value=plain, **({"unit": unit} if unit else {}))
            )
        elif kind == 2:  # token offsets: the interval covers the token, the text drops "$"/"%"
            out.append(_x("amount", m.group(2), (s, e), exact, value=m.group(2).replace(",", "")))
        elif kind == 3:  # role items, some from the text near the value
            before = text[max(0, s - 40) : s].split()
            field_items = [w for w in before[-3:] if w.strip()] or ["total"]
            out.append(
                _x(
                    "amount",
                    shown,
                    (s, e),
                    exact,
                    value=plain,
                    field_text=[*field_items, "  "],
                    scale_text=rng.choice(["million", "thousand", " "]),
                    sign_text=rng.choice(["decrease", "loss", ""]),
                    unit_text="$" if m.group(1) else None,
                )
            )
        elif kind == 4:  # keyed
            out.append(
                _x(
                    "sales",
                    shown,
                    (s, e),
                    exact,
                    value=plain,
                    key=rng.choice(["2019", "2018", "2017"]),
                    key_text="2019",
                )
            )
        else:  # unaligned, but in the text: the verifier locates it
            out.append(_x("amount", shown, None, None, value=plain))
    for m in rng.sample(words, min(2, len(words))):
        s, e = m.span()
        shifted = m.group(0).upper() if rng.random() < 0.5 else m.group(0).lower()
        out.append(_x("name", shifted, (s, e), exact))  # case-shifted, called exact
    if sentences:
        m = rng.choice(sentences)
        s = m.start()
        long = m.group(0) + " and more besides that the model wrote"
        out.append(_x("name", long, (s, s + 2), AlignmentStatus.MATCH_LESSER))
        fuzzy = m.group(0)[:-2] + ("x" if m.group(0)[-2] != "x" else "y") + "."
        out.append(_x("name", fuzzy, m.span(), AlignmentStatus.MATCH_FUZZY))
        out.append(_x("name", m.group(0), m.span(), AlignmentStatus.MATCH_GREATER))
    # unaligned and not in the text: outside evidence, or none (NO_EVIDENCE)
    out.append(
        _x(
            "amount",
            "41,977",
            None,
            None,
            value="41977",
            source_url="https://example.gov/table-7",
            source_quote="the total was 41,977",
            source_retrieved="2026-11-30",
        )
    )
    out.append(_x("count", "12", None, None, knowledge="A dozen is twelve."))
    out.append(_x("count", "7 invented", None, None))
    if numbers and rng.random() < 0.5:
        m = rng.choice(numbers)
        # hostile attributes: a field list past the limit, a list for another role
        out.append(
            _x("amount", m.group(0), m.span(), exact, field_text=[f"row {i}" for i in range(9)])
        )
        out.append(_x("amount", m.group(0), m.span(), exact, unit_text=["$", "USD"]))
        out.append(_x("amount", "3", None, None, sign_text=["minus"]))
    if numbers and rng.random() < 0.3:
        m = rng.choice(numbers)
        out.append(_x("mystery", m.group(0), m.span(), exact))  # a field the schema lacks
    for i, x in enumerate(out):
        x.extraction_index = i + 1
        x.group_index = i
    return out


def _denormalize(text: str, rng: random.Random) -> str:
    """A non-NFC text: decomposed where it has composed letters, else with some inserted."""
    nfd = unicodedata.normalize("NFD", text)
    if nfd != text:
        return nfd
    at = text.find("\n", len(text) // 3) + 1
    return text[:at] + "Re\u0301sume\u0301 of the cafe\u0301 accounts.\n" + text[at:]


def write(corpus: Path, out_dir: Path, count: int, seed: int = 28) -> tuple[Path, list[str]]:
    """The JSONL file of ``count`` annotated documents, and the ids of the non-NFC ones."""
    docs: list[AnnotatedDocument] = []
    not_nfc: list[str] = []
    for n, (doc_id, text) in enumerate(documents(corpus, count)):
        rng = random.Random(f"{seed}:{doc_id}")
        if n % 8 == 3:
            text = _denormalize(text, rng)
            not_nfc.append(doc_id)
        docs.append(
            AnnotatedDocument(document_id=doc_id, text=text, extractions=extractions(text, rng))
        )
    lx.io.save_annotated_documents(
        iter(docs), output_dir=out_dir, output_name="lx.jsonl", show_progress=False
    )
    return out_dir / "lx.jsonl", not_nfc
