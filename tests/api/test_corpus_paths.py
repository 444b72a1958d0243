"""A corpus is read where the API checked it (issue 25, item 6). A relative corpus was checked
against the API's working directory but stored as given, and a worker (another working
directory) resolved it to a folder outside every allowed root. The API now stores the
absolute path it checked and the allowed root it lies under; the plan task checks again
before it lists, and a corpus no longer there fails the run (never a retry). ``..`` segments
of an s3:// corpus are refused (MinIO and SeaweedFS normalize them away).

The API in process (FastAPI's TestClient) over a real Redis; the plan task's own code run
here from the worker's working directory, as a worker process runs it."""

from __future__ import annotations

import shutil

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.service import RunService
from groundswell.shared.runs.state import RunStore, redis_client
from groundswell.shared.settings import Settings, hash_api_key

pytestmark = pytest.mark.integration

KEY = "gs_corpus_paths_key"


@pytest.fixture
def layout(redis_server, tmp_path, monkeypatch):
    """The API's working directory with an allowed folder holding ``corpus``; the worker's,
    where the same relative path names a folder outside every allowed root."""
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    api_cwd, worker_cwd = tmp_path / "api", tmp_path / "worker"
    shutil.copytree(SAMPLE_CORPUS, api_cwd / "allowed" / "corpus")
    outside = worker_cwd / "allowed" / "corpus"
    shutil.copytree(SAMPLE_CORPUS, outside)
    (outside / "documents" / "secret.txt").write_text("the worker's own private file")
    (outside / "claims" / "secret.jsonl").write_text('{"id": "s", "claim": "private"}\n')
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        api_key_hashes=hash_api_key(KEY),
        allowed_corpora=f"{api_cwd / 'allowed'},s3://data/allowed",
    )
    monkeypatch.chdir(api_cwd)
    with TestClient(create_app(settings), headers={"X-API-Key": KEY}) as client:
        yield settings, client, api_cwd, worker_cwd


def _worker(settings: Settings) -> RunService:
    """The service a worker has: its own settings (no allow-list of its own here)."""
    worker = settings.model_copy(update={"allowed_corpora": []})
    return RunService(worker, RunStore(redis_client(worker.state_redis_url)), lambda *_: None)


def test_a_relative_corpus_is_stored_as_the_absolute_path_the_api_checked(layout, monkeypatch):
    settings, client, api_cwd, worker_cwd = layout
    created = client.post("/v1/runs", json={"corpus": "allowed/corpus"})
    assert created.status_code == 202, created.text
    checked = str((api_cwd / "allowed" / "corpus").resolve())
    assert created.json()["corpus"] == checked
    schedule = client.post(
        "/v1/schedules", json={"corpus": "allowed/corpus", "every_seconds": 3600}
    )
    assert schedule.status_code == 201, schedule.text
    assert schedule.json()["corpus"] == checked
    monkeypatch.chdir(worker_cwd)
    worker = _worker(settings)
    run = created.json()["id"]
    assert worker.get(run).corpus == checked
    worker.plan(run)
    planned = worker.runs.plan_state(run)
    assert worker.get(run).state != "failed" and planned.step >= 1
    listed = [i.key for p in worker.store(checked).list_pages("documents/") for i in p]
    assert "documents/secret.txt" not in listed  # the API's corpus, not the worker's folder


def test_a_corpus_that_left_its_allowed_root_fails_the_run_in_the_plan_task(layout):
    """Checked by the API, then replaced by a link out of the allowed folder before a worker
    plans it: the plan task fails the run saying why, and lists nothing."""
    settings, client, api_cwd, worker_cwd = layout
    run = client.post("/v1/runs", json={"corpus": "allowed/corpus"}).json()["id"]
    corpus = api_cwd / "allowed" / "corpus"
    shutil.rmtree(corpus)
    corpus.symlink_to(worker_cwd / "allowed" / "corpus")
    worker = _worker(settings)
    assert worker.plan(run) is True  # done with it: not left to be retried
    record = worker.get(run)
    assert record.state == "failed", record
    assert "GROUNDSWELL_ALLOWED_CORPORA" in (record.error or "")
    assert str(api_cwd / "allowed") in (record.error or "")
    assert worker.runs.plan_state(run).step == 0  # nothing was listed


@pytest.mark.parametrize(
    "corpus",
    ["s3://data/allowed/../other", "s3://data/allowed/..", "s3://data/./allowed/x", "s3://data/.."],
)
def test_dot_segments_of_an_s3_corpus_are_refused(layout, corpus):
    _, client, _, _ = layout
    refused = client.post("/v1/runs", json={"corpus": corpus})
    assert refused.status_code == 422, refused.text
    assert "corpus" in refused.json()["detail"] and "'..'" in refused.json()["detail"]
