"""Sessions end on the server (issue 25, item 7), on a real uvicorn over a real Redis: a copied
cookie and its CSRF token answer nothing after sign-out, after `groundswell api-key
revoke-sessions NAME`, or once the key is gone from the settings."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from groundswell.api import session
from groundswell.shared.settings import Settings, hash_api_key
from groundswell.workers.embedded import service_env
from tests.conftest import running_api

pytestmark = pytest.mark.integration

RITA, SAM = "gs_rita_reviews_and_runs", "gs_sam_reviews"
TASK = "sha256:" + "0" * 64
KEYS = [f"rita:runs+review:{hash_api_key(RITA)}", f"sam:review:{hash_api_key(SAM)}"]


@pytest.fixture
def values(service_settings) -> dict:
    return {
        **service_settings,
        "api_key_hashes": ",".join(KEYS),
        "session_secret": "revocation-test-secret",
    }


def _sign_in(url: str, key: str) -> tuple[str, str]:
    """A session of ``key``: the cookie's value and its CSRF token (what a thief copies)."""
    done = httpx.post(url + "/review/sign-in", data={"key": key, "next": "/review"})
    assert done.status_code == 303, done.text
    value = done.cookies[session.COOKIE]
    page = httpx.get(url + "/review", cookies={session.COOKIE: value})
    assert page.status_code == 200
    return value, session.csrf_token(Settings(session_secret="revocation-test-secret"), value)


def _answer(url: str, value: str, token: str) -> httpx.Response:
    """A POST of an answer signed in by the copied cookie and token: 404 (no such task) while
    the session lives, 401 once it has ended."""
    return httpx.post(
        f"{url}/v1/review/tasks/{TASK}/answers",
        json={"verdict": "unsure"},
        cookies={session.COOKIE: value},
        headers={"X-CSRF-Token": token},
    )


def _revoke(values: dict, name: str) -> subprocess.CompletedProcess:
    """``groundswell api-key revoke-sessions NAME`` as an operator runs it."""
    env = {**service_env(**values), "PATH": os.environ.get("PATH", "")}
    command = [sys.executable, "-m", "groundswell", "api-key", "revoke-sessions", name]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_a_copied_cookie_answers_nothing_after_sign_out(values, tmp_path):
    with running_api(values, tmp_path) as url:
        value, token = _sign_in(url, RITA)
        other, other_token = _sign_in(url, RITA)  # the same key's other browser
        assert _answer(url, value, token).status_code == 404
        out = httpx.post(
            url + "/review/sign-out", data={"csrf": token}, cookies={session.COOKIE: value}
        )
        assert out.status_code == 303
        copied = _answer(url, value, token)
        assert copied.status_code == 401, copied.text
        assert "sign in again" in copied.json()["detail"]
        assert httpx.get(url + "/v1/runs", cookies={session.COOKIE: value}).status_code == 401
        page = httpx.get(url + "/review", cookies={session.COOKIE: value})
        assert page.status_code == 303 and page.headers["location"] == "/review/sign-in"
        # Signing out ends that session only.
        assert _answer(url, other, other_token).status_code == 404


def test_revoke_sessions_ends_every_session_of_a_key(values, tmp_path):
    with running_api(values, tmp_path) as url:
        rita = [_sign_in(url, RITA) for _ in range(3)]
        sam = _sign_in(url, SAM)
        done = _revoke(values, "rita")
        assert done.returncode == 0, done.stderr
        assert "3 sessions of the key 'rita' revoked" in done.stdout
        assert [_answer(url, *s).status_code for s in rita] == [401, 401, 401]
        assert _answer(url, *sam).status_code == 404
        # The key itself still works, and signs in anew.
        assert httpx.get(url + "/v1/runs", headers={"X-API-Key": RITA}).status_code == 200
        assert _answer(url, *_sign_in(url, RITA)).status_code == 404
        unknown = _revoke(values, "nobody")
        assert unknown.returncode != 0 and "no key named 'nobody'" in unknown.stderr


def test_removing_a_key_ends_its_sessions_for_good(values, tmp_path):
    """The session's record holds the key's digest, checked on every request: a key removed
    from the settings signs in nobody, and adding it back later does not revive them (its
    sessions were revoked when they were refused)."""
    with running_api(values, tmp_path) as url:
        value, token = _sign_in(url, SAM)
    without = {**values, "api_key_hashes": KEYS[0]}
    with running_api(without, tmp_path) as url:
        assert _answer(url, value, token).status_code == 401
    with running_api(values, tmp_path) as url:
        assert _answer(url, value, token).status_code == 401
