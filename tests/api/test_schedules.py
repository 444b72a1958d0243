"""Schedules over HTTP (real uvicorn, real Redis): what is refused before anything is stored,
and a list that survives one unreadable record (issue 25)."""

from __future__ import annotations

import json

import httpx
import pytest
import redis

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.schedules import PREFIX
from tests.conftest import Pipeline, wait_until

pytestmark = pytest.mark.integration

RECORDS = PREFIX + "s"


def _stored(redis_url: str) -> tuple[int, list[bytes]]:
    """The schedule records and the beat entries of schedules in Redis."""
    r = redis.Redis.from_url(redis_url)
    return r.hlen(RECORDS), sorted(r.scan_iter("gs:redbeat:schedule-*"))


@pytest.mark.parametrize(
    "every",
    ["Infinity", "-Infinity", "NaN", "1e308", "1e20", "-60", "0", "31622401", '"soon"'],
)
def test_an_interval_that_is_not_finite_and_bounded_is_refused_before_it_is_stored(
    client, service_settings, every
):
    body = f'{{"corpus": {json.dumps(str(SAMPLE_CORPUS))}, "every_seconds": {every}}}'
    refused = client.post(
        "/v1/schedules", content=body, headers={"Content-Type": "application/json"}
    )
    assert refused.status_code == 422, (every, refused.text)
    assert "every_seconds" in refused.text
    assert _stored(service_settings["broker_url"]) == (0, [])


def test_the_record_and_its_beat_entry_are_stored_together(client, service_settings):
    created = client.post(
        "/v1/schedules", json={"corpus": str(SAMPLE_CORPUS), "every_seconds": 3600}
    )
    assert created.status_code == 201, created.text
    schedule_id = created.json()["id"]
    count, entries = _stored(service_settings["broker_url"])
    assert count == 1 and entries == [f"gs:redbeat:schedule-{schedule_id}".encode()]
    assert client.delete(f"/v1/schedules/{schedule_id}").status_code == 204
    assert _stored(service_settings["broker_url"]) == (0, [])


# What the old code stored for `"every_seconds": Infinity` (the JSON of an infinite float is
# null, so neither interval nor cron), and a record that is not even JSON.
OLD_BAD_RECORD = {
    "id": "s-0badf00d",
    "corpus": str(SAMPLE_CORPUS),
    "policy": "default@latest",
    "every_seconds": None,
    "cron": None,
    "only": "missing",
    "ledger": False,
    "created_at": "2026-11-30T10:00:00Z",
    "last_fired_at": None,
    "last_run_id": None,
    "runs": 0,
}


def _metric(client, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def bad_records_reach(client, collection: str, value: float) -> None:
    """Wait for groundswell_bad_records_total{collection} to read ``value`` (/metrics is
    cached for a second)."""
    wait_until(
        lambda: _metric(client, "groundswell_bad_records_total", collection=collection) == value,
        timeout=15,
        what=f"groundswell_bad_records_total{{collection={collection!r}}} == {value}",
    )


@pytest.fixture
def control_worker(service_settings, tmp_path):
    """A control worker on the API's own settings: its store (the policy registry) and its
    allow-list (a schedule added through the API is checked against it when it fires)."""
    workers = Pipeline({**service_settings, "allowed_corpora": f"{SAMPLE_CORPUS},/tmp"}, tmp_path)
    workers.start_worker("control", queues="control")
    yield workers
    workers.stop()


def test_one_unreadable_schedule_breaks_no_reader_and_can_be_removed(
    client, control_worker, service_settings
):
    good = client.post("/v1/schedules", json={"corpus": str(SAMPLE_CORPUS), "cron": "0 3 * * *"})
    assert good.status_code == 201, good.text
    good_id = good.json()["id"]
    r = redis.Redis.from_url(service_settings["broker_url"])
    r.hset(RECORDS, OLD_BAD_RECORD["id"], json.dumps(OLD_BAD_RECORD))
    r.hset(RECORDS, "s-notjson", b"\xff{not json")
    before = _metric(client, "groundswell_bad_records_total", collection="schedules")

    listed = client.get("/v1/schedules")
    assert listed.status_code == 200, listed.text
    assert [s["id"] for s in listed.json()["items"]] == [good_id]
    unreadable = {u["id"]: u["error"] for u in listed.json()["unreadable"]}
    assert set(unreadable) == {"s-0badf00d", "s-notjson"}
    assert "exactly one of every_seconds" in unreadable["s-0badf00d"]
    bad_records_reach(client, "schedules", before + 2)
    one = client.get("/v1/schedules/s-0badf00d")
    assert one.status_code == 409 and "DELETE /v1/schedules/s-0badf00d" in one.json()["detail"]

    # Publishing a version: stored once (201), and the readable schedule that follows
    # default@latest fires under it.
    published = client.post("/v1/policies", json={"name": "default", "description": "v2"})
    assert published.status_code == 201, published.text
    fired = wait_until(
        lambda: client.get(f"/v1/schedules/{good_id}").json()["last_run_id"],
        timeout=120,
        what="the readable schedule to fire on publish",
    )
    run = client.get(f"/v1/runs/{fired}").json()
    assert run["policy"]["ref"] == "default@2" and run["schedule"] == good_id

    for bad in ("s-0badf00d", "s-notjson"):
        assert client.delete(f"/v1/schedules/{bad}").status_code == 204
    assert client.get("/v1/schedules").json() == {
        "items": [client.get(f"/v1/schedules/{good_id}").json()],
        "unreadable": [],
    }


def test_schedules_are_bounded_rate_limited_and_record_their_key(service_settings, tmp_path):
    from groundswell.shared.settings import hash_api_key
    from tests.conftest import running_api

    keys = {"alice": "gs_test_alice_key_0001", "bob": "gs_test_bob_key_00002"}
    values = {
        **service_settings,
        "api_key_hashes": ",".join(f"{n}:runs:{hash_api_key(k)}" for n, k in keys.items()),
        "allowed_corpora": str(SAMPLE_CORPUS),
        "max_schedules": 3,
        "max_schedules_per_key": 2,
        "api_rate_runs": "4/minute",
    }
    body = {"corpus": str(SAMPLE_CORPUS), "every_seconds": 3600}
    with running_api(values, tmp_path) as url:
        alice = httpx.Client(base_url=url, headers={"X-API-Key": keys["alice"]}, timeout=30)
        bob = httpx.Client(base_url=url, headers={"X-API-Key": keys["bob"]}, timeout=30)
        first = [alice.post("/v1/schedules", json=body) for _ in range(3)]
        assert [r.status_code for r in first] == [201, 201, 409], first[-1].text
        assert "GROUNDSWELL_MAX_SCHEDULES_PER_KEY" in first[-1].json()["detail"]
        assert {r.json()["created_by"] for r in first[:2]} == {"alice"}
        assert bob.post("/v1/schedules", json=body).status_code == 201
        full = bob.post("/v1/schedules", json=body)
        assert full.status_code == 409 and "GROUNDSWELL_MAX_SCHEDULES)" in full.json()["detail"]
        # Schedule creation counts against API_RATE_RUNS like run submissions (4/minute).
        assert alice.post("/v1/schedules", json=body).status_code == 409  # the 4th: counted
        limited = alice.post("/v1/schedules", json=body)
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert alice.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}).status_code == 429
        listed = bob.get("/v1/schedules").json()["items"]
        assert sorted(s["created_by"] for s in listed) == ["alice", "alice", "bob"]
        assert _stored(service_settings["broker_url"])[0] == 3
