"""Gates on real runs: `run --gate` exits with the verdict, and the API's
GET /v1/runs/{id}/gate checks the deployment's gate file, with the corpus's previous run as
the baseline of max_drop; POST /v1/runs/{id}/export sends the Parquet export to a worker."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.settings import hash_api_key
from tests.conftest import API_KEY, running_api, wait_until
from tests.shared.cli.test_runs_cli import groundswell

pytestmark = pytest.mark.integration

GATE = """gate: 1
checks:
  - metric: grounding_rate
    warn: {min: 0.5, max_drop: 0.0}
  - metric: escape_rate
    fail: {max: 0.0}
  - metric: failed_units
    fail: {max: 0}
"""


def test_run_wait_gate_exits_with_the_verdict_and_gate_reads_the_same(tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE)
    env = {**os.environ, "GROUNDSWELL_STORAGE_URL": str(tmp_path / "out")}
    for name in ("GROUNDSWELL_BROKER_URL", "GROUNDSWELL_API_URL", "GROUNDSWELL_API_KEY"):
        env.pop(name, None)
    bad = tmp_path / "bad.yaml"
    bad.write_text("gate: 1\nchecks:\n  - metric: escapes\n    fail: {max: 0}\n")
    refused = groundswell("run", str(SAMPLE_CORPUS), "--gate", str(bad), env=env)
    assert refused.returncode == 2 and f"{bad}:3: checks.0: unknown metric" in refused.stderr
    assert "private stack" not in refused.stderr  # nothing ran

    done = groundswell("run", str(SAMPLE_CORPUS), "--json", "--gate", str(gate), env=env)
    summary = json.loads(done.stdout)
    escape = summary["rates"]["candidates_escape_rate"]
    assert escape and escape > 0, "the sample corpus's labels have escapes"
    assert done.returncode == 2, done.stderr
    assert f"FAIL    escape_rate = {escape:g}: fail, crosses max 0" in done.stderr
    assert "max_drop not checked: no corpus previous run" in done.stderr
    again = groundswell("gate", summary["run_id"], str(gate), "--json", env=env)
    assert again.returncode == 2 and json.loads(again.stdout)["status"] == "fail"


def test_api_gate_route(pipeline, service_settings, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE.replace("fail: {max: 0.0}", "warn: {max: 0.0}"))
    values = {
        **service_settings,
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": str(SAMPLE_CORPUS),
        "gate_file": str(gate),
    }
    pipeline.start_worker("w1")
    with (
        running_api(values, tmp_path) as url,
        httpx.Client(base_url=url, headers={"X-API-Key": API_KEY}, timeout=30) as client,
    ):
        ids = []
        for _ in range(2):
            run = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}).json()
            if not ids:
                early = client.get(f"/v1/runs/{run['id']}/gate")
                assert early.status_code in (200, 409)
            pipeline.wait(run["id"])
            ids.append(run["id"])
        result = client.get(f"/v1/runs/{ids[1]}/gate").json()
        assert result["status"] == "warn" and result["exit_code"] == 1
        grounding = result["checks"][0]
        assert grounding["status"] == "pass" and grounding["baseline_run"] == ids[0]
        assert result["checks"][1]["status"] == "warn"
        assert client.get("/v1/runs/nope/gate").status_code == 404
        # The Parquet export on request, on a worker; its manifest once written.
        assert client.get(f"/v1/runs/{ids[1]}/export").status_code == 404
        sent = client.post(f"/v1/runs/{ids[1]}/export")
        assert sent.status_code == 202 and sent.headers["Location"] == f"/v1/runs/{ids[1]}/export"
        manifest = wait_until(
            lambda: (r := client.get(f"/v1/runs/{ids[1]}/export")).status_code == 200 and r.json(),
            60,
            "the export's manifest",
        )
        assert manifest["rows"]["certificates"] > 0 and manifest["format"] == 1
        assert manifest["root"] is None  # the server's own folder is not shown
