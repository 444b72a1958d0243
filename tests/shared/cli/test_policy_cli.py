"""Policy, reprocess, diff and schedule commands against real workers, Redis and storage."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.workers.embedded import service_env
from tests.shared.cli.test_runs_cli import groundswell

pytestmark = pytest.mark.integration


def test_publish_reprocess_dry_run_diff_and_schedules(pipeline, tmp_path):
    pipeline.start_worker("w1")
    env = service_env(**pipeline.values)

    listed = groundswell("policy", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [p["ref"] for p in json.loads(listed.stdout)] == [
        "default@1",
        "guarded@1",
        "permissive@1",
        "strict@1",
    ]

    first = groundswell(
        "run", str(SAMPLE_CORPUS), "--policy", "default@1", "--wait", "--json", env=env
    )
    assert first.returncode == 0, first.stderr
    run_a = json.loads(first.stdout)
    assert run_a["units"]["verify"]["computed"] == 9

    document = tmp_path / "v2.json"
    document.write_text(json.dumps({"name": "default", "verify": {"accept_through": "exact"}}))
    published = groundswell("policy", "publish", str(document), env=env)
    assert published.returncode == 0 and "default@2 published" in published.stdout
    again = groundswell("policy", "publish", str(document), env=env)
    assert "default@2 unchanged" in again.stdout
    conflict = groundswell("policy", "publish", str(document), "--version", "1", env=env)
    assert conflict.returncode == 3 and "default@1 is already published" in conflict.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "default", "verify": {"accept_through": "nowhere"}}')
    refused = groundswell("policy", "publish", str(bad), env=env)
    assert refused.returncode == 2 and "no tier named 'nowhere'" in refused.stderr
    explained = groundswell("policy", "explain", "default@2", env=env)
    # The readable text of `explain`, not raw JSON; a description that says what changed.
    assert "accept_through" in explained.stdout and "{" not in explained.stdout
    assert explained.stdout.startswith("default@2: default@1 with accept_through changed")
    assert "admission     fingerprint" in explained.stdout
    # verify reads the same registry as run: NAME@N and the latest version.
    claims = tmp_path / "claims.jsonl"
    (tmp_path / "doc.txt").write_text("Revenue  grew\nstrongly.\n")
    claims.write_text('{"id": "a", "claim": "Revenue grew strongly.", "source_path": "doc.txt"}\n')
    for ref in ("default@2", "default"):
        checked = groundswell("verify", str(claims), "--policy", ref, env=env, cwd=tmp_path)
        assert checked.returncode == 0 and "default@2" in checked.stderr, (ref, checked.stderr)

    dry = groundswell(
        "reprocess", str(SAMPLE_CORPUS), "--policy", "default@latest", "--dry-run", env=env
    )
    assert dry.returncode == 0, dry.stderr
    assert "would compute      9" in dry.stdout and "changed policy part" in dry.stdout
    assert "admit   would compute      0  would reuse      9" in dry.stdout

    second = groundswell(
        "reprocess", str(SAMPLE_CORPUS), "--policy", "default@latest", "--json", env=env
    )
    run_b = json.loads(second.stdout)
    assert run_b["policy"]["ref"] == "default@2"
    assert run_b["units"]["verify"]["computed"] == 9 and run_b["units"]["admit"]["cached"] == 9

    diff = groundswell("diff", run_a["run_id"], run_b["run_id"], "--json", env=env)
    moved = json.loads(diff.stdout)["moved"]
    assert moved and all(
        m["b"]["verdict"] == "grounded_loose" for m in moved if m["a"]["verdict"] == "grounded"
    )
    text = groundswell("diff", run_a["run_id"], run_b["run_id"], env=env).stdout
    assert "claims accepted" in text and " pp" in text and "items moved" in text
    assert "None" not in text  # an absent value reads "–", not Python's None

    added = groundswell("schedule", "add", str(SAMPLE_CORPUS), "--every", "1h", env=env)
    schedule_id = added.stdout.strip()
    assert added.returncode == 0 and schedule_id.startswith("s-")
    assert schedule_id in groundswell("schedule", "list", env=env).stdout
    neither = groundswell("schedule", "add", str(SAMPLE_CORPUS), env=env)
    assert (
        neither.returncode == 2 and "--every" in neither.stderr and "pydantic" not in neither.stderr
    )
    bad_cron = groundswell("schedule", "add", str(SAMPLE_CORPUS), "--cron", "61 * * * *", env=env)
    assert bad_cron.returncode == 2 and "invalid cron" in bad_cron.stderr
    wrong = groundswell("schedule", "add", str(SAMPLE_CORPUS), "--every", "soon", env=env)
    assert wrong.returncode == 2 and "invalid interval" in wrong.stderr
    assert groundswell("schedule", "remove", schedule_id, env=env).returncode == 0
    empty = groundswell("schedule", "list", env=env)
    assert schedule_id not in empty.stdout and empty.stdout.startswith("no schedules")
    assert groundswell("schedule", "remove", schedule_id, env=env).returncode == 2


def test_schedule_list_and_remove_survive_an_unreadable_schedule(pipeline):
    from groundswell.shared.runs.schedules import PREFIX
    from tests.api.test_schedules import OLD_BAD_RECORD

    env = service_env(**pipeline.values)
    added = groundswell("schedule", "add", str(SAMPLE_CORPUS), "--every", "1h", env=env)
    assert added.returncode == 0, added.stderr
    good = added.stdout.strip()
    pipeline.service.runs.r.hset(PREFIX + "s", OLD_BAD_RECORD["id"], json.dumps(OLD_BAD_RECORD))

    listed = groundswell("schedule", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert good in listed.stdout and "s-0badf00d" not in listed.stdout
    assert "schedule s-0badf00d is unreadable" in listed.stderr
    assert "groundswell schedule remove s-0badf00d" in listed.stderr
    as_json = json.loads(groundswell("schedule", "list", "--json", env=env).stdout)
    assert [s["id"] for s in as_json["items"]] == [good]
    assert [u["id"] for u in as_json["unreadable"]] == ["s-0badf00d"]

    removed = groundswell("schedule", "remove", "s-0badf00d", env=env)
    assert removed.returncode == 0 and "removed s-0badf00d" in removed.stdout
    assert "unreadable" not in groundswell("schedule", "list", env=env).stderr
