"""Summary counters: additive, label-aware, with rates derived from them."""

from __future__ import annotations

from groundswell.shared.corpus import Labels
from groundswell.shared.summary import (
    admit_unit_counts,
    merge,
    merkle_root,
    rates,
    verify_unit_counts,
)


def test_verify_counts_by_verdict_tier_and_gold_label():
    certs = [
        ("c1", {"verdict": "grounded", "tier": "exact", "grounded": True}),
        ("c2", {"verdict": "grounded", "tier": "case", "grounded": True}),
        ("c3", {"verdict": "grounded_loose", "tier": "skeleton", "grounded": False}),
        ("c4", {"verdict": "unlocated", "tier": None, "grounded": False}),
        (None, {"verdict": "grounded", "tier": "exact", "grounded": True}),
    ]
    labels = Labels(claims={"c1": True, "c2": False, "c3": True, "c4": False})
    counts = verify_unit_counts(certs, labels)
    assert counts["claims"] == 5 and counts["claims.accepted"] == 3
    assert counts["claims.tier.none"] == 1 and counts["claims.at.grounded.exact"] == 2
    assert counts["claims.escapes"] == 1  # c2: labelled fabricated, accepted
    assert counts["claims.refused_genuine"] == 1  # c3
    assert counts["claims.labelled"] == 4


def test_admit_counts_escapes_catches_reviews_and_false_rejections():
    receipt = {
        "decisions": [
            {"candidate_id": "a", "outcome": "admitted", "codes": []},
            {"candidate_id": "b", "outcome": "admitted", "codes": ["EVIDENCE_REANCHORED"]},
            {"candidate_id": "c", "outcome": "needs_verification", "codes": ["SCALE_WORD"]},
            {"candidate_id": "d", "outcome": "rejected", "codes": ["VALUE_NOT_IN_EVIDENCE"]},
            {"candidate_id": "e", "outcome": "rejected", "codes": ["QUOTE_NOT_FOUND"]},
        ],
        "coverage": [{"field": "f", "code": "REQUIRED_FIELD_MISSING"}],
    }
    labels = Labels(candidates={"a": True, "b": False, "c": False, "d": True, "e": False})
    counts = admit_unit_counts(receipt, labels)
    assert counts["candidates.right_admitted"] == 1
    assert counts["candidates.escapes"] == 1
    assert counts["candidates.caught"] == 2
    assert counts["candidates.false_rejections"] == 1
    assert counts["candidates.reviews"] == 1
    assert counts["candidates.code.SCALE_WORD"] == 1
    assert counts["coverage.REQUIRED_FIELD_MISSING"] == 1
    r = rates(merge(counts))
    assert r["candidates_escape_rate"] == round(1 / 3, 6)
    assert r["candidates"]["rejected"] == 0.4


def test_merge_is_additive_and_rates_accumulate_through_tiers():
    a = {"claims": 2, "claims.tier.exact": 1, "claims.tier.case": 1}
    b = {"claims": 2, "claims.tier.whitespace": 1, "claims.tier.none": 1}
    total = merge(a, b)
    assert total["claims"] == 4
    through = rates(total)["claims_located_through_tier"]
    assert [through[t] for t in ("exact", "whitespace", "typography", "case", "skeleton")] == [
        0.25,
        0.5,
        0.5,
        0.75,
        0.75,
    ]
    assert rates({})["claims_accepted"] is None


def test_merkle_root_depends_on_every_leaf_and_their_order():
    leaves = [b"a", b"b", b"c"]
    root = merkle_root(leaves)
    assert root == merkle_root(list(leaves))
    assert root != merkle_root([b"a", b"b", b"d"])
    assert root != merkle_root([b"b", b"a", b"c"])
    assert merkle_root([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_the_streamed_merkle_root_equals_the_whole_tree_for_every_count_and_resumes():
    from groundswell.shared.summary import MerkleStream

    for n in [*range(0, 70), 127, 128, 129, 1000, 1025]:
        leaves = [f"leaf {i}".encode() for i in range(n)]
        stream = MerkleStream()
        for i, leaf in enumerate(leaves):
            stream.add(leaf)
            if i == n // 2:  # saved and resumed mid-way, as a finalize step does
                stream = MerkleStream(stream.state())
        assert stream.root() == merkle_root(leaves), n
        assert len(stream.stack) <= max(1, n.bit_length())


def test_repair_counts_by_action_and_stage_and_wrong_repairs_against_labels():
    from groundswell.shared.summary import repair_unit_counts

    repairs = [
        ("a", {"action": "accepted", "stage": "verify", "changed": False}),
        ("b", {"action": "normalized", "stage": "verify", "changed": True}),
        ("c", {"action": "substituted", "stage": "alignment", "changed": True}),
        ("d", {"action": "substituted", "stage": "alignment", "changed": True}),
        ("e", {"action": "annotated", "stage": "alignment", "changed": False}),
        ("f", {"action": "salvaged", "stage": "fragment_salvage", "changed": True}),
        ("g", {"action": "rejected", "stage": "numeric_guard", "changed": False}),
        (None, {"action": "substituted", "stage": "alignment", "changed": True}),
    ]
    labels = Labels(
        claims={"a": False, "b": False, "c": True, "d": False, "e": False, "f": True, "g": False}
    )
    counts = repair_unit_counts(repairs, labels)
    assert counts["repairs"] == 8 and counts["repairs.changed"] == 5
    assert counts["repairs.action.substituted"] == 3 == counts["repairs.at.substituted.alignment"]
    assert counts["repairs.stage.alignment"] == 4 and counts["repairs.stage.verify"] == 2
    assert counts["repairs.at.rejected.numeric_guard"] == 1
    # Wrong repairs: kept by a repair, labelled not genuine (d, e). A claim accepted or
    # normalized as given (a, b) is verification's escape, not repair's; g was refused.
    assert counts["repairs.wrong"] == 2
    assert counts["repairs.wrong.substituted"] == counts["repairs.wrong.annotated"] == 1
    assert "repairs.wrong.salvaged" not in counts
    assert counts["repairs.labelled.substituted"] == 2 and counts["repairs.labelled.salvaged"] == 1
    assert repair_unit_counts(repairs, None)["repairs.wrong"] == 0

    # Additive, and their rates appear only where repairs were counted.
    total = merge(counts, counts)
    assert total["repairs.wrong"] == 4 and total["repairs.action.substituted"] == 6
    shares = rates(total)
    assert shares["repairs"]["substituted"] == 0.375 and shares["repairs_kept"] == 0.875
    assert shares["wrong_repair_rate"] == 0.5  # 4 wrong of 8 labelled repairs
    assert "repairs" not in rates({"claims": 3}) and "wrong_repair_rate" not in rates({})


def test_guard_codes_count_like_groundgate_codes_and_labelled_outcomes_split_by_outcome():
    receipt = {
        "guard": {"policy": "guarded"},
        "decisions": [
            {"candidate_id": "r1", "outcome": "admitted", "codes": [], "guard": []},
            {"candidate_id": "r2", "outcome": "needs_verification", "codes": ["SCALE_WORD"]},
            {"candidate_id": "r3", "outcome": "rejected", "codes": ["QUOTE_NOT_FOUND"]},
            {
                "candidate_id": "w1",
                "outcome": "needs_verification",
                "codes": ["VALUE_NOT_IN_COLUMN"],
                "guard": [{"check": "column", "code": "VALUE_NOT_IN_COLUMN"}],
            },
            {"candidate_id": "w2", "outcome": "rejected", "codes": ["VALUE_NOT_IN_EVIDENCE"]},
            {"candidate_id": "w3", "outcome": "admitted", "codes": ["SCALE_IN_FORCE"]},
        ],
    }
    gold = {"r1": True, "r2": True, "r3": True, "w1": False, "w2": False, "w3": False}
    counts = admit_unit_counts(receipt, Labels(candidates=gold))
    assert counts["candidates.code.VALUE_NOT_IN_COLUMN"] == 1
    assert counts["candidates.code.SCALE_IN_FORCE"] == 1  # a relief is counted too
    assert counts["candidates.code.SCALE_WORD"] == 1
    assert (
        counts["candidates.right_admitted"],
        counts["candidates.right_reviewed"],
        counts["candidates.false_rejections"],
    ) == (1, 1, 1)
    assert (
        counts["candidates.escapes"],
        counts["candidates.wrong_reviewed"],
        counts["candidates.wrong_rejected"],
        counts["candidates.caught"],
    ) == (1, 1, 1, 2)
    assert counts["candidates.reviews"] == 2
    r = rates(merge(counts, counts))
    assert r["right_values_admitted"] == r["right_values_to_review"] == round(1 / 3, 6)
    assert r["right_values_rejected"] == round(1 / 3, 6)
    assert r["candidates_escape_rate"] == round(1 / 3, 6)
    none = rates({"candidates": 2})
    assert none["right_values_to_review"] is None and none["right_values_rejected"] is None
