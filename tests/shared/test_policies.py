"""The policy registry: immutable numbered versions, each part fingerprinted on its own."""

from __future__ import annotations

import pytest

from shared.policies import PolicyConflict, PolicyError, PolicyRegistry, parse_ref
from shared.storage import open_store


@pytest.fixture
def registry(tmp_path) -> PolicyRegistry:
    reg = PolicyRegistry(open_store(str(tmp_path)))
    reg.ensure_builtins()
    return reg


def test_builtins_are_registered_once_as_version_1(registry):
    assert registry.names() == ["default", "permissive", "strict"]
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
