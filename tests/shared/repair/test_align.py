"""The aligner against gtrex 1.1.0's (a dev-only oracle): the local alignment on generated key
sequences (any parameters), span trimming on generated edges, and the best span of real claims
in real documents, score for score (floats compared exactly)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from gtrex.align import AlignmentParams as TheirParams
from gtrex.align import SourceIndex, _smith_waterman
from gtrex.align import trim_span as their_trim
from hypothesis import given, settings
from hypothesis import strategies as st

from groundswell.shared.repair import align
from groundswell.shared.repair.align import (
    AlignIndex,
    AlignmentError,
    AlignmentParams,
    smith_waterman,
    trim_span,
)
from groundswell.shared.text.offsets import IdentityMap
from tests.shared.repair.families import RepairClaimFactory

PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "match_score": st.sampled_from([0.5, 1.0, 2.0, 3.0]),
        "mismatch_score": st.sampled_from([0.0, -0.5, -1.0, -3.0]),
        "gap_open": st.sampled_from([0.0, -1.0, -2.0, -4.0]),
        "gap_extend": st.sampled_from([0.0, -0.25, -0.5, -1.0]),
    },
)


def edited(rng: random.Random, target: list[str], alphabet: str) -> list[str]:
    """A piece of ``target`` with a few tokens dropped, inserted or replaced: a near miss."""
    a = rng.randrange(len(target))
    query = target[a : a + rng.randint(1, 40)]
    for _ in range(rng.randint(0, 6)):
        op = rng.random()
        if op < 0.3 and len(query) > 1:
            del query[rng.randrange(len(query))]
        elif op < 0.6:
            query.insert(rng.randrange(len(query) + 1), rng.choice(alphabet))
        else:
            query[rng.randrange(len(query))] = rng.choice(alphabet)
    return query


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(0, 2**32), PARAMS, st.sampled_from(["ab", "abcd", "abcdefghijklmnop"]))
def test_local_alignment_is_gtrex_s(seed: int, params: dict, alphabet: str) -> None:
    rng = random.Random(seed)
    target = [rng.choice(alphabet) for _ in range(rng.randint(1, 90))]
    query = edited(rng, target, alphabet) if rng.random() < 0.7 else list(rng.choice(alphabet))
    ours = smith_waterman(query, target, AlignmentParams(**params))
    assert ours == _smith_waterman(query, target, TheirParams(**params))


EDGE = " \t\n.,;:!?()[]{}$-"


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(alphabet=EDGE + "ab1.", min_size=1, max_size=80), st.data())
def test_trim_span_is_gtrex_s(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    reach = data.draw(st.sampled_from([3, 48]))
    assert trim_span(text, start, end, reach) == their_trim(text, start, end, reach)


def test_parameters_are_checked() -> None:
    for bad in (
        {"seed_ngram": 0},
        {"match_score": 0},
        {"gap_open": 1},
        {"coverage_weight": 1.5},
        {"case_sensitive": 1},
        {"max_regions": True},
    ):
        with pytest.raises(AlignmentError):
            AlignmentParams(**bad)
    assert AlignmentParams(match_score=2) == AlignmentParams()  # 2 and 2.0: one configuration
    with pytest.raises(AlignmentError, match="unknown"):
        AlignmentParams.from_dict({"window": 60})


@pytest.mark.parametrize(
    "params",
    [{}, {"seed_ngram": 2, "max_regions": 5}, {"case_sensitive": True, "region_pad_tokens": 0}],
)
def test_best_span_of_real_claims_is_gtrex_s(shared_corpus: Path, params: dict) -> None:
    text = (shared_corpus / "documents" / "sec-aapl-10k-2024-11-01.txt").read_text(encoding="utf-8")
    ours = AlignIndex(text, text, IdentityMap(len(text)), AlignmentParams(**params))
    theirs = SourceIndex(text, TheirParams(**params))
    claims = [c.claim for c in RepairClaimFactory(text, seed=11).claims(per_family=3)]
    claims += ["the", "Apple Inc.", "xyzzy plugh", "2024 2023", ". , ;"]
    for claim in claims:
        a, b = ours.best_span(claim), theirs.best_span(claim)
        assert (a is None) == (b is None), claim
        if a is not None:
            assert a.as_dict() == b.as_dict(), claim


def test_many_seed_hits_rank_diagonals_as_the_plain_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rules of dashes and repeated cells: a claim repeating a gram the document holds many
    # times is counted with big ints (forced here at any size); both ways of counting must
    # pick the diagonals that a sort by hits, ties in order of first hit, picks.
    words = ["-", "-", "-", "=", "1", "2,000", "the", "of", "net", "sales", "("]
    for seed in range(300):
        rng = random.Random(seed)
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 400)))
        length = rng.randint(3, 300 if seed % 7 else 40)
        claim = " ".join(rng.choice(words) for _ in range(length))
        if seed < 3:  # more hits on one diagonal than a byte counts
            text = "net " + "-" * 700 + " sales " + "-" * 300
            claim = "-" * 500 + " sales"
        params = AlignmentParams(
            seed_ngram=rng.choice([1, 2, 3]),
            max_regions=rng.choice([3, 24]),
            region_pad_tokens=rng.choice([0, 3]),
        )
        index = AlignIndex(text, text, IdentityMap(len(text)), params)
        codes = [index._ids.get(key, -1) for key in index._keys.keys(claim)]
        k = params.seed_ngram
        table = index._gram_table()
        grams = [
            index._gram_value(codes[o : o + k]) if -1 not in codes[o : o + k] else -1
            for o in range(len(codes) - k + 1)
        ]
        found = [table.find(g) if g >= 0 else [] for g in grams]
        counts: Counter[int] = Counter()
        for offset, positions in enumerate(found):
            counts.update(p - offset for p in positions)
        ranked = sorted(counts.items(), key=lambda item: item[1], reverse=True)
        expected = {d for d, _ in ranked[: params.max_regions]}
        assert set(align._counted_diagonals(found, params.max_regions)) == expected, seed
        with monkeypatch.context() as patch:
            patch.setattr(align, "_LANE_PAIRS", 0)
            patch.setattr(align, "_LANE_REPEATS", rng.choice([1, 2, 4]))
            positions_of = {g: table.find(g) for g in grams if g >= 0}
            chosen = index._top_diagonals(grams, found, positions_of)
        assert len(chosen) == len(expected) and set(chosen) == expected, seed


def test_position_lookup_finds_every_occurrence_in_order() -> None:
    rng = random.Random(3)
    for _ in range(300):
        values = [rng.randrange(rng.choice([2, 5, 50])) for _ in range(rng.randint(0, 40))]
        table = align._Lookup(values)
        for value in range(-2, 55):
            assert table.find(value) == [i for i, v in enumerate(values) if v == value]
