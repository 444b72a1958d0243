"""Named API keys with scopes on a real uvicorn: a digest alone still opens every route, and
a key without a route's scope gets a 403 naming the key, its scopes and the scope needed."""

from __future__ import annotations

import httpx
import pytest

from groundswell.shared.settings import hash_api_key
from tests.conftest import API_KEY, running_api

pytestmark = pytest.mark.integration

REVIEWER, RUNNER = "gs_reviewer_only", "gs_runs_only"


@pytest.fixture
def keyed_api(service_settings, tmp_path):
    entries = [
        hash_api_key(API_KEY),
        f"rita:review:{hash_api_key(REVIEWER)}",
        f"ops:runs:{hash_api_key(RUNNER)}",
    ]
    with running_api({**service_settings, "api_key_hashes": ",".join(entries)}, tmp_path) as url:
        yield url


def _get(url: str, key: str, path: str) -> httpx.Response:
    return httpx.get(url + path, headers={"X-API-Key": key}, timeout=30)


def test_scopes_refuse_what_a_key_may_not_do(keyed_api):
    policy = {"name": "scoped", "base": "default", "description": "x"}
    # The old form (a digest alone) may do everything, as before.
    assert _get(keyed_api, API_KEY, "/v1/runs").status_code == 200
    # A review-only key reads no runs.
    refused = _get(keyed_api, REVIEWER, "/v1/runs")
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "the API key 'rita' has the scopes review; this route needs the scope 'runs' (or admin)"
    )
    assert _get(keyed_api, REVIEWER, "/v1/policies").status_code == 403
    # A runs key reads runs and policies but publishes nothing.
    assert _get(keyed_api, RUNNER, "/v1/runs").status_code == 200
    assert _get(keyed_api, RUNNER, "/v1/policies").status_code == 200
    publish = httpx.post(
        keyed_api + "/v1/policies", json=policy, headers={"X-API-Key": RUNNER}, timeout=30
    )
    assert publish.status_code == 403 and "needs the scope 'admin'" in publish.json()["detail"]
    # A wrong key is still "invalid", not a scope problem.
    wrong = _get(keyed_api, "gs_nobody", "/v1/runs")
    assert wrong.status_code == 403 and wrong.json()["detail"] == "invalid API key"
