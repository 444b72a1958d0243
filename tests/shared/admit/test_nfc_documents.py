"""Real documents that are not NFC are admitted on their NFC form, offsets moved with the text.

31 documents of the shared corpus are not NFC (EM QUAD and EN QUAD in the public laws,
GREEK QUESTION MARK in a 10-K). Each gets candidates cited by byte offsets into the original,
with quotes that cross the characters NFC rewrites. The unit must be admitted exactly as
groundgate admits the same facts cited, independently, in the NFC text (what its ``read``
writes), and the receipt must say the document was normalized, with both digests.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from pathlib import Path

import pytest

from groundswell.shared.admit.normalize import nfc_packet
from groundswell.shared.admit.rederive import check_receipt
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.receipts import open_receipt
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store
from tests.shared.admit import differential

pytestmark = pytest.mark.corpus

SCHEMA = {"fields": {"amount": {"type": "number", "multiple": True}}}
_NUMBER = re.compile(r"\d[\d,]*\d|\d")
PER_DOCUMENT = 8


def _clean(text: str, i: int) -> bool:
    """NFC cannot join the characters on either side of i (both plain ASCII)."""
    return i == 0 or i == len(text) or (text[i - 1].isascii() and text[i].isascii())


def _candidates(original: str) -> tuple[list[dict], list[dict]]:
    """Candidates cited in the original, and the same ones cited in its NFC text."""

    def byte(text: str, i: int) -> int:
        return len(text[:i].encode())

    rewritten = [i for i, ch in enumerate(original) if unicodedata.normalize("NFC", ch) != ch]
    ours, theirs = [], []
    for n, at in enumerate(rewritten[:: max(1, len(rewritten) // PER_DOCUMENT)][:PER_DOCUMENT]):
        number = _NUMBER.search(original, at, at + 1500)
        if number is not None:  # the quote runs from before the rewritten character to it
            start, end = max(at - 12, 0), number.end()
        else:  # or from a number before it to past it
            before = [m for m in _NUMBER.finditer(original, max(at - 1500, 0), at)]
            if not before:
                continue
            number = before[-1]
            start, end = number.start(), at + 2
        while not _clean(original, start):
            start -= 1
        while not _clean(original, end):
            end += 1
        quote = original[start:end]
        cand = {"id": f"c{n}", "field": "amount", "value": number.group().replace(",", "")}
        ours.append(
            {
                **cand,
                "evidence": {
                    "start": byte(original, start),
                    "end": byte(original, end),
                    "text": quote,
                },
            }
        )
        prefix = unicodedata.normalize("NFC", original[:start])
        nfc_quote = unicodedata.normalize("NFC", quote)
        theirs.append(
            {
                **cand,
                "evidence": {
                    "start": len(prefix.encode()),
                    "end": len((prefix + nfc_quote).encode()),
                    "text": nfc_quote,
                },
            }
        )
    return ours, theirs


def test_non_nfc_documents_are_admitted_on_their_nfc_form(shared_corpus: Path, tmp_path: Path):
    names = []
    for path in sorted((shared_corpus / "documents").glob("*.txt")):
        if not unicodedata.is_normalized("NFC", path.read_text(encoding="utf-8")):
            names.append(path.stem)
    assert len(names) == 31
    corpus, output = open_store(str(tmp_path / "corpus")), open_store(str(tmp_path / "out"))
    corpus.put("schema.json", json.dumps(SCHEMA).encode())
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    policy = registry.resolve("default@1")
    runner = UnitRunner(corpus, output, policy)
    outcomes: dict[str, int] = {}
    for name in names:
        raw = (shared_corpus / "documents" / f"{name}.txt").read_bytes()
        original = raw.decode()
        ours, theirs = _candidates(original)
        assert ours, name
        corpus.put(f"documents/{name}.txt", raw)
        corpus.put(f"candidates/{name}.json", json.dumps(ours).encode())
        result = runner.unit("admit", name)
        assert result.status == "computed", (name, result.errors)
        body = open_receipt(output.get(result.receipt_key), result.receipt_key)
        nfc = unicodedata.normalize("NFC", original)
        assert body["normalized"]["form"] == "NFC"
        assert body["normalized"]["original_sha256"] == hashlib.sha256(raw).hexdigest()
        assert body["normalized"]["text_sha256"] == hashlib.sha256(nfc.encode()).hexdigest()
        gold = differential.oracle(
            {"document": nfc, "schema": SCHEMA, "candidates": theirs, "policy": policy.admit}
        )
        # The same decisions and the very same receipt, byte for byte.
        assert body["receipt"] == gold, name
        for decision in gold["decisions"]:
            outcomes[decision["outcome"]] = outcomes.get(decision["outcome"], 0) + 1
        # The receipt re-derives from the inputs as given: the move is a function of them.
        packet = nfc_packet(original, body["records"])
        assert (
            check_receipt(body["receipt"], packet.text, SCHEMA, packet.candidates, policy.admit)
            == []
        )
    # Most cited values are admitted: the offsets really landed on them.
    assert outcomes.get("admitted", 0) > 0.5 * sum(outcomes.values()), outcomes
