"""Policies as data: validation, fingerprints, serialization."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.text import Ladder, Tier
from groundswell.shared.text.transforms import Casefold, CollapseWhitespace, Transform
from groundswell.shared.verify import DEFAULT, PERMISSIVE, STRICT, PolicyError, VerifyPolicy


def test_builtins_round_trip_through_json(tmp_path) -> None:
    for policy in (STRICT, DEFAULT, PERMISSIVE):
        data = json.loads(json.dumps(policy.as_dict()))
        again = VerifyPolicy.from_dict(data)
        assert again.fingerprint == policy.fingerprint
        path = tmp_path / f"{policy.name}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        assert VerifyPolicy.load(path).fingerprint == policy.fingerprint


def test_every_verdict_setting_moves_the_fingerprint_and_labels_do_not() -> None:
    base = DEFAULT.fingerprint
    for change in (
        {"accept_through": "typography"},
        {"ellipsis_policy": "reject"},
        {"min_fragment_tokens": 5},
        {"require_contiguous": False},
        {"match_boundaries": False},
        {"marker_pattern": r"\[\[[A-Z_]+\]\]"},
        {"ladder_name": "strict", "accept_through": "typography"},
    ):
        assert DEFAULT.with_changes(**change).fingerprint != base, change
    assert DEFAULT.with_changes(name="mine", version=7, description="x").fingerprint == base


def test_invalid_policies_are_refused() -> None:
    with pytest.raises(PolicyError, match="unsound"):
        DEFAULT.with_changes(accept_through="skeleton")
    with pytest.raises(PolicyError, match="ellipsis_policy"):
        DEFAULT.with_changes(ellipsis_policy="maybe")
    with pytest.raises(PolicyError, match="marker pattern"):
        DEFAULT.with_changes(marker_pattern="(")
    with pytest.raises(PolicyError, match="empty string"):
        DEFAULT.with_changes(marker_pattern="x*")
    with pytest.raises(PolicyError, match="min_fragment_tokens"):
        DEFAULT.with_changes(min_fragment_tokens=True)
    with pytest.raises(PolicyError, match="unknown policy fields"):
        VerifyPolicy.from_dict({"name": "x", "repair_mode": "off"})
    tampered = DEFAULT.as_dict()
    tampered["match_boundaries"] = False
    with pytest.raises(PolicyError, match="fingerprint"):
        VerifyPolicy.from_dict(tampered)


def test_custom_ladder_only_from_registered_transforms() -> None:
    ladder = Ladder(
        (
            Tier("exact", (), True),
            Tier("spaces", (CollapseWhitespace(),), True),
            Tier("folded", (Casefold(),), True),
        )
    )
    policy = VerifyPolicy(name="mine", ladder_name="custom", ladder=ladder)
    assert policy.accept_tier == "folded"
    again = VerifyPolicy.from_dict(json.loads(json.dumps(policy.as_dict())))
    assert again.fingerprint == policy.fingerprint

    class Rogue(Transform):
        op = "casefold"
        version = 1

    with pytest.raises(ValueError, match="not a registered transform"):
        Ladder((Tier("exact", (), True), Tier("x", (Rogue(),), True)))


def test_a_builtin_ladder_cannot_be_replaced_by_a_serialized_one() -> None:
    data = DEFAULT.as_dict()
    data.pop("fingerprint")
    data["ladder"] = data["ladder"][:3]
    with pytest.raises(PolicyError, match="differs from the built-in"):
        VerifyPolicy.from_dict(data)
