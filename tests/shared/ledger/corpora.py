"""Small corpora for the ledger's tests: documents, relations files and a vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

CONTRACT = (
    "SHARE PURCHASE AGREEMENT\n\n"
    "1.1  Acme Ltd hereby acquires Beta Inc, effective 1 March 2026.\n\n"
    "2.3  Reuters reports that Beta Inc owns Gamma Holdings, though the\n"
    "     registry has not been updated.\n\n"
    "4.2  The auditor does not accept that Acme Ltd acquired Beta Inc.\n"
)
VOCAB = """name: contracts
entity_types: [Party, Instrument]
relations:
  ACQUIRED: {subject: [Party], object: [Party], description: one party acquired another}
  OWNS: {subject: [Party], object: [Party]}
"""


def claim(claim_id: str, quote: str, relation: str = "ACQUIRED", **fields) -> dict:
    return {
        "claim_id": claim_id,
        "relation": relation,
        "subject_id": "Acme Ltd",
        "object_id": "Beta Inc",
        "asserter": "the agreement",
        "quote": quote,
        **fields,
    }


CONTRACT_CLAIMS = [
    claim("k:1", "Acme Ltd hereby acquires Beta Inc", subject_type="Party", object_type="Party"),
    claim(
        "k:2",
        "beta inc OWNS gamma holdings",
        "OWNS",
        subject_id="Beta Inc",
        object_id="Gamma Holdings",
        modality="reported",
        asserter="Reuters (rep. agreement)",
    ),
    claim(
        "k:3", "does not accept that Acme Ltd\nacquired", modality="rejected", asserter="auditor"
    ),
    claim("k:4", "Acme purchased Beta"),  # a paraphrase
    claim("k:5", "Acme Ltd", "SORT_OF_RELATED_TO"),  # outside the vocabulary
]


def make_corpus(
    root: Path,
    documents: dict[str, str],
    relations: dict[str, list[dict | str]],
    vocab: str | None = VOCAB,
) -> Path:
    (root / "documents").mkdir(parents=True, exist_ok=True)
    (root / "relations").mkdir(exist_ok=True)
    for doc_id, text in documents.items():
        (root / "documents" / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    for doc_id, lines in relations.items():
        body = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
        (root / "relations" / f"{doc_id}.jsonl").write_text(body, encoding="utf-8")
    if vocab is not None:
        (root / "vocabulary.yaml").write_text(vocab, encoding="utf-8")
    return root
