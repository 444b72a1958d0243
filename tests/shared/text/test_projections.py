"""Projections and offset maps: every tier's text and per-character regions, checked against
gtrex 1.1.0's own projections, and the document path against the standalone path."""

from __future__ import annotations

import gtrex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundswell.shared.text import Projections, default_ladder
from groundswell.shared.text.ladder import strict_ladder

# Characters that exercise every step: whitespace of all kinds, entities, quotes, dashes,
# invisible characters, ligatures, case specials, fractions, super/subscripts, marks.
NASTY = [
    *"aAbBzZ019 .,-/:;'\"&#$%()_",
    *["\n", "\t", "\r\n", "  ", "\u00a0", "\u202f", "\u2009", "\u3000", "\u2028", "\x1c"],
    *["&amp;", "&#36;", "&nbsp;", "&mdash;", "&#x2014;", "&AMP;", "&foo;", "&amp", "&#0;"],
    *["\u2018", "\u2019", "\u201c", "\u201d", "\u201e", "\u2013", "\u2014", "\u2212", "\u2026"],
    *["\u00ad", "\u200b", "\u200d", "\ufeff", "\u2010", "\u2011", "\u2012"],
    *["\ufb01", "\ufb03", "\u00df", "\u0130", "\u03a3", "\u212a", "\uff21", "\uff11", "\u1e9e"],
    *["\u00bc", "\u00bd", "\u2153", "\u2044", "\u2460", "\u2474", "\u2488", "\u00b2", "\u2081"],
    *["\u0301", "\u0308", "e\u0301", "\u00e9", "\u0149", "\u01c5", "\u3392", "\u2163"],
]
texts = st.lists(st.sampled_from(NASTY), max_size=24).map("".join)
SETTINGS = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _ours(text: str, ladder) -> list[tuple[str, list[int], list[int]]]:
    projections = Projections(text)
    out = []
    for chain in ladder.chains():
        proj = projections.get(chain)
        n = len(proj.text)
        out.append(
            (
                proj.text,
                [proj.map.start(i) for i in range(n)],
                [proj.map.end(i) for i in range(n)],
            )
        )
    return out


def _theirs(text: str, ladder) -> list[tuple[str, list[int], list[int]]]:
    return [(p.text, list(p.offsets), list(p.ends)) for p in ladder.project(text)]


@SETTINGS
@given(texts)
def test_default_ladder_matches_gtrex(text: str) -> None:
    assert _ours(text, default_ladder()) == _theirs(text, gtrex.default_ladder(None))


@SETTINGS
@given(texts)
def test_marker_ladder_matches_gtrex(text: str) -> None:
    pattern = r"\|"
    assert _ours(text, strict_ladder(pattern)) == _theirs(text, gtrex.default_ladder(pattern))[:3]


@SETTINGS
@given(texts)
def test_document_path_equals_standalone_path(text: str) -> None:
    ladder = default_ladder()
    projections = Projections(text)
    assert [projections.get(c).text for c in ladder.chains()] == ladder.normalize(text)


@SETTINGS
@given(texts, st.integers(0, 30))
def test_first_at_or_after_is_bisect_left_of_starts(text: str, offset: int) -> None:
    projections = Projections(text)
    for chain in default_ladder().chains():
        proj = projections.get(chain)
        starts = [proj.map.start(i) for i in range(len(proj.text))]
        expected = next((i for i, s in enumerate(starts) if s >= offset), len(starts))
        assert proj.map.first_at_or_after(offset) == expected
