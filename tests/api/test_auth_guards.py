"""The low auth and API findings of issue 25, in process (FastAPI's TestClient over a real
Redis): sign-in from an opaque origin, the session cookie's Secure flag and ``__Host-``
name, ``Cache-Control: no-store``, what ``/readyz`` tells a caller without a key, and the
cost bound of ``/metrics``. The findings that need a real uvicorn (client addresses behind
a proxy, a Redis that is down) are in tests/api/test_auth_lockout.py."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.shared.settings import Settings, hash_api_key

pytestmark = pytest.mark.integration

RITA, OPS, ROOT = "gs_rita_reviews_and_runs", "gs_ops_runs_only", "gs_root_admin"
KEYS = [
    f"rita:runs+review:{hash_api_key(RITA)}",
    f"ops:runs:{hash_api_key(OPS)}",
    f"root:admin:{hash_api_key(ROOT)}",
]


def _settings(service_settings: dict, **extra) -> Settings:
    return Settings(
        **{
            **service_settings,
            "api_key_hashes": ",".join(KEYS),
            "session_secret": "auth-guards-secret",
            **extra,
        }
    )


@pytest.fixture
def settings(service_settings) -> Settings:
    return _settings(service_settings)


def _client(settings: Settings) -> TestClient:
    return TestClient(create_app(settings), follow_redirects=False)


def _sign_in(client: TestClient, key: str = RITA, **headers: str):
    return client.post("/review/sign-in", data={"key": key, "next": "/review"}, headers=headers)


def test_sign_in_from_an_opaque_origin_needs_the_browser_to_say_where_it_came_from(settings):
    """``Origin: null`` is what this page's own form sends (no-referrer) and what a page of
    another site sends from a sandboxed frame or a data: URL: without Sec-Fetch-Site nothing
    tells them apart, so it is refused. Clients without Origin (curl, scripts) still sign in."""
    client = _client(settings)
    bare = _sign_in(client, origin="null")
    assert bare.status_code == 403 and "set-cookie" not in bare.headers
    assert "another site" in bare.json()["detail"]
    assert _sign_in(client, origin="null", **{"sec-fetch-site": "same-origin"}).status_code == 303
    assert _sign_in(client).status_code == 303
    assert _sign_in(client, origin="http://testserver").status_code == 303
