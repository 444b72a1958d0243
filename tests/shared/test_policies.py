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


# --- the guarded admission's settings ---------------------------------------------------------


def test_guarded_is_default_verification_with_the_default_guard(registry):
    from groundswell.shared.admit import ENGINE_REVISION, SPEC_VERSION
    from groundswell.shared.canonical import json_sha256
    from groundswell.shared.guarded import DEFAULT_GUARD

    guarded, default = registry.resolve("guarded@1"), registry.resolve("default@1")
    assert guarded.guard == DEFAULT_GUARD.as_dict() and default.guard is None
    assert guarded.verify_fingerprint == default.verify_fingerprint
    assert guarded.admit_fingerprint != default.admit_fingerprint
    # a version without a guard keeps the admission fingerprint it had before guards existed
    unguarded = {"policy": None, "spec": SPEC_VERSION, "engine": ENGINE_REVISION}
    assert default.admit_fingerprint == json_sha256(unguarded)[:16]
    assert "guard" not in default.content() and "guard" in guarded.content()


def test_a_partial_guard_is_applied_over_the_base_guard(registry):
    from groundswell.shared.guarded import DEFAULT_GUARD

    v1 = registry.resolve("guarded@1")
    v2, created = registry.publish({"name": "guarded", "guard": {"column": "off"}})
    assert created and v2.ref == "guarded@2"
    assert v2.guard == {**DEFAULT_GUARD.as_dict(), "column": "off"}
    assert v2.admit_fingerprint != v1.admit_fingerprint
    assert v2.verify_fingerprint == v1.verify_fingerprint
    assert v2.description == "guarded@1 with guard changed"
    # the next version inherits the guard it does not name, and adds to it
    v3, _ = registry.publish({"name": "guarded", "guard": {"caption_lines": 5}})
    assert v3.guard == {**DEFAULT_GUARD.as_dict(), "column": "off", "caption_lines": 5}
    v4, _ = registry.publish({"name": "guarded", "verify": {"match_boundaries": False}})
    assert v4.guard == v3.guard and v4.admit_fingerprint == v3.admit_fingerprint
    assert v4.verify_fingerprint != v3.verify_fingerprint
    # the same settings again: no new version; a read-back version is the same
    same, created = registry.publish({"name": "guarded", "guard": {"column": "off"}})
    assert not created and same.ref == "guarded@4"
    PolicyRegistry._cache.clear()
    assert registry.resolve("guarded@3").admit_fingerprint == v3.admit_fingerprint


def test_a_guard_over_a_base_without_one_starts_from_the_default_settings(registry):
    from groundswell.shared.guarded import DEFAULT_GUARD

    mine, _ = registry.publish(
        {"name": "mine", "extends": "default@1", "guard": {"relieve_scale": False}}
    )
    assert mine.guard == {**DEFAULT_GUARD.as_dict(), "relieve_scale": False}
    assert mine.guard_settings.relieve_scale is False
    assert mine.admit_fingerprint != registry.resolve("guarded@1").admit_fingerprint
    assert mine.verify_fingerprint == registry.resolve("default@1").verify_fingerprint
    # "guard": null drops the base's guard: groundgate's admission again
    plain, _ = registry.publish({"name": "plain", "extends": "guarded@1", "guard": None})
    assert plain.guard is None
    assert plain.admit_fingerprint == registry.resolve("default@1").admit_fingerprint


@pytest.mark.parametrize(
    ("guard", "message"),
    [
        ({"column": "warn"}, "guard.column is 'flag' or 'off', not 'warn'"),
        ({"relieve_key": "yes"}, "guard.relieve_key is true or false"),
        ({"caption_lines": 99}, "guard.caption_lines is an integer from 0 to 20"),
        ({"unscaled_words": ["", "x"]}, "guard.unscaled_words is a list of non-blank strings"),
        ({"nosuch": 1}, "unknown guard settings: nosuch"),
        (["column"], "guard: Input should be a valid dictionary"),
    ],
)
def test_an_invalid_guard_setting_is_refused_by_name(registry, guard, message):
    with pytest.raises(PolicyError, match=message.replace("(", r"\(")):
        registry.publish({"name": "mine", "extends": "guarded@1", "guard": guard})
    assert registry.versions("mine") == []
