"""The policy registry: immutable numbered versions, each part fingerprinted on its own."""

from __future__ import annotations

import pytest

from groundswell.shared.policies import PolicyConflict, PolicyError, PolicyRegistry, parse_ref
from groundswell.shared.storage import open_store


@pytest.fixture
def registry(tmp_path) -> PolicyRegistry:
    reg = PolicyRegistry(open_store(str(tmp_path)))
    reg.ensure_builtins()
    return reg


def test_builtins_are_registered_once_as_version_1(registry):
    assert registry.names() == ["default", "guarded", "permissive", "strict"]
    registry.ensure_builtins()
    assert registry.versions("default") == [1]
    default = registry.resolve("default")
    assert default.ref == "default@1" and default.admit is None
    assert registry.resolve("strict@1").verify_fingerprint != default.verify_fingerprint


def test_a_verification_change_moves_only_the_verification_fingerprint(registry):
    v1 = registry.resolve("default@1")
    v2, created = registry.publish({"name": "default", "verify": {"match_boundaries": False}})
    assert created and v2.ref == "default@2"
    assert v2.verify_fingerprint != v1.verify_fingerprint
    assert v2.admit_fingerprint == v1.admit_fingerprint
    assert v2.verify_policy.match_boundaries is False
    assert registry.resolve("default").ref == "default@2" == registry.resolve("default@latest").ref


def test_an_admission_change_moves_only_the_admission_fingerprint(registry):
    v1 = registry.resolve("default@1")
    v2, _ = registry.publish({"name": "default", "admit": {"min_confidence": 0.5}})
    assert v2.admit_fingerprint != v1.admit_fingerprint
    assert v2.verify_fingerprint == v1.verify_fingerprint


def test_publishing_the_latest_content_again_is_a_no_op(registry):
    same, created = registry.publish({"name": "default"})
    assert not created and same.ref == "default@1"
    assert registry.versions("default") == [1]


def test_republishing_a_version_with_other_content_is_refused(registry):
    registry.publish({"name": "mine", "extends": "default@1"}, version=1)
    _, created = registry.publish({"name": "mine", "extends": "default@1"}, version=1)
    assert not created
    with pytest.raises(PolicyConflict, match="mine@1 is already published with other content"):
        registry.publish({"name": "mine", "extends": "strict@1"}, version=1)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"name": "x", "verify": {"accept_through": "nope"}}, "verify: no tier named 'nope'"),
        ({"name": "x", "verify": {"bogus": 1}}, "verify: unknown policy fields: bogus"),
        ({"name": "x", "admit": {"min_confidence": 3}}, "admit: policy.min_confidence"),
        ({"name": "Bad Name"}, "name: String should match pattern"),
        ({"name": "x", "extends": "nope@1"}, "unknown policy 'nope'"),
        ({"name": "x", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_policy_documents_say_what_is_wrong(registry, document, message):
    with pytest.raises(PolicyError, match=message.replace("(", r"\(")):
        registry.publish(document)
    assert "x" not in registry.names()


def test_refs():
    assert parse_ref("default") == ("default", None)
    assert parse_ref("default@latest") == ("default", None)
    assert parse_ref("default@12") == ("default", 12)
    for bad in ("Default", "default@0", "default@x", "", "a b"):
        with pytest.raises(PolicyError):
            parse_ref(bad)


def test_registry_policies_run_marker_patterns_with_re2_and_the_cli_bounds_python_re(tmp_path):
    import time

    from groundswell.shared.text.transforms import TransformError, bound_regex_time
    from groundswell.shared.verify import Verifier, VerifyPolicy

    registry = PolicyRegistry(open_store(str(tmp_path)))
    registry.ensure_builtins()
    nested = r"(\w+\s?)+\|"  # exponential under backtracking
    policy, _ = registry.publish({"name": "markers", "verify": {"marker_pattern": nested}})
    text = "word " * 40 + "end."
    start = time.monotonic()
    cert = Verifier(text, policy.verify_policy).verify("word word")
    assert cert.grounded and time.monotonic() - start < 2
    assert policy.verify_policy.regex_engine == "re2"
    with pytest.raises(PolicyError, match="RE2"):
        registry.publish({"name": "lookbehind", "verify": {"marker_pattern": r"(?<=a)b"}})
    # The CLI's own policies keep Python's re (gtrex parity), stopped past a time bound.
    local = VerifyPolicy(marker_pattern=nested)
    assert local.regex_engine == "re"
    bound_regex_time(0.3)
    try:
        with pytest.raises(TransformError, match=r"ran longer than 0\.3 s"):
            Verifier(text, local).verify("word word")
    finally:
        bound_regex_time(None)
