"""A mixed corpus for the reading tests: a PDF, HTML, XML and text, plus a PDF without a text
layer and an id with two source files. Claims and candidates are derived from the text the
reader gives (the offsets of a read document are its reading's), as the generated corpus of
the integration tests derives them from plain text."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from groundswell.shared.read import read_path
from tests.integration.corpus_gen import SCHEMA, _candidates, _claims

# The smallest files of ../shared/raw that have text (PDF reading is the slow part).
SOURCES = {
    "protocol": ("NCT06159946_Prot_000.pdf", ".pdf"),  # 2 pages
    "filing": ("aapl-10-q-2025-08-01.html", ".html"),
    "bill": ("h1058_enr.XML", ".XML"),  # the ending in any case
}
SCANNED = ("NCT06155240_Prot_SAP_000.pdf", "scan")  # one page, no text layer: read by OCR
NOTE = (
    "The board met on 4 March 2024. Revenue rose to 1,250.5 million dollars in the year, "
    "and the dividend was raised to 0.42 dollars a share, as the annual report explains at "
    "length in its second section on capital allocation and shareholder returns.\n"
)

READ_DOCUMENTS = len(SOURCES) + 1  # the scanned PDF is read too (by OCR)


def _write_units(folder: Path, doc_id: str, text: str, rng: random.Random) -> None:
    claims, claim_labels = _claims(doc_id, text, rng)
    candidates, cand_labels = _candidates(text, rng)
    (folder / "claims" / f"{doc_id}.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in claims), encoding="utf-8"
    )
    (folder / "candidates" / f"{doc_id}.json").write_text(json.dumps(candidates))
    (folder / "labels" / f"{doc_id}.json").write_text(
        json.dumps({"claims": claim_labels, "candidates": cand_labels})
    )


def write_mixed_corpus(folder: Path, raw: Path) -> dict[str, str]:
    """Write the corpus under ``folder``; return each document id's text as read."""
    rng = random.Random(5)
    for sub in ("documents", "claims", "candidates", "labels"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "schema.json").write_text(json.dumps(SCHEMA))
    texts = {}
    for doc_id, (name, suffix) in SOURCES.items():
        target = folder / "documents" / f"{doc_id}{suffix}"
        shutil.copyfile(raw / name, target)
        texts[doc_id] = read_path(target).text
    (folder / "documents" / "note.txt").write_text(NOTE, encoding="utf-8")
    texts["note"] = NOTE
    for doc_id, text in texts.items():
        _write_units(folder, doc_id, text, rng)
    name, doc_id = SCANNED
    shutil.copyfile(raw / name, folder / "documents" / f"{doc_id}.pdf")
    (folder / "claims" / f"{doc_id}.jsonl").write_text('{"id": "s1", "claim": "Protocol"}\n')
    (folder / "candidates" / f"{doc_id}.json").write_text(
        json.dumps([{"id": "c1", "field": "figure_1", "value": "1", "evidence": {"text": "1"}}])
    )
    # One id, two source files: an input error of that id, nothing read.
    (folder / "documents" / "twice.txt").write_text(NOTE, encoding="utf-8")
    shutil.copyfile(raw / SOURCES["protocol"][0], folder / "documents" / "twice.pdf")
    (folder / "claims" / "twice.jsonl").write_text('{"id": "t1", "claim": "The board met"}\n')
    return texts
