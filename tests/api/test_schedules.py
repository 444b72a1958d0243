"""Schedules over HTTP (real uvicorn, real Redis): what is refused before anything is stored,
and a list that survives one unreadable record (issue 25)."""

from __future__ import annotations

import json

import pytest
import redis

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.schedules import PREFIX

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
