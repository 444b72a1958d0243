"""The HTTP API on a real uvicorn: keys, runs, summaries, receipts, errors, metrics."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time

import httpx
import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.models import TERMINAL_STATES

pytestmark = pytest.mark.integration


def test_every_route_but_health_needs_a_valid_key(api_url):
    for path in ("/v1/runs", "/v1/runs/x", "/v1/runs/x/summary", "/v1/runs/x/receipts"):
        missing = httpx.get(api_url + path)
        assert missing.status_code == 401, path
        assert "X-API-Key" in missing.json()["detail"]
        wrong = httpx.get(api_url + path, headers={"X-API-Key": "not-the-key"})
        assert wrong.status_code == 403, path
    assert httpx.post(api_url + "/v1/runs", json={"corpus": "x"}).status_code == 401
    assert httpx.get(api_url + "/healthz").json() == {"status": "ok", "checks": {}}


def test_invalid_requests_say_what_is_wrong(client):
    empty = client.post("/v1/runs", json={"corpus": "  "})
    assert empty.status_code == 422
    assert "corpus" in empty.json()["detail"]
    policy = client.post("/v1/runs", json={"corpus": "/tmp/x", "policy": "nope@1"})
    assert policy.status_code == 422 and "unknown policy 'nope'" in policy.json()["detail"]
    bad_ref = client.post("/v1/runs", json={"corpus": "/tmp/x", "policy": "Default@x"})
    assert bad_ref.status_code == 422 and "policy" in bad_ref.json()["detail"]
    scheme = client.post("/v1/runs", json={"corpus": "gs://bucket/x"})
    assert scheme.status_code == 422 and "s3://" in scheme.json()["detail"]
    assert client.get("/v1/runs/nope").status_code == 404
    assert client.get("/v1/runs", params={"limit": 0}).status_code == 422
    assert client.get("/v1/runs/nope/receipts").status_code == 404
    # --changed by a corpus key that names no file: refused, saying which.
    unlisted = client.post(
        "/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "changed": "changes/nope.txt"}
    )
    assert unlisted.status_code == 422
    assert "changes/nope.txt: the list of changed keys" in unlisted.json()["detail"]
    shape = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "changed": 3})
    assert shape.status_code == 422 and "changed" in shape.text
    fmt = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS), "format": "langextrakt"})
    assert fmt.status_code == 422 and "format" in fmt.text and "langextract" in fmt.text


def test_a_run_reads_producer_files_in_place_by_its_format(client, pipeline, tmp_path):
    pipeline.start_worker("w1")
    corpus = tmp_path / "lx"
    corpus.mkdir()
    text = "Net sales were $4.2 billion."
    x = {"extraction_class": "sales", "extraction_text": "$4.2 billion",
         "char_interval": {"start_pos": 15, "end_pos": 27}, "alignment_status": "match_exact"}  # fmt: skip
    (corpus / "run.jsonl").write_text(
        json.dumps({"document_id": "a", "text": text, "extractions": [x]}) + "\n"
    )
    (corpus / "schema.json").write_text('{"fields": {"sales": {"type": "string"}}}')
    created = client.post("/v1/runs", json={"corpus": str(corpus), "format": "langextract"})
    assert created.status_code == 202, created.text
    assert created.json()["format"] == "langextract"
    run_id = created.json()["id"]
    summary = pipeline.wait(run_id)
    assert summary["state"] == "succeeded", summary
    assert summary["counts"]["claims.accepted"] == 1
    assert summary["units"]["admit"]["computed"] == 1


def test_run_round_trip(client, pipeline):
    pipeline.start_worker("w1")
    pipeline.start_worker("w2")
    body = {"corpus": str(SAMPLE_CORPUS), "policy": "default"}
    created = client.post("/v1/runs", json=body, headers={"Idempotency-Key": "k-1"})
    assert created.status_code == 202
    run = created.json()
    assert created.headers["Location"] == f"/v1/runs/{run['id']}"
    assert run["policy"]["ref"] == "default@1" and run["state"] in ("queued", "planning", "running")

    replay = client.post("/v1/runs", json=body, headers={"Idempotency-Key": "k-1"})
    assert replay.status_code == 202 and replay.json()["id"] == run["id"]
    assert replay.headers["Idempotent-Replayed"] == "true"
    conflict = client.post(
        "/v1/runs", json={**body, "policy": "strict"}, headers={"Idempotency-Key": "k-1"}
    )
    assert conflict.status_code == 409

    early = client.get(f"/v1/runs/{run['id']}/summary")
    assert early.status_code in (200, 409)

    deadline = time.monotonic() + 120
    while True:
        state = client.get(created.headers["Location"]).json()
        if state["state"] in TERMINAL_STATES:  # not finalizing: its summary is on the way
            break
        assert time.monotonic() < deadline, state
        pipeline.service.reconcile()
        time.sleep(0.2)
    progress = state["progress"]
    assert progress["planning_done"] and progress["done"] == progress["planned"] > 0
    assert progress["fraction"] == 1.0

    summary = client.get(f"/v1/runs/{run['id']}/summary").json()
    assert summary["run_id"] == run["id"] and summary["counts"]["claims"] > 0
    assert summary["index"]["units"] == progress["planned"]

    listed = client.get("/v1/runs", params={"limit": 1}).json()
    assert listed["pagination"]["total_count"] == 1 and listed["items"][0]["id"] == run["id"]

    units, cursor = [], None
    while True:
        page = client.get(
            f"/v1/runs/{run['id']}/receipts",
            params={"limit": 5, **({"cursor": cursor} if cursor else {})},
        ).json()
        units += [item["unit"] for item in page["items"]]
        cursor = page["next_cursor"]
        if not page["has_next_page"]:
            break
    assert len(units) == len(set(units)) == progress["planned"]
    keys = [tuple(reversed(unit.split("/", 1))) for unit in units]
    assert keys == sorted(keys)  # a finished run lists by (doc_id, kind)

    doc_id = units[0].split("/", 1)[1]
    receipts = client.get(f"/v1/runs/{run['id']}/documents/{doc_id}/receipts").json()
    assert receipts["doc_id"] == doc_id and set(receipts["units"]) <= {"verify", "admit"}
    verify = receipts["verify"]
    assert verify["kind"] == "verify" and verify["records"][0]["certificate"]["verdict"]
    assert client.get(f"/v1/runs/{run['id']}/documents/no-such-doc/receipts").status_code == 404

    report = client.get(f"/v1/runs/{run['id']}/report", params={"documents": 3})
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert report.text.count("<h3 id=") == 3 and '<mark class="v-grounded">' in report.text

    metrics = client.get("/metrics").text
    assert 'groundswell_http_requests_total{method="POST",route="/v1/runs",status="202"}' in metrics
    assert 'groundswell_queue_length{queue="verify"}' in metrics
    assert client.get("/readyz").json()["checks"] == {"redis": "ok", "storage": "ok"}


def test_a_folder_is_one_corpus_however_it_is_named_and_a_missing_one_says_so(
    client, pipeline, tmp_path
):
    pipeline.start_worker("w1")
    corpus = tmp_path / "corpus"  # under /tmp, an allowed corpus
    doc = "brightwater-10q-q3-2025"
    for kind, suffix in (("documents", "txt"), ("claims", "jsonl")):
        (corpus / kind).mkdir(parents=True)
        shutil.copy(SAMPLE_CORPUS / kind / f"{doc}.{suffix}", corpus / kind)
    # The API reads a relative folder from its own working directory: the tests' here.
    relative = os.path.relpath(corpus)
    runs = []
    for name in (str(corpus), relative, f"{relative}/./", f"file://{corpus}"):
        created = client.post("/v1/runs", json={"corpus": name})
        assert created.status_code == 202, created.text
        runs.append(created.json())
        assert pipeline.wait(runs[-1]["id"])["state"] == "succeeded"
    assert {run["corpus"] for run in runs} == {str(corpus)}
    for earlier, later in itertools.pairwise(runs):
        record = pipeline.service.get(later["id"])
        assert record.previous_run == earlier["id"], (later, earlier)
    nowhere = client.post("/v1/runs", json={"corpus": str(tmp_path / "nowhere")})
    assert nowhere.status_code == 202, nowhere.text
    summary = pipeline.wait(nowhere.json()["id"])
    assert summary["state"] == "failed"
    assert summary["error"] == f"corpus folder {tmp_path / 'nowhere'} does not exist"


def test_a_cancelled_run_stays_cancelled(client, pipeline):
    # No worker yet: the run is queued; cancelling it ends it, and workers then skip its tasks.
    run = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}).json()
    cancelled = client.post(f"/v1/runs/{run['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    pipeline.start_worker("w1")
    time.sleep(3)  # the plan task is consumed and does nothing
    state = client.get(f"/v1/runs/{run['id']}").json()
    assert state["state"] == "cancelled" and state["progress"]["planned"] == 0
    summary = client.get(f"/v1/runs/{run['id']}/summary")
    assert summary.status_code == 409 and "was cancelled" in summary.json()["detail"]
    assert client.post(f"/v1/runs/{run['id']}/cancel").status_code == 200  # already: the same
    assert client.post("/v1/runs/nope/cancel").status_code == 404


def test_one_unreadable_run_record_hides_no_other_run(client, service_settings):
    import time

    import redis

    from tests.api.test_schedules import _metric, bad_records_reach

    good = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)})
    assert good.status_code == 202, good.text
    r = redis.Redis.from_url(service_settings["broker_url"])
    r.hset("gs:run:r-unreadable", "record", "{not a run")
    r.zadd("gs:runs", {"r-unreadable": time.time() + 60})  # the newest
    before = _metric(client, "groundswell_bad_records_total", collection="runs")
    listed = client.get("/v1/runs")
    assert listed.status_code == 200, listed.text
    assert [run["id"] for run in listed.json()["items"]] == [good.json()["id"]]
    bad_records_reach(client, "runs", before + 1)


def test_a_run_whose_record_cannot_be_read_is_a_409_where_it_is_named(
    client, service_settings, tmp_path
):
    """Every route that takes the run answers 409 and says why, counted once a request in
    groundswell_bad_records_total{collection="runs"}; whether the record is in Redis or
    only in storage (Redis lost it), and with no harm to the other runs."""
    from pathlib import Path

    import redis

    from tests.api.test_schedules import _metric, bad_records_reach

    good = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)})
    assert good.status_code == 202, good.text
    in_redis, in_storage = "20261201T000000Z-bad0001", "20261201T000000Z-bad0002"
    redis.Redis.from_url(service_settings["broker_url"]).hset(
        f"gs:run:{in_redis}", "record", "{not a run"
    )
    stored = Path(str(service_settings["storage_url"])) / "runs" / in_storage / "run.json"
    stored.parent.mkdir(parents=True)
    stored.write_text(f'{{"id": "{in_storage}", "state": 7}}', encoding="utf-8")
    routes = [
        ("GET", "/v1/runs/{id}"),
        ("GET", "/v1/runs/{id}/summary"),
        ("GET", "/v1/runs/{id}/report"),
        ("GET", "/v1/runs/{id}/receipts"),
        ("GET", "/v1/runs/{id}/documents/d1/receipts"),
        ("GET", "/v1/runs/{id}/diff/" + good.json()["id"]),
        ("GET", "/v1/runs/" + good.json()["id"] + "/diff/{id}"),
        ("POST", "/v1/runs/{id}/cancel"),
        ("GET", "/v1/runs/{id}/review/measures"),
        ("GET", "/v1/review/tasks?run={id}"),
    ]
    before = _metric(client, "groundswell_bad_records_total", collection="runs")
    for run_id in (in_redis, in_storage):
        for method, path in routes:
            answer = client.request(method, path.format(id=run_id))
            assert answer.status_code == 409, (method, path, answer.status_code, answer.text)
            detail = answer.json()["detail"]
            assert detail.startswith(f"run {run_id}'s record cannot be read: "), detail
    bad_records_reach(client, "runs", before + 2 * len(routes))
    assert client.get(f"/v1/runs/{good.json()['id']}").status_code == 200
    # A team's key cannot be told whose run it is: 404, as for another team's run.
    from groundswell.shared.settings import hash_api_key
    from tests.conftest import API_KEY, running_api

    team = "gs_a_key_of_one_team"
    hashes = f"{hash_api_key(API_KEY)},t:runs+review:{hash_api_key(team)}:{SAMPLE_CORPUS}"
    values = {**service_settings, "api_key_hashes": hashes, "allowed_corpora": str(SAMPLE_CORPUS)}
    with running_api(values, tmp_path) as url, httpx.Client(base_url=url) as other:
        for run_id in (in_redis, in_storage):
            answer = other.get(f"/v1/runs/{run_id}", headers={"X-API-Key": team})
            assert answer.status_code == 404, answer.text
        assert other.get(f"/v1/runs/{good.json()['id']}", headers={"X-API-Key": team}).is_success
