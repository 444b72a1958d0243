"""`groundswell policy calibration` and `policy explain` of a version that repairs (storage only,
in process: no broker, no workers)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.settings import get_settings
from groundswell.shared.storage import open_store
from tests.shared.test_policies_repair import REPAIR, _calibration


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.delenv("GROUNDSWELL_BROKER_URL", raising=False)
    monkeypatch.delenv("GROUNDSWELL_REDIS_URL", raising=False)
    monkeypatch.setenv("GROUNDSWELL_STORAGE_URL", str(tmp_path / "store"))
    registry = PolicyRegistry(open_store(str(tmp_path / "store")))
    registry.ensure_builtins()

    def invoke(*args: str):
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    yield invoke, registry
    get_settings.cache_clear()  # the commands cached this test's store: later tests must not see it


def test_explain_prints_the_repair_settings_and_where_the_threshold_comes_from(cli, tmp_path):
    invoke, registry = cli
    off = invoke("policy", "explain", "default@1")
    assert off.exit_code == 0 and "repair        off" in off.output

    report = tmp_path / "calibration.json"
    report.write_text(json.dumps({"risk": _calibration(registry, REPAIR)}))
    stored = invoke("policy", "calibration", str(report))
    assert stored.exit_code == 0, stored.output
    digest = stored.output.strip()
    assert digest == registry.put_calibration(json.loads(report.read_text()))

    for name, repair, source in (
        ("plain", REPAIR, "default (never calibrated"),
        ("fixed", {**REPAIR, "repair_threshold": 0.9}, "policy (repair_threshold"),
        ("calibrated", {**REPAIR, "calibration": digest}, f"calibration {digest}"),
    ):
        document = tmp_path / f"{name}.json"
        document.write_text(
            json.dumps({"name": name, "extends": "default@1", "verify": {"repair": repair}})
        )
        published = invoke("policy", "publish", str(document))
        assert published.exit_code == 0, published.output
        explained = invoke("policy", "explain", f"{name}@1").output
        assert "repair        fingerprint" in explained and "{" not in explained
        assert "repair_mode          substitute" in explained
        assert "salvage_policy       longest_grounded" in explained
        assert f"threshold source     {source}" in explained

    unbound = tmp_path / "unbound.json"
    unbound.write_text(json.dumps({**_calibration(registry, REPAIR), "binding": None}))
    refused = invoke("policy", "calibration", str(unbound))
    assert refused.exit_code == 2 and "unbound" in refused.output


def test_repair_command_runs_a_published_version_s_repair(cli, tmp_path):
    """`groundswell repair --policy NAME@N` takes the version's cascade settings and the
    threshold in force (here set by hand), as a run under that version would."""
    invoke, _ = cli
    document = tmp_path / "annotating.json"
    repair = {"repair_mode": "annotate", "repair_threshold": 0.5, "polarity_guard": False}
    document.write_text(
        json.dumps({"name": "annotating", "extends": "default@1", "verify": {"repair": repair}})
    )
    assert invoke("policy", "publish", str(document)).exit_code == 0
    source = "We believe that we will not be able to compete effectively in our markets."
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps(
            {"claim": "We believe that we will be able to compete effectively", "source": source}
        )
        + "\n"
    )
    ran = invoke("repair", str(claims), "--policy", "annotating@1")
    assert ran.exit_code == 0, ran.output
    result = json.loads(ran.stdout)["groundswell"]
    # Polarity guard off and annotate mode: the dropped "not" is annotated, not refused.
    assert (result["action"], result["stage"]) == ("annotated", "alignment")
    assert (result["threshold"], result["threshold_source"]) == (0.5, "policy")
    plain = json.loads(invoke("repair", str(claims), "--policy", "default@1").stdout)
    assert plain["groundswell"]["stage"] == "polarity_guard"
