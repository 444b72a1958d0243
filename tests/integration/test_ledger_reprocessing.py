"""Reprocessing with the ledger on (issue 16): a schedule added with ``--ledger`` and a
``groundswell reprocess --ledger`` load each new policy version's facts beside the earlier
versions', on real Redis, moto S3, real worker processes (a ``worker-ledger`` of its own, as
deployed) and a private PostgreSQL server."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.ledger.history import fact_history
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.runs.models import RunSpec
from groundswell.workers.embedded import service_env
from groundswell.workers.schedules import remove_schedule
from tests.conftest import Pipeline, s3_client, wait_until
from tests.integration.corpus_gen import upload
from tests.shared.cli.test_runs_cli import groundswell

pytestmark = pytest.mark.integration


@pytest.fixture
def ledger_pipeline(pipeline, postgres_url, tmp_path):
    """The lane's pipeline, its workers writing the ledger to a schema of the private server."""
    pipe = Pipeline({**pipeline.values, "ledger_url": postgres_url}, tmp_path)
    yield pipe
    pipe.stop()


def _facts(url: str) -> int:
    with Ledger.open(url) as ledger, ledger.engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM facts")).scalar_one()


def _a_fact(url: str) -> tuple[str, str, str]:
    """(document, field, key) of one fact in the ledger."""
    with Ledger.open(url) as ledger, ledger.engine.connect() as conn:
        sql = "SELECT c.document_id, f.field, f.key FROM facts f JOIN claims c ON c.id = f.claim_id"
        return tuple(conn.execute(text(sql + " ORDER BY f.claim_id")).first())


def test_scheduled_and_cli_reprocessing_load_each_policy_versions_facts_beside_the_last(
    ledger_pipeline, lane, tmp_path
):
    pipeline, url = ledger_pipeline, ledger_pipeline.settings.ledger_url
    bucket = lane.new_bucket("corpus")
    upload(SAMPLE_CORPUS, s3_client(lane.s3_endpoint), bucket, "corpus")
    corpus = f"s3://{bucket}/corpus"
    pipeline.start_worker("w1")
    pipeline.start_worker("w-ledger", queues="ledger")
    service, env = pipeline.service, service_env(**pipeline.values)

    base, _ = service.submit(RunSpec(corpus=corpus, policy="default@1", ledger=True))
    first = pipeline.wait(base.id)
    admitted = first["counts"]["candidates.outcome.admitted"]
    assert first["state"] == "succeeded" and first["counts"]["ledger.facts"] == admitted > 0
    assert _facts(url) == admitted

    # A schedule added with --ledger keeps it, and the run it starts on a publish carries it.
    added = groundswell(
        "schedule", "add", corpus, "--policy", "default@latest", "--every", "1h", "--ledger",
        env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    schedule_id = added.stdout.strip()
    assert service.schedules.get(schedule_id).ledger is True
    assert "ledger" in groundswell("schedule", "list", env=env).stdout
    v2, created = service.publish_policy(
        {"name": "default", "verify": {"accept_through": "whitespace"}}
    )
    assert created and v2.ref == "default@2"
    fired = wait_until(
        lambda: [r for r in service.list_runs(0, 50)[0] if r.schedule == schedule_id],
        30,
        "the schedule to fire on publish",
    )
    (scheduled,) = fired
    assert scheduled.ledger and scheduled.policy["ref"] == "default@2"
    second = pipeline.wait(scheduled.id)
    assert second["state"] == "succeeded"
    # Admission is reused (only verification changed); its facts go in again, beside.
    assert second["units"]["admit"]["cached"] == second["units"]["admit"]["planned"]
    assert second["counts"]["ledger.facts"] == admitted
    assert _facts(url) == 2 * admitted
    assert remove_schedule(service, pipeline.app, schedule_id)

    # `groundswell reprocess --ledger` under a third version does the same.
    v3, _ = service.publish_policy({"name": "default", "verify": {"accept_through": "exact"}})
    done = groundswell(
        "reprocess", corpus, "--policy", "default@latest", "--ledger", "--json", env=env
    )
    assert done.returncode == 0, done.stderr
    third = json.loads(done.stdout)
    assert third["policy"]["ref"] == v3.ref == "default@3"
    assert third["counts"]["ledger.facts"] == admitted
    assert _facts(url) == 3 * admitted

    # The history of a fact: one entry per policy version, oldest first, each with its run.
    doc, field, key = _a_fact(url)
    with Ledger.open(url) as ledger:
        history = fact_history(ledger, doc, field, key)
    assert [(h["policy_version"], h["run_id"]) for h in history] == [
        ("default@1", base.id),
        ("default@2", scheduled.id),
        ("default@3", third["run_id"]),
    ]
    assert len({json.dumps(h["value"]) for h in history}) == 1  # admission did not move
    shown = groundswell("ledger", "history", doc, field, *([key] if key else []), env=env)
    assert shown.returncode == 0, shown.stderr
    assert all(v in shown.stdout for v in ("default@1", "default@2", "default@3"))
