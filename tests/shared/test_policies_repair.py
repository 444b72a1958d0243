"""Repair in a policy version: settings in the verification part, the threshold in force and
its source, calibrations stored by digest, bindings checked at publishing, and fingerprints
that move only for versions that repair."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.policies import (
    PolicyError,
    PolicyRegistry,
    builtin_policies,
)
from groundswell.shared.repair import RepairPolicy, RepairSettings
from groundswell.shared.repair.calibration import LabelledRepair, calibrate_risk
from groundswell.shared.storage import open_store

# The built-ins' fingerprints before repair existed: receipts cached under them stay valid.
PINNED = {
    "strict": "4d690bcabc7e8906",
    "default": "cfea68733030ab6e",
    "permissive": "e80e9752984d73e4",
}
REPAIR = {"repair_mode": "substitute", "salvage_policy": "longest_grounded"}


@pytest.fixture
def registry(tmp_path) -> PolicyRegistry:
    reg = PolicyRegistry(open_store(str(tmp_path)))
    reg.ensure_builtins()
    return reg


def _calibration(registry: PolicyRegistry, settings: dict, base: str = "default@1") -> dict:
    """A risk calibration bound to the repair configuration of ``base`` with ``settings``."""
    policy = RepairPolicy(registry.resolve(base).verify_policy, RepairSettings.from_dict(settings))
    examples = [LabelledRepair(0.5 + i / 400, True) for i in range(200)]
    examples += [LabelledRepair(0.3 + i / 100, False) for i in range(20)]
    return calibrate_risk(examples, alpha=0.1, delta=0.1, binding=policy.binding()).as_dict()


def test_versions_without_repair_keep_their_fingerprints_and_identity(registry):
    for name, fingerprint in PINNED.items():
        for version in (builtin_policies()[name], registry.resolve(f"{name}@1")):
            assert version.repair is None and version.verify_fingerprint == fingerprint
            assert "repair" not in version.identity()
    # Repair off is no repair: same verdicts, same fingerprint.
    off, _ = registry.publish(
        {"name": "mine", "extends": "default@1", "verify": {"repair": {"repair_mode": "off"}}}
    )
    assert off.repair is None and off.verify_fingerprint == PINNED["default"]


def test_threshold_precedence_calibration_then_threshold_then_default(registry):
    default, _ = registry.publish(
        {"name": "r", "extends": "default@1", "verify": {"repair": REPAIR}}
    )
    assert (default.repair.threshold, default.repair.threshold_source) == (0.65, "default")
    set_, _ = registry.publish(
        {"name": "r", "verify": {"repair": {**REPAIR, "repair_threshold": 0.8}}}
    )
    assert (set_.repair.threshold, set_.repair.threshold_source) == (0.8, "policy")
    digest = registry.put_calibration(_calibration(registry, REPAIR))
    cal = registry.get_calibration(digest)
    calibrated, _ = registry.publish(
        {
            "name": "r",
            "verify": {"repair": {**REPAIR, "repair_threshold": 0.8, "calibration": digest}},
        }
    )
    again = {"name": "r", "verify": {"repair": calibrated.repair_document}}
    assert registry.publish(again) == (calibrated, False)  # the same content: no new version
    assert calibrated.repair.threshold == cal["threshold"] != 0.8
    assert calibrated.repair.threshold_source == "calibration"
    assert calibrated.identity()["repair"]["calibration"] == digest
    # Each is its own verification fingerprint; admission is untouched.
    fingerprints = {v.verify_fingerprint for v in (default, set_, calibrated)}
    assert len(fingerprints) == 3 and PINNED["default"] not in fingerprints
    assert calibrated.admit_fingerprint == registry.resolve("default@1").admit_fingerprint
    # Read back from storage (another process): the calibration comes with the version.
    PolicyRegistry._cache.clear()
    again = PolicyRegistry(registry.store).resolve(calibrated.ref)
    assert again.verify_fingerprint == calibrated.verify_fingerprint
    assert again.repair.threshold_source == "calibration"


def test_calibrations_are_content_addressed_and_stored_once(registry):
    document = _calibration(registry, REPAIR)
    digest = registry.put_calibration(document)
    assert registry.put_calibration(document) == digest
    report = {"schema": "groundswell/calibration-report/1", "risk": document}
    assert registry.put_calibration(report) == digest  # a calibrate report's risk part
    key = registry.calibration_key(digest)
    assert registry.store.exists(key) and registry.names() == [
        "default",
        "guarded",
        "permissive",
        "strict",
    ]
    with pytest.raises(PolicyError, match="no calibration"):
        registry.get_calibration("0" * 64)
    registry.store.put(registry.calibration_key("1" * 64), registry.store.get(key))
    with pytest.raises(PolicyError, match="does not match its digest"):
        registry.get_calibration("1" * 64)
    with pytest.raises(PolicyError, match="unbound"):
        registry.put_calibration({**document, "binding": None})


def test_publishing_refuses_a_calibration_of_another_repair_configuration(registry):
    # Calibrated without salvage: the claims reaching the threshold differ with it.
    digest = registry.put_calibration(_calibration(registry, {"repair_mode": "substitute"}))
    with pytest.raises(PolicyError, match="pre-threshold configuration"):
        registry.publish(
            {
                "name": "r",
                "extends": "default@1",
                "verify": {"repair": {**REPAIR, "calibration": digest}},
            }
        )
    # ...nor under another ladder.
    with pytest.raises(PolicyError, match="pre-threshold configuration"):
        registry.publish(
            {
                "name": "r",
                "extends": "strict@1",
                "verify": {"repair": {"repair_mode": "substitute", "calibration": digest}},
            }
        )
    assert registry.versions("r") == []
    ok, created = registry.publish(
        {
            "name": "r",
            "extends": "default@1",
            "verify": {"repair": {"repair_mode": "substitute", "calibration": digest}},
        }
    )
    assert created and ok.repair.threshold_source == "calibration"


@pytest.mark.parametrize(
    ("repair", "message"),
    [
        ({"repair_mode": "rewrite"}, "repair_mode must be one of"),
        ({"salvage": "on"}, "unknown repair settings: salvage"),
        ({"repair_threshold": 1.5}, "repair_threshold must be in"),
        ({"calibration": "abc"}, "sha256"),
        ({"calibration": "f" * 64}, "no calibration"),
        ("substitute", "repair must be an object"),
    ],
)
def test_bad_repair_settings_say_what_is_wrong(registry, repair, message):
    with pytest.raises(PolicyError, match=message):
        registry.publish({"name": "r", "extends": "default@1", "verify": {"repair": repair}})


def test_a_new_version_inherits_replaces_or_drops_the_repair_object(registry):
    registry.publish({"name": "r", "extends": "default@1", "verify": {"repair": REPAIR}})
    v2, _ = registry.publish({"name": "r", "verify": {"accept_through": "whitespace"}})
    assert v2.repair_document == REPAIR and v2.repair is not None
    v3, _ = registry.publish({"name": "r", "verify": {"repair": {"repair_mode": "annotate"}}})
    assert v3.repair_document == {"repair_mode": "annotate"}
    v4, _ = registry.publish({"name": "r", "verify": {"repair": None}})
    assert v4.repair is None and "repair" not in v4.verify
    stored = json.loads(registry.store.get(registry.key("r", 1)))
    assert stored["verify"]["repair"] == REPAIR and stored["repair"]["threshold"] == 0.65
