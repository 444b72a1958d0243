"""The low auth and API findings of issue 25, in process (FastAPI's TestClient over a real
Redis): sign-in from an opaque origin, the session cookie's Secure flag and ``__Host-``
name, ``Cache-Control: no-store``, what ``/readyz`` tells a caller without a key, and the
cost bound of ``/metrics``. The findings that need a real uvicorn (client addresses behind
a proxy, a Redis that is down) are in tests/api/test_auth_lockout.py."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from groundswell.api import session
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


def _flags(cookie: str) -> set[str]:
    return {part.strip().lower() for part in cookie.split(";")[1:]}


def test_the_session_cookie_can_be_forced_secure_with_the_host_prefix(service_settings):
    """Behind a proxy that ends TLS the app sees http: ``session_cookie_secure`` marks the
    cookie Secure anyway and names it ``__Host-gs_session`` (Secure, Path=/, no Domain: no
    other host, a sibling subdomain included, can set or shadow it). Only that name is read."""
    plain = _client(_settings(service_settings))
    cookie = _sign_in(plain).headers["set-cookie"]
    assert cookie.startswith(f"{session.COOKIE}=") and "secure" not in _flags(cookie)

    forced = _settings(service_settings, session_cookie_secure=True)
    client = _client(forced)
    done = _sign_in(client)
    cookie = done.headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    assert name == "__Host-gs_session" == session.cookie_name(forced)
    assert {"secure", "httponly", "path=/", "samesite=strict"} <= _flags(cookie)
    assert not any(flag.startswith("domain") for flag in _flags(cookie))
    value = rest.split(";")[0]
    fresh = _client(forced)  # the cookie as a browser sends it back over https
    assert fresh.get("/v1/runs", headers={"cookie": f"{name}={value}"}).status_code == 200
    assert fresh.get("/review", headers={"cookie": f"{name}={value}"}).status_code == 200
    # The plain name is not read: a cookie set by a sibling host signs in nobody.
    unprefixed = fresh.get("/v1/runs", headers={"cookie": f"{session.COOKIE}={value}"})
    assert unprefixed.status_code == 401
    token = session.csrf_token(forced, value)
    out = fresh.post(
        "/review/sign-out", data={"csrf": token}, headers={"cookie": f"{name}={value}"}
    )
    assert out.status_code == 303 and out.headers["set-cookie"].startswith(f'{name}=""')
    assert "secure" in _flags(out.headers["set-cookie"])


def test_signed_in_pages_and_json_are_not_stored(settings):
    """``Cache-Control: no-store`` on what a key or a session reads (a shared cache or the
    browser's history must not keep a reviewer's queue or a run's receipts)."""
    client = _client(settings)
    assert client.get("/review/sign-in").headers["cache-control"] == "no-store"
    _sign_in(client)
    for path in ("/review", "/v1/runs", "/v1/policies"):
        got = client.get(path)
        assert got.status_code == 200, (path, got.text)
        assert got.headers["cache-control"] == "no-store", path
    keyed = client.get("/v1/runs", headers={"X-API-Key": OPS}, cookies={})
    assert keyed.headers["cache-control"] == "no-store"
    refused = _client(settings).get("/v1/runs", headers={"X-API-Key": "gs_wrong"})
    assert refused.status_code == 403 and refused.headers["cache-control"] == "no-store"


def test_readyz_tells_only_an_admin_key_what_is_wrong(service_settings):
    """A load balancer needs ready or not; the checks' errors name internal hosts and ports,
    so only an admin key reads them. A wrong key is refused (and counted) as anywhere."""
    from groundswell.workers.embedded import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    values = {"storage_url": "s3://nowhere/out", "s3_endpoint_url": dead, "s3_max_attempts": 1}
    client = _client(_settings(service_settings, **values))
    for headers in ({}, {"X-API-Key": OPS}, {"X-API-Key": RITA}):
        anonymous = client.get("/readyz", headers=headers)
        assert anonymous.status_code == 503, headers
        assert anonymous.json() == {"status": "unavailable", "checks": {}}, headers
    admin = client.get("/readyz", headers={"X-API-Key": ROOT})
    assert admin.status_code == 503
    checks = admin.json()["checks"]
    assert checks["redis"] == "ok" and dead.removeprefix("http://") in checks["storage"]
    assert client.get("/readyz", headers={"X-API-Key": "gs_wrong"}).status_code == 403
    ready = _client(_settings(service_settings)).get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ok", "checks": {}}


def test_metrics_cost_one_scrape_a_second_however_often_they_are_read(settings, monkeypatch):
    """``/metrics`` needs no key and reads Redis and every collector: scrapes within
    ``metrics_cache_seconds`` get the same answer, made once."""
    from groundswell.api.routes import metrics

    made = []

    def counted(registry):
        made.append(registry)
        return b"# scrape %d\n" % len(made)

    monkeypatch.setattr(metrics, "generate_latest", counted)
    monkeypatch.setattr(metrics, "_scraped", (float("-inf"), b""), raising=False)
    cached = _client(settings.model_copy(update={"metrics_cache_seconds": 3600}))
    bodies = {cached.get("/metrics").content for _ in range(20)}
    assert bodies == {b"# scrape 1\n"} and len(made) == 1
    uncached = _client(settings.model_copy(update={"metrics_cache_seconds": 0}))
    assert [uncached.get("/metrics").content for _ in range(3)] == [
        b"# scrape 2\n",
        b"# scrape 3\n",
        b"# scrape 4\n",
    ]
    assert Settings().metrics_cache_seconds == 1
