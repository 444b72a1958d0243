"""Unit tests of the verification engine: tiers, offsets, boundaries, ellipses, verify_at."""

from __future__ import annotations

import pytest

from groundswell.shared.verify import (
    BUILTIN_VERIFY_POLICIES,
    DEFAULT,
    PERMISSIVE,
    STRICT,
    Certificate,
    Verifier,
    get_verify_policy,
)

FILING = (
    "Operating loss was ($10.0 million) for the year ended December 31, 2023.\n"
    "We depend on a limited number of suppliers for key components, and the loss of any of "
    "these suppliers could materially and adversely affect our results of\noperations. "
    "Our \u201cAdvanced Materials\u201d segment \u2014 acquired in 2021 \u2014 generated revenue "
    "of &#36;88.5 million, up 12%. Gross margin was \u22125% in the quarter."
)


def cert(claim: str, policy=DEFAULT, source: str = FILING) -> Certificate:
    return Verifier(source, policy).verify(claim)


def test_exact_match_reports_original_offsets() -> None:
    c = cert("We depend on a limited number of suppliers")
    assert (c.verdict, c.tier, c.grounded) == ("grounded", "exact", True)
    assert FILING[c.start : c.end] == c.span_text == "We depend on a limited number of suppliers"


def test_whitespace_tier_spans_the_line_break() -> None:
    c = cert("adversely affect our results of operations")
    assert c.tier == "whitespace"
    assert c.span_text == "adversely affect our results of\noperations"


def test_typography_tier_covers_the_entity_spelling() -> None:
    c = cert('Our "Advanced Materials" segment - acquired in 2021 - generated revenue of $88.5')
    assert (c.verdict, c.tier) == ("grounded", "typography")
    assert c.span_text.endswith("&#36;88.5")
    assert c.span_text.startswith("Our \u201c")


def test_case_tier_and_strict_policy() -> None:
    claim = "OPERATING LOSS WAS ($10.0 MILLION)"
    assert cert(claim).tier == "case"
    assert cert(claim, STRICT).verdict == "unlocated"


def test_skeleton_is_loose_unless_unsound_is_allowed() -> None:
    claim = "Operating loss was $100 million"
    loose = cert(claim)
    assert (loose.verdict, loose.tier, loose.grounded, loose.tier_sound) == (
        "grounded_loose",
        "skeleton",
        False,
        False,
    )
    assert loose.span_text == "Operating loss was ($10.0 million"  # edge punctuation excluded
    assert any("unsound" in note for note in loose.notes)
    assert cert(claim, PERMISSIVE).verdict == "grounded"


def test_tightest_tier_wins_over_earlier_position() -> None:
    source = "Our net  sales grew; net sales fell."
    c = cert("net sales", source=source)
    assert (c.tier, c.start, c.end) == ("exact", 21, 30)


def test_boundaries_refuse_clipped_words_and_figures() -> None:
    assert cert("evenue was", source="Revenue was $1,234.5 million").verdict == "unlocated"
    assert cert("234.5 million", source="Revenue was $1,234.5 million").verdict == "unlocated"
    assert cert("5% in the quarter").verdict == "unlocated"  # the minus sign is part of it
    off = DEFAULT.with_changes(match_boundaries=False)
    assert cert("evenue was", off, "Revenue was $1,234.5 million").verdict == "grounded"


def test_match_may_not_split_a_rewritten_region() -> None:
    source = "Ownership: \u00bc of shares; the \ufb01nancial statements"
    assert cert("Ownership: 1", source=source).verdict == "unlocated"
    assert cert("inancial", source=source).verdict == "unlocated"
    whole = cert("Ownership: 1\u20444", source=source)
    assert (whole.tier, whole.start, whole.end) == ("typography", 0, 12)


def test_degenerate_claims() -> None:
    for claim in ("", "...", "$ %", "\u2014"):
        c = cert(claim)
        assert c.verdict == "degenerate" and not c.grounded and c.start is None


def test_stitched_fragments_under_default_only() -> None:
    claim = (
        "We depend on a limited number of suppliers for key components ... could "
        "materially and adversely affect our results of operations"
    )
    c = cert(claim)
    assert (c.verdict, c.grounded, c.fragments, c.fragments_found) == ("stitched", False, 2, 2)
    assert c.fragment_statuses == ("found", "found")
    accepted = cert(claim, DEFAULT.with_changes(require_contiguous=False))
    assert (accepted.verdict, accepted.grounded) == ("stitched", True)
    assert cert(claim, PERMISSIVE).verdict == "unlocated"
    assert cert(claim, STRICT).verdict == "unlocated"


def test_short_and_fabricated_fragments() -> None:
    short = cert("We depend on a limited number of suppliers for key components ... and more")
    assert (short.verdict, short.fragment_statuses) == ("unlocated", ("found", "too_short"))
    fake = cert(
        "We depend on a limited number of suppliers for key components ... but none of them "
        "has ever failed to deliver on time"
    )
    assert fake.fragment_statuses == ("found", "not_found")
    assert fake.verdict == "unlocated" and fake.had_ellipsis


def test_verify_at_exact_span_or_nothing() -> None:
    source = "Revenue rose 5%. Revenue rose 5% again."
    v = Verifier(source, DEFAULT)
    right = v.verify_at("Revenue rose 5%", 17, 32)
    assert (right.verdict, right.start, right.scope, right.requested_span) == (
        "grounded",
        17,
        "span",
        (17, 32),
    )
    assert right.found_elsewhere is None
    wrong = v.verify_at("Revenue rose 5%", 16, 32)
    assert (wrong.verdict, wrong.found_elsewhere) == ("unlocated", True)
    absent = v.verify_at("Revenue fell 5%", 0, 15)
    assert (absent.verdict, absent.found_elsewhere) == ("unlocated", False)
    with pytest.raises(ValueError):
        v.verify_at("Revenue", 0, 999)
    with pytest.raises(TypeError):
        v.verify_at("Revenue", False, 7)


def test_certificate_dict_uses_gtrex_field_names() -> None:
    d = cert("We depend on a limited number of suppliers").as_dict()
    assert list(d) == [
        "verdict",
        "tier",
        "tier_sound",
        "grounded",
        "start",
        "end",
        "span_text",
        "contiguous",
        "had_ellipsis",
        "fragments",
        "fragments_found",
        "fragment_statuses",
        "scope",
        "requested_span",
        "found_elsewhere",
        "policy_fingerprint",
        "source_sha256",
        "notes",
    ]
    assert d["policy_fingerprint"] == DEFAULT.fingerprint


def test_many_claims_on_one_verifier_use_the_index_and_agree_with_fresh_ones() -> None:
    source = (FILING + "\n") * 40
    claims = [
        "We depend on a limited number of suppliers",
        "adversely affect our results of operations",
        "operating loss was ($10.0 million)",
        "Operating loss was $100 million",
        "a sentence that appears nowhere in the filing at all",
        "12%",
        "Gross margin was -5% in the quarter",
    ] * 3
    shared = Verifier(source, DEFAULT)
    for claim in claims:
        assert shared.verify(claim) == Verifier(source, DEFAULT).verify(claim)
    assert shared.projections.peek(("kgram", tuple(s.key for s in shared._standard)))


def test_builtin_policies_are_registered() -> None:
    assert set(BUILTIN_VERIFY_POLICIES) == {"strict", "default", "permissive"}
    assert get_verify_policy("default@1") is DEFAULT
    assert len({p.fingerprint for p in BUILTIN_VERIFY_POLICIES.values()}) == 3


@pytest.mark.parametrize(
    ("source", "claim", "expected"),
    [
        ("a 1 000 b", "a 1", None),  # a thousands group: "1 000" is one figure
        ("a 1 000 b", "000 b", None),
        ("a 1\u00ad 000 b", "a 1", None),  # invisible characters don't break the group
        ("a 1234 000 b", "a 1234", (0, 6)),  # four digits before the space: not a group
        ("a 1 0000 b", "a 1", (0, 3)),  # four after: not a group
        ("a 1.5 b", "a 1", None),  # decimal
        ("up +3% on", "3% on", None),  # signed figure
        ("a .5% rise", "5% rise", (3, 10)),  # a leading decimal point is a boundary
        ("in 2021\u20132023 we", "2023", (8, 12)),  # en dash after a digit: a range
        ("in 2021-2023 we", "2023", None),  # hyphen: one term
    ],
)
def test_figure_boundaries(source: str, claim: str, expected) -> None:
    c = cert(claim, source=source)
    assert (None if c.start is None else (c.start, c.end)) == expected


def test_index_keeps_a_claim_whose_edge_fraction_folds_differently_in_context() -> None:
    # "½" after a fraction slash stays as written in the document but folds to "1⁄2" in the
    # claim on its own; the index must not lose that occurrence.
    filler = "We depend on a limited number of suppliers for key components. " * 40
    source = (
        filler + "The ratio 3\u2044\u00bd of the total revenue for the year was high. " + filler
    )
    v = Verifier(source, DEFAULT)
    for warm in ("We depend on", "key components", "suppliers for key"):
        v.verify(warm)
    c = v.verify("\u00bd of the total revenue for the year was high")
    assert (c.verdict, c.tier, c.start) == ("grounded", "exact", source.index("\u00bd"))


def test_verifier_and_policy_pickle_for_worker_processes() -> None:
    import pickle

    policy = DEFAULT.with_changes(marker_pattern=r"\|")
    assert pickle.loads(pickle.dumps(policy)).fingerprint == policy.fingerprint
    v = Verifier(FILING, policy)
    before = v.verify("adversely affect our results of operations")
    again = pickle.loads(pickle.dumps(v))
    assert again.verify("adversely affect our results of operations") == before
