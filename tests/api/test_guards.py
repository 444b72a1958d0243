"""What the API refuses: corpora it may not read, oversized bodies, floods, huge numbers,
keys in URLs, schedules that fire too often, patterns that backtrack without end."""

from __future__ import annotations

import time

import httpx
import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.settings import hash_api_key
from tests.conftest import API_KEY, running_api

pytestmark = pytest.mark.integration


def test_corpora_outside_the_allowed_roots_are_refused(client, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "to-etc").symlink_to("/etc")
    # Up from an allowed folder to the root and down to /etc: outside every allowed root
    # wherever the repository is cloned (a fixed number of '..' stays under /tmp when the
    # clone is there, which the fixture allows).
    climb = "/".join([".."] * len(SAMPLE_CORPUS.parts))
    for corpus in (
        "/etc",
        "file:///etc",
        "/proc/self",
        f"{SAMPLE_CORPUS}/{climb}/etc",
        f"{tmp_path}/{climb}/etc",
        "s3://someone-elses-bucket/data",
        str(allowed / "to-etc"),  # a link inside an allowed folder that leads out of it
    ):
        refused = client.post("/v1/runs", json={"corpus": corpus})
        assert refused.status_code == 403, (corpus, refused.text)
        assert "GROUNDSWELL_ALLOWED_CORPORA" in refused.json()["detail"]
    schedule = client.post("/v1/schedules", json={"corpus": "/etc", "every_seconds": 3600})
    assert schedule.status_code == 403
    assert client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}).status_code == 202


def test_a_fresh_api_reads_nothing_until_an_operator_allows_it(service_settings, tmp_path):
    values = {**service_settings, "api_key_hashes": hash_api_key(API_KEY)}
    with running_api(values, tmp_path) as url:
        refused = httpx.post(
            url + "/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}, headers={"X-API-Key": API_KEY}
        )
    assert refused.status_code == 403


def test_bodies_numbers_keys_in_urls_and_schedules_are_bounded(client):
    big = client.post(
        "/v1/runs",
        content=b'{"corpus": "' + b"x" * 2_000_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert big.status_code == 413 and "too large" in big.json()["detail"]

    def chunks():
        for _ in range(40):
            yield b"x" * 50_000

    chunked = client.post(
        "/v1/runs", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert chunked.status_code == 413  # no Content-Length: counted as it streams
    for page in (2**63 - 1, 10**23):
        too_far = client.get("/v1/runs", params={"page": page})
        assert too_far.status_code == 422, page
    in_url = httpx.get(str(client.base_url) + "/v1/runs", params={"api_key": API_KEY})
    assert in_url.status_code == 400 and "X-API-Key header" in in_url.json()["detail"]
    too_often = client.post(
        "/v1/schedules", json={"corpus": str(SAMPLE_CORPUS), "every_seconds": 0.001}
    )
    assert too_often.status_code == 422 and "MIN_SCHEDULE_SECONDS" in too_often.json()["detail"]


def test_rates_are_limited_per_key_per_address_and_for_wrong_keys(service_settings, tmp_path):
    values = {
        **service_settings,
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": str(SAMPLE_CORPUS),
        "api_rate_failed_auth": "5/minute",
        "api_rate_per_key": "20/minute",
        "api_rate_runs": "2/minute",
    }
    with running_api(values, tmp_path) as url:
        wrong = [httpx.get(url + "/v1/runs", headers={"X-API-Key": "guess"}) for _ in range(8)]
        assert [r.status_code for r in wrong[:5]] == [403] * 5
        assert all(r.status_code == 429 for r in wrong[5:])
        assert int(wrong[-1].headers["Retry-After"]) >= 1
        good = {"X-API-Key": API_KEY}
        runs = [
            httpx.post(url + "/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}, headers=good)
            for _ in range(3)
        ]
        assert [r.status_code for r in runs] == [202, 202, 429]
        reads = [httpx.get(url + "/v1/runs", headers=good).status_code for _ in range(25)]
        assert 429 in reads and reads[0] == 200
        assert httpx.get(url + "/healthz").status_code == 200  # never limited


def test_html_carries_security_headers(client, pipeline):
    pipeline.start_worker("w1")
    run = client.post("/v1/runs", json={"corpus": str(SAMPLE_CORPUS)}).json()
    deadline = time.monotonic() + 120
    while client.get(f"/v1/runs/{run['id']}").json()["state"] not in (
        "succeeded",
        "partially_failed",
    ):
        assert time.monotonic() < deadline
        pipeline.service.reconcile()
        time.sleep(0.2)
    report = client.get(f"/v1/runs/{run['id']}/report")
    assert report.status_code == 200
    assert report.headers["x-content-type-options"] == "nosniff"
    policy = report.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert client.get("/v1/runs").headers["x-content-type-options"] == "nosniff"


def test_published_marker_patterns_must_run_in_linear_time(client):
    backreference = {"name": "backreference", "verify": {"marker_pattern": r"(\w)\1"}}
    refused = client.post("/v1/policies", json=backreference)
    assert refused.status_code == 422 and "RE2" in refused.json()["detail"]
    # Catastrophic under Python's re; linear under RE2, which registry policies run.
    nested = {"name": "markers", "verify": {"marker_pattern": r"(\w+\s?)+\|"}}
    assert client.post("/v1/policies", json=nested).status_code == 201
