"""Differential tests against gtrex 1.1.0: the same claims, the same certificates.

Documents are a fixed sample of ../shared/corpus (every part of it: SEC filings, FDA labels,
Federal Register, CFR, bills, NTSB and OPM reports, TAT-QA excerpts), plus one filing with
characters written as HTML entities. Claims come from every family in ``families.FAMILIES``.
Each (document, policy) pair uses one verifier per engine for all of its claims, so the
search index and the in-word filters are exercised as in production. Verdict, tier, start,
end and every other field that does not depend on wording must agree on every claim.
"""

from __future__ import annotations

import json
import zlib
from contextlib import contextmanager
from pathlib import Path

import gtrex
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundswell.shared.text import Ladder
from groundswell.shared.verify import Verifier, VerifyPolicy, engine
from tests.shared.text.test_projections import NASTY
from tests.shared.verify.families import FAMILIES, ClaimFactory, with_entities
from tests.shared.verify.oracle import POLICIES, Pair, differences, outcome

PER_FAMILY = 10
MAX_CHARS = 160_000
# Per part of the corpus: how many documents, from the sorted ids.
SAMPLE = {
    "sec_edgartools": 3,
    "fda_labels": 2,
    "uslm": 3,
    "docugami_pdfs": 2,
    "tatqa": 1,
    "court_opinion": 1,
}
ENTITY_DOC = "sec-aapl-10q-2025-08-01"


def _sample(index: list[dict]) -> list[str]:
    picked: list[str] = []
    for part, n in SAMPLE.items():
        rows = sorted(
            (r for r in index if r["part"] == part and 20_000 <= r["length_chars"] <= MAX_CHARS),
            key=lambda r: r["id"],
        ) or sorted((r for r in index if r["part"] == part), key=lambda r: r["length_chars"])
        step = max(1, len(rows) // n)
        picked += [r["id"] for r in rows[::step][:n]]
    return picked


def _index() -> list[dict]:
    from groundswell.shared.settings import get_settings

    path = get_settings().shared_corpus / "index.jsonl"
    if not path.exists():
        return []  # test_sample_is_drawn_from_every_part fails with the fixture's message
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


DOCS = [*_sample(_index()), f"{ENTITY_DOC}+entities"]


@pytest.mark.corpus
def test_sample_is_drawn_from_every_part(shared_corpus: Path, corpus_index: list[dict]) -> None:
    parts = {r["id"]: r["part"] for r in corpus_index}
    assert {parts[d] for d in DOCS[:-1]} == set(SAMPLE)


def _text(shared_corpus: Path, doc: str) -> str:
    doc_id, _, variant = doc.partition("+")
    text = (shared_corpus / "documents" / f"{doc_id}.txt").read_bytes().decode("utf-8")
    return with_entities(text, seed=7) if variant == "entities" else text[:MAX_CHARS]


@pytest.mark.corpus
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("doc", DOCS)
def test_corpus_claims_agree_with_gtrex(shared_corpus: Path, doc: str, policy: str) -> None:
    text = _text(shared_corpus, doc)
    claims = list(ClaimFactory(text, seed=zlib.crc32(doc.encode())).claims(PER_FAMILY))
    assert {c.family for c in claims} == set(FAMILIES)
    pair = Pair(text, policy)
    disagreements = []
    for c in claims:
        diff = pair.compare(c.claim, c.at)
        if diff:
            disagreements.append((c.family, c.claim[:80], c.at, diff))
    assert disagreements == [], f"{len(disagreements)} of {len(claims)} differ"


# --- hypothesis: short strings over a nasty alphabet ----------------------------------------

ALPHABET = [
    *NASTY,
    *["Revenue", " was ", "12.5", "1,234", "10:30", "+", "...", "..", "O'Brien", "FY2023"],
    *["non-cash", "and/or", "snake_case", "\u6771\u4eac", "UGC", "Stands", " 000", "1 000"],
    *["\u0e01", "\u3042", "|", "[[X]]"],
]
fragment = st.lists(st.sampled_from(ALPHABET), max_size=30)


@st.composite
def document_and_claims(draw, tokens):
    """A source made of tokens, and claims that are mostly runs of its tokens (so that claims
    start and end where the boundary rules have something to say), sometimes varied."""
    parts = draw(tokens)
    source = "".join(parts)
    cuts = [0]
    for part in parts:
        cuts.append(cuts[-1] + len(part))
    claims = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.integers(0, 5))
        if source and kind <= 3:
            i = draw(st.integers(0, len(cuts) - 2))
            j = draw(st.integers(i + 1, len(cuts) - 1))
            a, b = cuts[i], cuts[j]
            if kind == 3:  # anywhere, even inside a token
                a = draw(st.integers(0, len(source) - 1))
                b = draw(st.integers(a, len(source)))
            claim = source[a:b]
            if draw(st.integers(0, 3)) == 0:
                claim = draw(
                    st.sampled_from([claim.upper(), claim.lower(), " ".join(claim.split())])
                )
            if draw(st.integers(0, 5)) == 0:
                claim += draw(st.sampled_from([" ... ", "\u2026", ".."])) + "".join(draw(tokens))
        else:
            claim = "".join(draw(tokens))
        at = None
        if source and draw(st.booleans()):
            a = draw(st.integers(0, len(source) - 1))
            at = (a, draw(st.integers(a + 1, len(source))))
        claims.append((claim, at))
    overrides = draw(
        st.sampled_from(
            [
                {},
                {},
                {},
                {"match_boundaries": False},
                {"marker_pattern": r"\||\[\[[A-Z]+\]\]"},
                {"min_fragment_tokens": 2},
                {"require_contiguous": False},
            ]
        )
    )
    return source, claims, overrides


HYPOTHESIS = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextmanager
def shortcuts_everywhere():
    """Use the search index and the in-word filter from the first claim and occurrence on, so
    short strings exercise the paths large documents take."""
    saved = engine.INDEX_AFTER, engine.PREFILTER_AFTER
    engine.INDEX_AFTER, engine.PREFILTER_AFTER = 0, 1
    try:
        yield
    finally:
        engine.INDEX_AFTER, engine.PREFILTER_AFTER = saved


def _agree(source: str, claims, overrides: dict) -> None:
    for policy in POLICIES:
        pair = Pair(source, policy, **overrides)
        for claim, at in claims:
            assert pair.compare(claim) == {}, (policy, overrides, claim)
            if at is not None:
                assert pair.compare(claim, at) == {}, (policy, overrides, claim, at)


@HYPOTHESIS
@given(document_and_claims(fragment))
def test_nasty_strings_agree_with_gtrex(case) -> None:
    _agree(*case)


@HYPOTHESIS
@given(document_and_claims(fragment))
def test_nasty_strings_agree_with_gtrex_on_the_index_paths(case) -> None:
    with shortcuts_everywhere():
        _agree(*case)


# Figures, signs, separators and grouping spaces: the boundary rules for numbers.
FIGURES = [
    *"0123456789 ,.:-+/%$()aA",
    *["−", "–", " ", " ", " ", "­", "½", "⁄", "²"],
    *["⒈", "１", "1 000", "12 345", "FY", "٫", "&#36;", "&minus;"],
]
figures = st.lists(st.sampled_from(FIGURES), max_size=30)


@HYPOTHESIS
@given(document_and_claims(figures))
def test_figures_agree_with_gtrex(case) -> None:
    with shortcuts_everywhere():
        _agree(*case)


# Custom ladders built from registered steps, in orders the built-ins don't use (the engine
# scans them without the index, whose guarantees are proved for the standard chain only).
def _step(op: str, version: int = 1, **params) -> dict:
    return {"op": op, "version": version, "params": params}


CUSTOM_LADDERS = [
    [
        {"name": "exact", "sound": True, "rationale": "", "steps": []},
        {"name": "folded", "sound": True, "rationale": "", "steps": [_step("casefold")]},
        {"name": "spaced", "sound": True, "rationale": "", "steps": [_step("collapse_whitespace")]},
        {"name": "skel", "sound": False, "rationale": "", "steps": [_step("alphanumeric_skeleton")]},
    ],
    [
        {"name": "cells", "sound": True, "rationale": "", "steps": [_step("strip_markers",
                                                                           pattern=r"\|")]},
        {"name": "typo", "sound": True, "rationale": "",
         "steps": [_step("nfkc", 2), _step("map_typography"), _step("collapse_whitespace")]},
    ],
]  # fmt: skip


@HYPOTHESIS
@given(document_and_claims(fragment), st.sampled_from(range(len(CUSTOM_LADDERS))))
def test_custom_ladders_agree_with_gtrex(case, which: int) -> None:
    source, claims, _ = case
    spec = CUSTOM_LADDERS[which]
    ours = Verifier(source, VerifyPolicy(name="c", ladder_name="custom",
                                          ladder=Ladder.from_spec(spec)))  # fmt: skip
    theirs = gtrex.Verifier(
        source, gtrex.Policy(ladder_name="custom", ladder=gtrex.Ladder.from_spec(spec))
    )
    for claim, at in claims:
        assert differences(outcome(ours, claim), outcome(theirs, claim)) == {}, claim
        if at is not None:
            assert differences(outcome(ours, claim, at), outcome(theirs, claim, at)) == {}
