"""Differential tests: groundswell's receipts equal groundgate 0.11.0's on real documents.

Packets are built from ../shared/corpus (see ``differential.py``): right values cited with
quotes and with byte offsets, and planted errors (a value times ten, a changed digit, a wrong
unit, an unscaled value before "million", a value from another number of the sentence, a
flipped sign, "up to"/"more than", two proposals for one field, null literals, malformed
candidates). Every decision must be the same: outcome, codes, missing parts, parts, evidence,
and the digests of the whole receipt.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from groundswell.shared.admit import admit_packet
from tests.shared.admit import differential

pytestmark = pytest.mark.corpus

# Enough documents to exercise every rule on real tables and prose, few enough for CI.
GOLD_DOCUMENTS = 160
WIDE_DOCUMENTS = 36


def _compare(packets: list[dict]) -> tuple[Counter, list[str]]:
    codes: Counter = Counter()
    problems = []
    for packet in packets:
        ours = admit_packet(packet)
        theirs = differential.oracle(packet)
        for mine, gold in zip(ours["decisions"], theirs["decisions"], strict=True):
            codes.update(gold["codes"])
            codes[gold["outcome"]] += 1
            if mine != gold:
                keys = sorted(k for k in set(mine) | set(gold) if mine.get(k) != gold.get(k))
                problems.append(
                    f"{packet['document_id']} candidate {gold['candidate_id']}: {keys}: "
                    f"ours {[mine.get(k) for k in keys]} groundgate {[gold.get(k) for k in keys]}"
                )
        if ours["receipt_sha256"] != theirs["receipt_sha256"] and not problems:
            problems.append(f"{packet['document_id']}: receipt_sha256 differs")
    return codes, problems


def test_gold_fact_packets_agree_with_groundgate(shared_corpus: Path):
    packets = differential.packets(shared_corpus, GOLD_DOCUMENTS)
    codes, problems = _compare(packets)
    assert not problems, "\n".join(problems[:20])
    total = codes["admitted"] + codes["needs_verification"] + codes["rejected"]
    assert total > 5000
    # The planted errors are there and are caught, so the agreement is not vacuous.
    for code in (
        "VALUE_NOT_IN_EVIDENCE",
        "UNIT_NOT_IN_EVIDENCE",
        "QUALIFIED_VALUE",
        "SCALE_WORD",
        "PART_MISSING",
        "CONFLICTING_CANDIDATES",
        "NULL_STRING_LITERAL",
        "CANDIDATE_INVALID",
        "QUOTE_NOT_FOUND",
        "SPAN_INVALID",
        "KEY_NOT_AT_VALUE",
        "KEY_CITED",
        "VALUE_DERIVED",
        "FIELD_UNKNOWN",
        "TYPE_INVALID",
    ):
        assert codes[code] > 0, f"no candidate got {code}"
    assert codes["admitted"] > 1000


def test_candidates_across_the_corpus_agree_with_groundgate(shared_corpus: Path):
    packets = differential.wide_packets(
        shared_corpus, WIDE_DOCUMENTS, per_doc=30, max_bytes=120_000
    )
    kinds = {p["document_id"].split("-")[0] for p in packets}
    assert len(kinds) >= 3, kinds  # filings, labels, rules: not one kind of text
    codes, problems = _compare(packets)
    assert not problems, "\n".join(problems[:20])
    assert codes["admitted"] > 0 and codes["rejected"] > 0


def test_many_candidates_on_one_document_agree_with_groundgate(shared_corpus: Path):
    # Candidates share tokens (with and without a sign, cut short, quoted and cited), so a
    # reading kept for one candidate must never leak into another's decision.
    packet = differential.dense_packet(shared_corpus, 200_000, 600)
    codes, problems = _compare([packet])
    assert not problems, "\n".join(problems[:20])
    assert codes["QUALIFIED_VALUE"] > 0 and codes["EVIDENCE_REANCHORED"] > 0


EDGE_DOCUMENTS = 40


def test_role_item_quotes_at_word_edges_agree_with_groundgate(shared_corpus: Path):
    # Issue 14: a unit quote that occurs only inside a longer word ("percent" of "percentage",
    # "day" of "days") holds the form as a whole, since the item ends there; a letter before
    # the quote still breaks it. Also scale quotes ("in thousands" of "within thousands"),
    # currency names ("Swiss franc" of "Swiss francs"), document edges, punctuation, case,
    # role quotes overlapping the value, and value quotes inside words for contrast.
    packets = differential.edge_packets(shared_corpus, EDGE_DOCUMENTS)
    codes, problems = _compare(packets)
    assert not problems, "\n".join(problems[:20])
    # The class is there: unit items that pass where a letter goes on right after the quote.
    inside = 0
    for packet in packets:
        raw = packet["document"].encode("utf-8")
        for d in admit_packet(packet)["decisions"]:
            for part in d.get("parts") or []:
                end = part["end"]
                if part["role"] == "unit" and part["passed"] and end is not None:
                    inside += end < len(raw) and raw[end : end + 1].isalpha()
    assert inside >= 5, inside
    assert codes["UNIT_CITATION_INVALID"] > 0 and codes["SCALE_CITATION_INVALID"] > 0
    assert codes["admitted"] > 100


AFTER_UNIT_DOCUMENTS = 40


def test_unit_forms_after_the_value_agree_with_groundgate(shared_corpus: Path):
    # #249: a form of the field's unit after the value, also on its row ("Granted\t147,800\t
    # $7.06", "7.06%" in another cell, "USD" after, "$7.06 each" in the sentence), is no unit
    # place of it, so the unit stays missing; a form before it at a unit place (a caption, the
    # column's "$") or next to it still makes the unit present. With and without field items.
    packets = differential.after_unit_packets(shared_corpus, AFTER_UNIT_DOCUMENTS)
    codes, problems = _compare(packets)
    assert not problems, "\n".join(problems[:20])
    assert codes["PART_MISSING"] > 100 and codes["admitted"] > 100
    assert codes["FIELD_CITATION_INVALID"] > 0 and codes["UNIT_CITATION_INVALID"] > 0
