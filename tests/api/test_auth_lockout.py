"""Failed authentication on a real uvicorn (issue 25, low): client addresses come from
``X-Forwarded-For`` only through a proxy named in ``forwarded_allow_ips``; failures are
limited per address and per presented key digest; failures by others never refuse the right
key; and while Redis is down failures are still limited, counted in the API process."""

from __future__ import annotations

import httpx
import pytest

from groundswell.api import session
from groundswell.shared.settings import hash_api_key
from groundswell.workers.embedded import free_port
from tests.conftest import running_api

pytestmark = pytest.mark.integration

RITA = "gs_rita_reviews_and_runs"
KEYS = f"rita:runs+review:{hash_api_key(RITA)}"


def _values(service_settings: dict, **extra) -> dict:
    return {
        **service_settings,
        "api_key_hashes": KEYS,
        "session_secret": "lockout-test-secret",
        "api_rate_failed_auth": "5/minute",
        **extra,
    }


def _get(url: str, key: str, client: str | None = None, **headers: str) -> int:
    if client is not None:
        headers["x-forwarded-for"] = client
    return httpx.get(url + "/v1/runs", headers={"X-API-Key": key, **headers}).status_code


def _sign_in(url: str, key: str, client: str) -> httpx.Response:
    return httpx.post(
        url + "/review/sign-in",
        data={"key": key, "next": "/review"},
        headers={"x-forwarded-for": client, "x-forwarded-proto": "https"},
    )


def test_a_forged_forwarded_for_does_not_escape_the_lockout(service_settings, tmp_path):
    """No proxy is trusted by default (uvicorn's own default trusts 127.0.0.1): a guesser
    naming another address in each request is still one address."""
    with running_api(_values(service_settings), tmp_path) as url:
        codes = [_get(url, f"gs_guess_{n}", f"10.9.0.{n}") for n in range(8)]
    assert codes == [403] * 5 + [429] * 3


def test_behind_a_trusted_proxy_each_client_is_limited_alone(service_settings, tmp_path):
    values = _values(service_settings, forwarded_allow_ips="127.0.0.1")
    with running_api(values, tmp_path) as url:
        # One client's failures lock that client, not the others behind the same proxy.
        assert [_get(url, f"gs_guess_{n}", "10.0.0.1") for n in range(7)] == [403] * 5 + [429] * 2
        assert _get(url, "gs_guess_other", "10.0.0.2") == 403
        assert _get(url, RITA, "10.0.0.2") == 200
        # The right key is never refused for failures: not the locked client's either (a key
        # is 256 random bits; the limit bounds the load of guessing, it must not let others'
        # failures lock a reviewer out).
        assert _get(url, RITA, "10.0.0.1") == 200
        signed = _sign_in(url, RITA, "10.0.0.1")
        assert signed.status_code == 303
        # The proxy said https: the cookie is Secure.
        assert "secure" in signed.headers["set-cookie"].lower()
        assert _sign_in(url, "gs_guess_again", "10.0.0.1").status_code == 429
        # One key tried from many addresses is limited too (per presented key digest).
        spread = [_get(url, "gs_one_stolen_key", f"10.1.0.{n}") for n in range(7)]
        assert spread == [403] * 5 + [429] * 2
        assert _get(url, RITA, "10.1.0.9") == 200


def test_failures_are_limited_while_redis_is_down(service_settings, tmp_path):
    """Rate limits count in Redis; unreachable, each API process counts them itself, so
    guessing is no cheaper during an outage."""
    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    values = _values(service_settings, broker_url=nowhere, redis_url=nowhere)
    with running_api(values, tmp_path) as url:
        codes = [_get(url, f"gs_guess_{n}") for n in range(7)]
        signed = [_sign_in(url, f"gs_form_{n}", "10.0.0.1").status_code for n in range(2)]
        cookie = httpx.get(url + "/v1/runs", cookies={session.COOKIE: "forged"}).status_code
        # The right key is let in, but no session can be recorded: said, not a 500.
        unrecorded = _sign_in(url, RITA, "10.0.0.1")
    assert codes == [403] * 5 + [429] * 2
    assert signed == [429, 429] and cookie == 429
    assert unrecorded.status_code == 503 and "set-cookie" not in unrecorded.headers
    assert "retry" in unrecorded.json()["detail"]
