"""Transforms: the registry, parameters, and each step on its own."""

from __future__ import annotations

import pytest

from groundswell.shared.text import Ladder, LadderError, Projections, Tier, register_transform
from groundswell.shared.text.transforms import (
    NFKC,
    Casefold,
    CollapseWhitespace,
    MapTypography,
    SeparateMarkers,
    StripMarkers,
    Transform,
    TransformError,
    UnescapeEntities,
    make_transform,
    transform_from_spec,
)


@pytest.mark.parametrize(
    ("step", "text", "expected"),
    [
        (CollapseWhitespace(), "  a \t\n b\u00a0\u3000c  ", "a b c"),
        (UnescapeEntities(), "R&amp;D &#36;5 &foo; &amp x &#x2014;", "R&D $5 &foo; &amp x \u2014"),
        (MapTypography(), "\u201cit\u2019s\u201d \u2013 \u2026\u00ad", '"it\'s" - ...'),
        (NFKC(), "\ufb01 \u00bd 1\u00bd x\u00b2 \uff21", "fi 1\u20442 1\u00bd x\u00b2 A"),
        (Casefold(), "Stra\u00dfe \u0130", "strasse i\u0307"),
        (SeparateMarkers(r"\[\[[A-Z]+\]\]"), "a[[X]]b", "a b"),
        (StripMarkers(r"\|"), "12|14", "1214"),
    ],
)
def test_each_step(step: Transform, text: str, expected: str) -> None:
    assert step.apply(text) == expected
    out, omap = step.project(text, Projections(text).get(()).map)
    assert out == expected
    # Every character of the result maps back inside the original text.
    assert all(0 <= omap.start(i) < omap.end(i) <= len(text) for i in range(len(out)))


def test_registry() -> None:
    assert make_transform("nfkc", 2) == NFKC()
    assert transform_from_spec({"op": "separate_markers", "version": 1,
                                "params": {"pattern": "x+"}}) == SeparateMarkers("x+")  # fmt: skip
    with pytest.raises(TransformError, match="unknown transform"):
        make_transform("nfkc", 1)
    with pytest.raises(TransformError, match="bad parameters"):
        make_transform("casefold", 1, {"locale": "tr"})
    with pytest.raises(TransformError, match="empty string"):
        SeparateMarkers("x*")
    with pytest.raises(TransformError, match="already registered"):
        register_transform("casefold", 1, lambda: Casefold())


def test_a_new_registered_transform_can_be_used_in_a_ladder() -> None:
    class DropDigits(Transform):
        op = "test_drop_digits"
        version = 1

        def project_text(self, text: str):
            out = "".join(c for c in text if not c.isdigit())
            edits = [(i, i + 1, 0) for i, c in enumerate(text) if c.isdigit()]
            return out, edits

    register_transform(DropDigits.op, DropDigits.version, DropDigits)
    ladder = Ladder((Tier("exact", (), True), Tier("nodigits", (DropDigits(),), True)))
    proj = Projections("a1b22c").get(ladder.chains()[1])
    assert proj.text == "abc"
    assert [proj.map.start(i) for i in range(3)] == [0, 2, 5]
    with pytest.raises(LadderError, match="unsound one"):
        Ladder((Tier("exact", (), False), Tier("ws", (CollapseWhitespace(),), True)))


def test_the_skeleton_of_ascii_text_is_the_regex_one():
    """ASCII text takes a bytes fast path; it keeps exactly what ``[\\W_]+`` removal keeps."""
    import re

    from groundswell.shared.text.transforms import AlphanumericSkeleton

    every = "".join(map(chr, range(128)))
    for text in (every, every[::-1] * 3, "Net sales: $1,234.5 (up 2%) -- a_b", ""):
        assert AlphanumericSkeleton().apply(text) == re.sub(r"[\W_]+", "", text)
    assert AlphanumericSkeleton().apply("Caf\u00e9 \u00bd_x") == "Caf\u00e9\u00bdx"


def test_runs_of_spaces_are_found_as_the_regex_finds_them():
    """Whitespace collapsing finds runs of two or more spaces with str.find; it finds exactly
    the runs the regex ``  +`` finds, and the text collapses as split-and-join collapses it."""
    import random
    import re

    from groundswell.shared.text.transforms import _double_space_starts

    rng = random.Random(31)
    for _ in range(2000):
        text = "".join(rng.choice("  a\n\t\u00a0") for _ in range(rng.randint(0, 40)))
        assert _double_space_starts(text) == [m.start() for m in re.finditer("  +", text)]
        assert CollapseWhitespace().project_text(text)[0] == " ".join(text.split())
