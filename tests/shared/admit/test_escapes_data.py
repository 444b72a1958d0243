"""The labelled set of bench/escapes.py: deterministic, every family planted, labels sound."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from bench.escapes_data import (
    FAMILIES,
    canonical,
    labelled_packets,
    read_doc,
    split_of,
)
from groundswell.shared.admit import Admitter

DOCS = 40  # the first documents in id order hold every family


def _dump(corpus: Path, seed: int) -> list[str]:
    return [
        json.dumps([p.doc_id, p.family, p.split, p.schema, p.candidates, p.labels], sort_keys=True)
        for p in labelled_packets(seed, corpus, limit_docs=DOCS)
    ]


def test_the_set_is_deterministic_and_seeded(shared_corpus: Path) -> None:
    first = _dump(shared_corpus, 14)
    assert first == _dump(shared_corpus, 14)
    assert first != _dump(shared_corpus, 15)


def test_every_family_produces_labelled_candidates(shared_corpus: Path) -> None:
    packets = list(labelled_packets(14, shared_corpus, limit_docs=DOCS))
    families = {p.family for p in packets}
    assert families == set(FAMILIES)
    for p in packets:
        ids = [c["id"] for c in p.candidates]
        assert sorted(ids) == sorted(p.labels)
        wanted = {"right": {True}, "competing": {True, False}}.get(p.family, {False})
        assert set(p.labels.values()) == wanted
        assert p.document == (shared_corpus / "documents" / f"{p.doc_id}.txt").read_text("utf-8")
    # every packet is a valid groundgate packet (admission decides it, no PacketError)
    for p in packets[:200]:
        decisions = Admitter(p.document, p.schema, None).admit(p.candidates)["decisions"]
        assert len(decisions) == len(p.candidates)


def test_wrong_values_differ_from_the_right_value_of_their_field(shared_corpus: Path) -> None:
    right: dict[tuple[str, str, str | None], str] = {}
    packets = list(labelled_packets(14, shared_corpus, limit_docs=DOCS))
    for p in packets:
        for c in p.candidates:
            if p.labels[c["id"]] and p.family == "right":
                right[(p.doc_id, c["field"], c.get("key"))] = c["value"]
    for p in packets:
        for c in p.candidates:
            if not p.labels[c["id"]]:
                assert right.get((p.doc_id, c["field"], c.get("key"))) != c["value"]


def test_split_is_fixed_by_document_hash() -> None:
    ids = [f"doc-{i}" for i in range(2000)]
    held = [i for i in ids if split_of(i) == "holdout"]
    assert 0.15 < len(held) / len(ids) < 0.25
    assert [split_of(i) for i in ids] == [split_of(i) for i in ids]


def test_table_reading_of_a_site() -> None:
    doc = read_doc("d", "\t2019\t2018\nSales\t$1,496.5\t(1,202.9)\n\n(in millions)\n")
    assert doc.scale == 6
    tok = next(t for t in doc.tokens if t.text == "1,202.9")
    assert tok.paren and tok.negative and not tok.percent
    assert canonical(Decimal("1496.50") * 10**6) == "1496500000"


def test_a_date_day_value_is_the_day_of_a_date_its_evidence_quotes(shared_corpus: Path) -> None:
    import re

    packets = [
        p
        for p in labelled_packets(14, shared_corpus, limit_docs=DOCS * 3)
        if p.family == "date_day"
    ]
    assert len(packets) >= 3
    for p in packets:
        (cand,) = p.candidates
        quote = cand["evidence"][0]["text"]
        days = re.findall(r"\b[A-Z][a-z]{2,8}\.? (\d{1,2})\b", quote)
        assert cand["value"] in days, (cand["value"], quote)
        assert p.labels == {cand["id"]: False}
