"""The run commands as a user types them: demo, run, submit/status/summary against the API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.summary import TIERS, VERDICTS
from groundswell.workers.embedded import service_env
from tests.conftest import API_KEY

pytestmark = pytest.mark.integration


# Private stacks of the tests that are about a message or the store, not concurrency, run
# `--workers 1`: one worker process to start instead of two.


def groundswell(*args: str, env: dict[str, str] | None = None, cwd=None, timeout: float = 180):
    return subprocess.run(
        [sys.executable, "-m", "groundswell", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def test_demo_runs_the_sample_corpus_on_a_private_stack(tmp_path):
    # No broker and no store configured: a private stack, and the per-user data folder.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GROUNDSWELL_BROKER_URL", "GROUNDSWELL_STORAGE_URL")
    }
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    done = groundswell("demo", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    # the private stack's worker logs go with a run that succeeded
    assert not list((tmp_path / "tmp").glob("groundswell-logs-*"))
    summary = json.loads(done.stdout)
    assert summary["state"] == "succeeded"
    counts = summary["counts"]
    for tier in TIERS:
        assert counts.get(f"claims.tier.{tier}", 0) > 0, tier
    for verdict in VERDICTS:
        assert counts.get(f"claims.verdict.{verdict}", 0) > 0, verdict
    assert counts["candidates.escapes"] > 0 and counts["candidates.false_rejections"] > 0
    receipts = list((tmp_path / "xdg" / "groundswell" / "receipts").rglob("*.json"))
    assert len(receipts) == summary["index"]["units"] == 18
    # From another folder: the same store, so every receipt is reused.
    again = groundswell("demo", "--json", cwd=tmp_path / "xdg", env=env)
    assert f"receipts to {tmp_path / 'xdg' / 'groundswell'}" in again.stderr
    units = json.loads(again.stdout)["units"]
    assert units["verify"]["cached"] == units["admit"]["cached"] == 9


def test_run_refuses_a_missing_corpus_folder(tmp_path):
    done = groundswell("run", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "does not exist" in done.stderr


def test_a_folder_that_is_not_a_corpus_fails_and_says_what_the_layout_is(tmp_path):
    env = service_env(storage_url=str(tmp_path / "out"))
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    for folder in (SAMPLE_CORPUS / "documents", tmp_path):  # text files, then nothing at all
        done = groundswell(
            "run", str(folder), "--embedded", "--workers", "1", env=env, cwd=tmp_path
        )
        assert done.returncode == 1, done.stderr
        assert "nothing to do" in done.stdout + done.stderr
        assert "claims/<id>.jsonl" in done.stdout + done.stderr
        # a run that failed keeps its worker logs and names them
        kept = done.stderr.split("worker logs: ")[1].split()[0]
        assert Path(kept).parent == tmp_path / "tmp" and Path(kept).is_dir()


def test_a_corpus_in_another_layout_names_what_was_found_and_what_was_expected(tmp_path):
    env = service_env(storage_url=str(tmp_path / "out"))
    doc = (SAMPLE_CORPUS / "documents" / "brightwater-10q-q3-2025.txt").read_bytes()
    claims = (SAMPLE_CORPUS / "claims" / "brightwater-10q-q3-2025.jsonl").read_bytes()
    layouts = {
        "flat": ({"a.txt": doc, "a.jsonl": claims}, "2 files at the top level (a.jsonl, ...)"),
        "json-claims": (
            {"documents/a.txt": doc, "claims/a.json": claims},
            "claims/a.json is not claims/<id>.jsonl",
        ),
        "singular": (
            {"claim/a.jsonl": claims, "document/a.txt": doc},
            "claim/ is not claims/; document/ is not documents/",
        ),
    }
    for name, (files, words) in layouts.items():
        for key, data in files.items():
            (tmp_path / name / key).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / key).write_bytes(data)
        done = groundswell(
            "run", str(tmp_path / name), "--embedded", "--workers", "1", "--json", env=env
        )
        assert done.returncode == 1, done.stderr
        error = json.loads(done.stdout)["error"]
        assert words in error and "a corpus holds documents/<id>.txt" in error, error
        assert f"found {len(files)} files ({', '.join(sorted(files))})" in error, error
    # Claims where they belong, documents under document/: units are planned and fail, and
    # the run says what was found instead.
    for key, data in {"claims/a.jsonl": claims, "document/a.txt": doc}.items():
        (tmp_path / "half" / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "half" / key).write_bytes(data)
    done = groundswell(
        "run", str(tmp_path / "half"), "--embedded", "--workers", "1", "--json", env=env
    )
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert f"no documents in {tmp_path / 'half'}" in error, error
    assert "(found 2 files; document/ is not documents/)" in error, error
    assert "document/ is not documents/" in done.stderr  # the line after the summary too
    missing = groundswell("run", str(tmp_path / "nowhere"), "--embedded", env=env)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_an_unknown_policy_on_the_private_stack_is_one_line_and_exit_2(tmp_path):
    env = service_env(storage_url=str(tmp_path / "out"))
    for ref, names in (
        ("defualt@1", ("'defualt'", "default", "strict")),
        ("default@7", ("7", "1")),
    ):
        done = groundswell("run", str(SAMPLE_CORPUS), "--policy", ref, "--embedded", env=env)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert all(name in done.stderr for name in names), done.stderr
        assert "worker logs" not in done.stderr and not done.stdout


def test_status_and_summary_read_the_local_store_when_no_api_is_configured(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSWELL_")}
    env["GROUNDSWELL_STORAGE_URL"] = str(tmp_path / "out")
    done = groundswell(
        "run", str(SAMPLE_CORPUS), "--embedded", "--workers", "1", "-q", env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    status = groundswell("status", run_id, env=env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert f"{run_id}  succeeded" in status.stdout and "default@1" in status.stdout
    as_json = json.loads(groundswell("status", run_id, "--json", env=env, cwd=tmp_path).stdout)
    assert as_json["state"] == "succeeded" and as_json["progress"]["planning_done"]
    summary = groundswell("summary", run_id, "--json", "--wait", env=env, cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert json.loads(summary.stdout)["run_id"] == run_id
    unknown = groundswell("status", "r-nope", env=env, cwd=tmp_path)
    assert unknown.returncode == 2 and "GROUNDSWELL_API_URL" in unknown.stderr, unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1


def test_submit_status_and_summary_through_the_api(api_url, pipeline, tmp_path):
    pipeline.start_worker("w1")
    env = service_env(api_url=api_url, api_key=API_KEY)
    relative = os.path.relpath(SAMPLE_CORPUS, tmp_path)
    submitted = groundswell("submit", relative, "--policy", "strict", env=env, cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    assert f"the server reads {SAMPLE_CORPUS}" in submitted.stderr  # resolved, and said
    run_id = submitted.stdout.strip()
    pipeline.wait(run_id)
    status = groundswell("status", run_id, env=env)
    assert status.returncode == 0 and run_id in status.stdout and "strict@1" in status.stdout
    summary = json.loads(groundswell("summary", run_id, "--json", env=env).stdout)
    assert summary["policy"]["ref"] == "strict@1"
    # Strict accepts only character-identical quotations.
    assert summary["counts"]["claims.accepted"] == summary["counts"]["claims.tier.exact"]
    wrong = groundswell("status", run_id, env={**env, "GROUNDSWELL_API_KEY": "nope"})
    assert wrong.returncode == 1 and "403" in wrong.stderr


def test_without_a_broker_runs_use_a_private_stack_and_services_refuse(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSWELL_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    dry = groundswell(
        "reprocess", str(SAMPLE_CORPUS), "--policy", "default@latest", "--dry-run", env=env
    )
    assert dry.returncode == 0, dry.stderr
    assert "would compute      9" in dry.stdout and "new input" in dry.stdout
    for command in ("worker", "beat", "api"):
        refused = groundswell(command, env=env, timeout=60)
        assert refused.returncode == 2 and "GROUNDSWELL_BROKER_URL" in refused.stderr, command


def test_a_configured_broker_is_used_as_configured(tmp_path):
    from groundswell.workers.embedded import free_port

    env = dict(os.environ)
    env["GROUNDSWELL_BROKER_URL"] = f"redis://127.0.0.1:{free_port()}/0"  # nobody there
    env["GROUNDSWELL_STORAGE_URL"] = str(tmp_path / "store")
    started = time.monotonic()
    done = groundswell("run", str(SAMPLE_CORPUS), env=env, timeout=120)
    assert done.returncode == 2 and "no workers answer" in done.stderr, done.stderr
    assert "--embedded" in done.stderr and time.monotonic() - started < 60


def test_status_counts_read_units_beside_verify_and_admit(tmp_path):
    """A document read from HTML has a read unit too: status counts it with the others."""
    corpus = tmp_path / "corpus"
    (corpus / "documents").mkdir(parents=True)
    (corpus / "claims").mkdir()
    (corpus / "documents" / "note.html").write_text(
        "<html><body><p>Net revenue was $5.2 million in 2025.</p></body></html>"
    )
    (corpus / "claims" / "note.jsonl").write_text(
        json.dumps({"id": "c1", "claim": "Net revenue was $5.2 million"}) + "\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDSWELL_")}
    env["GROUNDSWELL_STORAGE_URL"] = str(tmp_path / "out")
    done = groundswell(
        "run", str(corpus), "--embedded", "--workers", "1", "-q", env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    status = groundswell("status", done.stdout.strip(), env=env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "succeeded  2/2 units (read 1/1, verify 1/1)" in status.stdout, status.stdout


def test_run_reads_a_langextract_file_in_place_with_format(tmp_path):
    """``run --format langextract``: the JSONL where it lies, no corpus.yaml, no import."""
    env = service_env(storage_url=str(tmp_path / "out"))
    corpus = tmp_path / "lx"
    corpus.mkdir()
    text = "Revenue rose to $12.5 million in 2019, up from $9 million."
    record = {
        "document_id": "q3",
        "text": text,
        "extractions": [
            {
                "extraction_class": "amount",
                "extraction_text": "$12.5 million",
                "char_interval": {"start_pos": 16, "end_pos": 29},
                "alignment_status": "match_exact",
            },
            {"extraction_class": "amount", "extraction_text": "$40 million"},
        ],
    }
    (corpus / "out.jsonl").write_text(json.dumps(record) + "\n")
    (corpus / "schema.json").write_text(
        '{"fields": {"amount": {"type": "string", "multiple": true}}}'
    )
    done = groundswell(
        "run", str(corpus), "--format", "langextract", "--embedded", "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["units"]["verify"]["computed"] == summary["units"]["admit"]["computed"] == 1
    assert summary["counts"]["claims"] == 2 and summary["counts"]["claims.accepted"] == 1
    # The same folder declaring a bad corpus.yaml: the run fails naming its line and field.
    (corpus / "corpus.yaml").write_text("format: langextract\nproducer:\n  modle: x\n")
    done = groundswell("run", str(corpus), "--embedded", "--json", env=env)
    assert done.returncode == 1, done.stderr
    assert "corpus.yaml:3: producer.modle: Extra inputs" in json.loads(done.stdout)["error"]
