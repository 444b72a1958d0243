"""Ladder profiles, manifests, sensitivity and explain."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.text.unicode import UNICODE_VERSION
from groundswell.shared.verify import DEFAULT, PERMISSIVE, STRICT, Verifier
from groundswell.shared.verify.report import (
    LadderProfile,
    ProfileError,
    explain,
    manifest,
    sensitivity,
    spread_points,
)

SOURCE = (
    "Operating loss was ($10.0 million) for the year.\nWe depend on a limited number of suppliers."
)
CLAIMS = [
    "We depend on a limited number of suppliers",  # exact
    "for the year. We depend",  # whitespace
    "operating loss was ($10.0 million)",  # case
    "Operating loss was $100 million",  # skeleton
    "nothing of the sort appears here",  # unlocated
    "...",  # degenerate
]


def _profile(policy) -> LadderProfile:
    v = Verifier(SOURCE, policy)
    return LadderProfile(policy).add_all(v.verify(c) for c in CLAIMS)


def test_profile_counts_every_verdict_and_tier() -> None:
    p = _profile(DEFAULT).as_dict()
    assert p["total"] == 6 and p["accepted"] == 3
    assert p["by_tier"] == {
        "case": 1,
        "degenerate": 1,
        "exact": 1,
        "skeleton": 1,
        "unlocated": 1,
        "whitespace": 1,
    }
    assert p["by_verdict"] == {"degenerate": 1, "grounded": 3, "grounded_loose": 1, "unlocated": 1}
    assert [row["cumulative"] for row in p["cumulative"]] == [1, 2, 2, 3, 4]
    rates = _profile(DEFAULT).rates()
    assert rates["policy_accepted_rate"] == pytest.approx(0.5)
    assert rates["exact_floor"] == pytest.approx(1 / 6)


def test_profiles_refuse_other_policies_and_merge() -> None:
    profile = _profile(DEFAULT)
    with pytest.raises(ProfileError):
        profile.add(Verifier(SOURCE, STRICT).verify(CLAIMS[0]))
    with pytest.raises(ProfileError):
        profile.merge(_profile(STRICT))
    merged = profile.merge(_profile(DEFAULT))
    assert merged.total == 12 and merged.by_tier["exact"] == 2


def test_manifest_records_identity_and_profile() -> None:
    m = manifest(DEFAULT, _profile(DEFAULT), {"input": "x.jsonl", "claims": 6})
    assert m["policy_fingerprint"] == DEFAULT.fingerprint
    assert m["policy"]["fingerprint"] == DEFAULT.fingerprint
    assert m["tool"]["unicode_version"] == UNICODE_VERSION
    assert m["profile"]["total"] == 6
    json.dumps(m)  # JSON-able
    with pytest.raises(ProfileError):
        manifest(STRICT, _profile(DEFAULT), {})


def test_sensitivity_spread() -> None:
    result = sensitivity(
        [(SOURCE, CLAIMS)], {"strict": STRICT, "default": DEFAULT, "permissive": PERMISSIVE}
    )
    assert {k: round(v["grounded_rate"], 4) for k, v in result.items()} == {
        "strict": round(1 / 6, 4),
        "default": 0.5,
        "permissive": round(4 / 6, 4),
    }
    assert spread_points(result) == pytest.approx(50.0)


def test_explain_names_every_decision() -> None:
    text = explain(PERMISSIVE)
    for word in (
        PERMISSIVE.fingerprint,
        "accept_through      skeleton",
        "allow_unsound       yes",
        "ellipsis_policy     ignore",
        "require_contiguous  no",
        "UNSOUND",
        UNICODE_VERSION,
    ):
        assert word in text
