"""Policies, schedules and diffs over HTTP (real uvicorn)."""

from __future__ import annotations

import shutil

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.metrics import corpus_label

pytestmark = pytest.mark.integration


def test_policy_versions_are_published_once_and_never_change(client):
    listed = client.get("/v1/policies").json()
    assert [p["name"] for p in listed] == ["default", "guarded", "permissive", "strict"]
    assert all(p["versions"] == [1] for p in listed)

    body = {
        "name": "default",
        "verify": {"match_boundaries": False},
        "description": "no boundaries",
    }
    created = client.post("/v1/policies", json=body)
    assert created.status_code == 201, created.text
    assert created.headers["Location"] == "/v1/policies/default/versions/2"
    v2 = created.json()
    assert v2["ref"] == "default@2" and v2["verify"]["match_boundaries"] is False
    v1 = client.get("/v1/policies/default/versions/1").json()
    assert v1["admit_fingerprint"] == v2["admit_fingerprint"]
    assert v1["verify_fingerprint"] != v2["verify_fingerprint"]

    assert client.post("/v1/policies", json=body).status_code == 200  # same content: no-op
    conflict = client.post(
        "/v1/policies", json={"name": "default", "extends": "strict@1", "version": 2}
    )
    assert conflict.status_code == 409 and "already published" in conflict.json()["detail"]
    bad = client.post("/v1/policies", json={"name": "x", "verify": {"accept_through": "nope"}})
    assert bad.status_code == 422 and "no tier named 'nope'" in bad.json()["detail"]
    assert client.get("/v1/policies/default").json()["versions"] == [1, 2]
    assert client.get("/v1/policies/default/versions/9").status_code == 404
    assert client.get("/v1/policies/nope").status_code == 404


def test_a_calibration_is_stored_by_digest_and_a_version_that_repairs_names_it(client):
    from groundswell.shared.policies import builtin_policies
    from groundswell.shared.repair import RepairPolicy, RepairSettings
    from groundswell.shared.repair.calibration import LabelledRepair, calibrate_risk

    repair = {"repair_mode": "substitute", "salvage_policy": "longest_grounded"}
    policy = RepairPolicy(
        builtin_policies()["default"].verify_policy, RepairSettings.from_dict(repair)
    )
    examples = [LabelledRepair(0.5 + i / 400, True) for i in range(200)]
    examples += [LabelledRepair(0.3 + i / 100, False) for i in range(20)]
    calibration = calibrate_risk(examples, alpha=0.1, delta=0.1, binding=policy.binding())
    stored = client.post("/v1/policies/calibrations", json=calibration.as_dict())
    assert stored.status_code == 201, stored.text
    digest = stored.json()["sha256"]
    body = {
        "name": "repairing",
        "extends": "default@1",
        "verify": {"repair": {**repair, "calibration": digest}},
    }
    created = client.post("/v1/policies", json=body)
    assert created.status_code == 201, created.text
    version = created.json()
    assert version["repair"]["threshold"] == calibration.threshold
    assert version["repair"]["threshold_source"] == "calibration"
    assert version["repair"]["calibration"] == digest
    other = {**body, "verify": {"repair": {"repair_mode": "annotate", "calibration": digest}}}
    refused = client.post("/v1/policies", json=other)
    assert refused.status_code == 422 and "pre-threshold" in refused.json()["detail"]
    unbound = client.post(
        "/v1/policies/calibrations", json={**calibration.as_dict(), "binding": None}
    )
    assert unbound.status_code == 422 and "unbound" in unbound.json()["detail"]


def test_a_version_with_guard_settings_is_published_over_its_base(client):
    from groundswell.shared.guarded import DEFAULT_GUARD

    guarded = client.get("/v1/policies/guarded/versions/1").json()
    assert guarded["guard"] == DEFAULT_GUARD.as_dict()
    body = {"name": "columnless", "extends": "guarded@1", "guard": {"column": "off"}}
    created = client.post("/v1/policies", json=body)
    assert created.status_code == 201, created.text
    version = created.json()
    assert version["guard"] == {**DEFAULT_GUARD.as_dict(), "column": "off"}
    assert version["admit_fingerprint"] != guarded["admit_fingerprint"]
    assert version["verify_fingerprint"] == guarded["verify_fingerprint"]
    assert client.post("/v1/policies", json=body).status_code == 200  # the same: a no-op
    dropped = client.post("/v1/policies", json={**body, "name": "plain", "guard": None})
    assert dropped.status_code == 201 and "guard" not in dropped.json()
    default = client.get("/v1/policies/default/versions/1").json()
    assert dropped.json()["admit_fingerprint"] == default["admit_fingerprint"]
    bad = client.post("/v1/policies", json={**body, "guard": {"caption_lines": -1}})
    assert bad.status_code == 422 and "guard.caption_lines" in bad.json()["detail"]
    unknown = client.post("/v1/policies", json={**body, "guard": {"colum": "off"}})
    assert (
        unknown.status_code == 422 and "unknown guard settings: colum" in unknown.json()["detail"]
    )


def test_schedules_are_added_listed_and_removed(client):
    body = {"corpus": str(SAMPLE_CORPUS), "policy": "default", "cron": "0 3 * * *"}
    created = client.post("/v1/schedules", json=body)
    assert created.status_code == 201, created.text
    schedule = created.json()
    assert schedule["policy"] == "default@latest" and schedule["cron"] == "0 3 * * *"
    assert schedule["ledger"] is False  # its runs load no ledger unless asked
    assert [s["id"] for s in client.get("/v1/schedules").json()["items"]] == [schedule["id"]]
    assert client.get(f"/v1/schedules/{schedule['id']}").json()["runs"] == 0
    both = client.post("/v1/schedules", json={**body, "every_seconds": 60})
    assert both.status_code == 422 and "exactly one of every_seconds" in both.json()["detail"]
    cron = client.post("/v1/schedules", json={**body, "cron": "every day"})
    assert cron.status_code == 422 and "5 fields" in cron.json()["detail"]
    # Celery's own parser judges the fields: an hour of 25 or a minute of 61 never gets saved.
    for bad in ("61 * * * *", "0 25 * * *", "0 3 * * funday"):
        refused = client.post("/v1/schedules", json={**body, "cron": bad})
        assert refused.status_code == 422 and "invalid cron" in refused.json()["detail"], bad
    # Fields the API does not know are refused, not silently dropped.
    typo = client.post(
        "/v1/schedules", json={"corpus": str(SAMPLE_CORPUS), "every": 60, "cron": "0 3 * * *"}
    )
    assert typo.status_code == 422 and "every" in typo.json()["detail"]
    run_typo = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "polcy": "strict"})
    assert run_typo.status_code == 422 and "polcy" in run_typo.json()["detail"]
    policy_typo = client.post("/v1/policies", json={"name": "x", "verfy": {}})
    assert policy_typo.status_code == 422 and "verfy" in policy_typo.json()["detail"]
    assert len(client.get("/v1/schedules").json()["items"]) == 1  # only the good one was saved
    unknown = client.post("/v1/schedules", json={**body, "policy": "nope"})
    assert unknown.status_code == 422
    assert client.delete(f"/v1/schedules/{schedule['id']}").status_code == 204
    assert client.delete(f"/v1/schedules/{schedule['id']}").status_code == 404
    assert client.get("/v1/schedules").json() == {"items": [], "unreadable": []}
    # With the ledger on: stored with the schedule (the runs it starts carry it).
    loading = client.post("/v1/schedules", json={**body, "ledger": True})
    assert loading.status_code == 201 and loading.json()["ledger"] is True
    assert client.get(f"/v1/schedules/{loading.json()['id']}").json()["ledger"] is True
    assert client.delete(f"/v1/schedules/{loading.json()['id']}").status_code == 204


def test_diff_of_two_runs_with_pagination(client, pipeline, tmp_path):
    pipeline.start_worker("w1")
    ids = []
    for policy in ("default", "strict"):
        run = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "policy": policy}).json()
        ids.append(run["id"])
        if len(ids) == 2:
            assert client.get(f"/v1/runs/{ids[0]}/diff/{ids[1]}").status_code in (200, 409)
        pipeline.wait(run["id"])
    page = client.get(f"/v1/runs/{ids[0]}/diff/{ids[1]}", params={"limit": 5}).json()
    total = page["pagination"]["total_count"]
    assert total > 5 and len(page["moved"]) == 5
    assert page["policy_a"]["ref"] == "default@1" and page["policy_b"]["ref"] == "strict@1"
    accepted = next(r for r in page["rates"] if r["rate"] == "claims accepted")
    assert accepted["change_pp"] < 0
    items = []
    for number in range(1, page["pagination"]["max_page"] + 1):
        items += client.get(
            f"/v1/runs/{ids[0]}/diff/{ids[1]}", params={"limit": 5, "page": number}
        ).json()["moved"]
    assert len(items) == total and all(i["kind"] == "claim" for i in items)
    metrics = client.get("/metrics").text
    corpus = corpus_label(str(SAMPLE_CORPUS))
    assert f'grounding_rate{{corpus="{corpus}",policy="strict",version="1"}}' in metrics
    assert client.get(f"/v1/runs/{ids[0]}/diff/nope").status_code == 404
    # Another corpus is not a diff: refused, not "everything moved".
    other = tmp_path / "other"
    shutil.copytree(SAMPLE_CORPUS, other)
    third = client.post("/v1/runs", json={"corpus": str(other)}).json()
    pipeline.wait(third["id"])
    refused = client.get(f"/v1/runs/{ids[0]}/diff/{third['id']}")
    assert refused.status_code == 422 and "different corpora" in refused.json()["detail"]
    # A run that ended cannot be cancelled; no answer names the server's own folders.
    assert client.post(f"/v1/runs/{ids[0]}/cancel").status_code == 409
    shown = client.get(f"/v1/runs/{ids[0]}").json()
    assert shown["output"] is None
    assert client.get(f"/v1/runs/{ids[0]}/summary").json()["output"] is None


def test_one_unreadable_policy_version_hides_no_other_policy(client, service_settings):
    from pathlib import Path

    from tests.api.test_schedules import _metric, bad_records_reach

    store = Path(service_settings["storage_url"]) / "policies"
    assert client.get("/v1/policies").status_code == 200  # the built-ins are registered
    for name, data in (("broken", "{not json"), ("half", '{"name": "half"}')):
        (store / name).mkdir(parents=True)
        (store / name / "1.json").write_text(data)
    before = _metric(client, "groundswell_bad_records_total", collection="policies")
    listed = client.get("/v1/policies")
    assert listed.status_code == 200, listed.text
    assert [p["name"] for p in listed.json()] == ["default", "guarded", "permissive", "strict"]
    bad_records_reach(client, "policies", before + 2)
    one = client.get("/v1/policies/broken")
    assert one.status_code == 404 and "policies/broken/1.json is unreadable" in one.text
    assert client.get("/v1/policies/half/versions/1").status_code == 404
    # Publishing over an unreadable latest version is refused with what is wrong (not a 500).
    over = client.post("/v1/policies", json={"name": "broken", "extends": "default@1"})
    assert over.status_code == 422 and "unreadable" in over.json()["detail"]
    other = client.post("/v1/policies", json={"name": "fresh", "extends": "default@1"})
    assert other.status_code == 201, other.text
