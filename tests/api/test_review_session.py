"""Sessions of the review page, in process (FastAPI's TestClient over a real Redis): signing in
with a key sets a signed, expiring, HttpOnly SameSite=Strict cookie that stands for the key on
the API; a request it signs with an unsafe method needs the session's CSRF token; a forged,
expired or signed-out session, or one whose key was removed, signs in nobody (the server
keeps a record of each session: tests/api/test_session_revocation.py)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from groundswell.api import session
from groundswell.api.main import create_app
from groundswell.shared.settings import Settings, hash_api_key

pytestmark = pytest.mark.integration

RITA, OPS = "gs_rita_reviews_and_runs", "gs_ops_runs_only"
TASK = "sha256:" + "0" * 64


def _settings(values: dict, keys: list[str]) -> Settings:
    return Settings(
        **{
            **values,
            "api_key_hashes": ",".join(keys),
            "session_secret": "a-test-session-secret",
            "api_rate_failed_auth": "1000/minute",
        }
    )


@pytest.fixture
def settings(service_settings) -> Settings:
    return _settings(
        service_settings,
        [f"rita:runs+review:{hash_api_key(RITA)}", f"ops:runs:{hash_api_key(OPS)}"],
    )


def _client(settings: Settings) -> TestClient:
    return TestClient(create_app(settings), follow_redirects=False)


def _sign_in(client: TestClient, key: str, next: str = "/review"):
    return client.post("/review/sign-in", data={"key": key, "next": next})


def test_sign_in_sets_a_session_cookie(settings):
    client = _client(settings)
    page = client.get("/review/sign-in")
    assert page.status_code == 200 and 'name="key"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]

    done = _sign_in(client, RITA, "/review?run=r1")
    assert done.status_code == 303 and done.headers["location"] == "/review?run=r1"
    cookie = done.headers["set-cookie"]
    assert cookie.startswith(f"{session.COOKIE}=")
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert "secure" not in flags  # http here; https requests get Secure
    value = client.cookies[session.COOKIE]
    assert RITA not in value and hash_api_key(RITA)[7:] in value  # the digest, never the key

    # The session stands for the key on the JSON API: GETs need no token.
    assert client.get("/v1/review/tasks", params={"run": "nope"}).status_code == 404
    assert client.get("/v1/runs").status_code == 200
    # An outside "next" is not followed.
    assert _sign_in(client, RITA, "https://elsewhere.example/").headers["location"] == "/review"
    assert _sign_in(client, RITA, "//elsewhere.example/").headers["location"] == "/review"


def test_keys_that_may_not_review_do_not_sign_in(settings):
    client = _client(settings)
    runs_only = _sign_in(client, OPS)
    assert runs_only.status_code == 403 and "set-cookie" not in runs_only.headers
    assert "may not review" in runs_only.text and "ops" in runs_only.text
    wrong = _sign_in(client, "gs_nobody")
    assert wrong.status_code == 403 and "not a key of this service" in wrong.text
    # Keys never travel in URLs, not even to the sign-in page.
    assert client.get("/review/sign-in", params={"api_key": RITA}).status_code == 400
    # Another site's form does not sign anyone in.
    forged = client.post(
        "/review/sign-in", data={"key": RITA}, headers={"origin": "https://evil.example"}
    )
    assert forged.status_code == 403
    # A page of another site with no referrer makes its form send Origin "null", as this
    # page's own form does (no-referrer): the browser says where it came from.
    for site in ("cross-site", "same-site"):
        headers = {"origin": "null", "sec-fetch-site": site}
        hidden = client.post("/review/sign-in", data={"key": RITA}, headers=headers)
        assert hidden.status_code == 403 and "set-cookie" not in hidden.headers
    headers = {"origin": "null", "sec-fetch-site": "same-origin"}
    assert client.post("/review/sign-in", data={"key": RITA}, headers=headers).status_code == 303


def test_unsafe_requests_by_cookie_need_the_csrf_token(settings):
    client = _client(settings)
    _sign_in(client, RITA)
    value = client.cookies[session.COOKIE]
    token = session.csrf_token(settings, value)
    path = f"/v1/review/tasks/{TASK}/answers"

    missing = client.post(path, json={"verdict": "unsure"})
    assert missing.status_code == 403
    assert missing.json()["detail"].startswith("missing CSRF token")
    wrong = client.post(path, json={"verdict": "unsure"}, headers={"X-CSRF-Token": "0" * 64})
    assert wrong.status_code == 403 and wrong.json()["detail"].startswith("wrong CSRF token")
    # With the token the request gets through to the route (no such task).
    ok = client.post(path, json={"verdict": "unsure"}, headers={"X-CSRF-Token": token})
    assert ok.status_code == 404
    # A form posts the token as the field "csrf".
    form = client.post("/v1/runs/nope/review/resolve", data={"csrf": token})
    assert form.status_code == 404
    assert client.post("/v1/runs/nope/review/resolve", data={"csrf": "x"}).status_code == 403
    # The key's header needs no token (no cookie is involved).
    header = client.post(path, json={"verdict": "unsure"}, headers={"X-API-Key": RITA}, cookies={})
    assert header.status_code == 404


def test_sessions_end(settings, service_settings):
    client = _client(settings)
    _sign_in(client, RITA)
    value = client.cookies[session.COOKIE]
    assert session.open_session(settings, value).name == "rita"

    # Forged: another key's digest under the same mac, or a changed expiry.
    digest, expiry, nonce, mac = value.split(".")
    forged = ".".join((hash_api_key(OPS)[7:], expiry, nonce, mac))
    later = ".".join((digest, str(int(expiry) + 10**6), nonce, mac))
    for bad in (forged, later, "nonsense", value + "0"):
        client.cookies.clear()  # only the bad cookie (the jar keeps the server's by domain)
        client.cookies.set(session.COOKIE, bad)
        refused = client.get("/v1/review/tasks", params={"run": "nope"})
        assert refused.status_code == 401 and "sign in again" in refused.json()["detail"]
        page = client.get("/review")
        assert page.status_code == 303 and page.headers["location"] == "/review/sign-in"

    # Expired.
    assert session.open_session(settings, value, now=int(expiry) + 1) is None
    # Another secret (another deployment) does not accept it.
    other = Settings(**{**settings.model_dump(), "session_secret": "another"})
    assert session.open_session(other, value) is None
    # A key removed from the settings ends its sessions.
    without = _settings(service_settings, [f"ops:runs:{hash_api_key(OPS)}"])
    assert session.open_session(without, value) is None
    gone = _client(without)
    gone.cookies.set(session.COOKIE, value)
    assert gone.get("/v1/runs").status_code == 401

    # A key removed from the settings ended the session on the server too: with the key
    # back, that cookie still signs in nobody.
    client.cookies.set(session.COOKIE, value)
    assert client.get("/v1/runs").status_code == 401

    # Signing out (with the token, as a form) ends a session and clears the cookie.
    client.cookies.clear()
    _sign_in(client, RITA)
    value = client.cookies[session.COOKIE]
    refused = client.post("/review/sign-out")
    assert refused.status_code == 403
    out = client.post("/review/sign-out", data={"csrf": session.csrf_token(settings, value)})
    assert out.status_code == 303 and out.headers["location"] == "/review/sign-in"
    cleared = out.headers["set-cookie"]
    assert cleared.startswith(f'{session.COOKIE}=""') and "max-age=0" in cleared.lower()
    assert session.open_session(settings, value) is None


def test_the_page_needs_a_session(settings):
    client = _client(settings)
    page = client.get("/review", params={"run": "r1", "code": "SCALE_WORD"})
    assert page.status_code == 303
    assert (
        page.headers["location"] == "/review/sign-in?next=%2Freview%3Frun%3Dr1%26code%3DSCALE_WORD"
    )
    assert client.get(f"/review/tasks/{TASK}").status_code == 303
    _sign_in(client, RITA)
    shown = client.get("/review")
    assert shown.status_code == 200 and "Review queue" in shown.text
    assert shown.headers["content-security-policy"].startswith("default-src 'none'")
    assert 'id="end"' in client.get("/review", params={"end": "next"}).text
    script = client.get("/review/static/review.js")
    assert script.status_code == 200 and "X-CSRF-Token" in script.text


def test_sign_in_past_the_failures_limit_refuses_guesses_not_the_key(service_settings):
    """Guessing keys at the sign-in form is bounded: past the address's failures a wrong key
    gets 429, but the right key still signs in (others' failures behind one address must not
    lock a reviewer out; tests/api/test_auth_lockout.py), and every attempt counts toward the
    address's limit, as a request of the API does."""
    keys = [f"rita:runs+review:{hash_api_key(RITA)}"]
    guarded = _settings(service_settings, keys).model_copy(
        update={"api_rate_failed_auth": "2/minute"}
    )
    client = _client(guarded)
    assert [_sign_in(client, f"gs_guess_{n}").status_code for n in range(2)] == [403, 403]
    refused = _sign_in(client, "gs_guess_2")
    assert refused.status_code == 429 and "set-cookie" not in refused.headers
    assert "retry-after" in refused.headers
    assert _sign_in(client, RITA).status_code == 303

    busy = _settings(service_settings, keys).model_copy(update={"api_rate_per_address": "2/minute"})
    client = _client(busy)
    assert [_sign_in(client, RITA).status_code for _ in range(2)] == [303, 303]
    assert _sign_in(client, RITA).status_code == 429


def test_the_task_page_links_a_document_of_any_name_to_its_receipts(settings, monkeypatch):
    """A document's id is a path segment of the receipts link, quoted: an id with '#', '?'
    or a space still names its own receipts."""
    from types import SimpleNamespace

    from groundswell.api.routes import review_page

    doc_id = "q3 report#2?v=1"
    stored = {
        "task": {
            "slot": {"field": "revenue", "key": None, "decisions": []},
            "mode": "review",
            "item": "number",
            "template": "number@1",
            "question": "What is the revenue?",
            "choices": [],
            "codes": [],
        },
        "origin": {"run": "r1", "doc_id": doc_id, "receipt": "receipts/admit/x.json"},
        "answers": [],
        "latest": {},
        "state": "unanswered",
    }

    def missing(key):
        raise KeyError(key)

    review = SimpleNamespace(output=SimpleNamespace(get=missing))
    source = {"windows": [], "pages": [], "problem": "gone", "template": None}
    monkeypatch.setattr(review_page, "task_with_answers", lambda service, task, key: stored)
    monkeypatch.setattr(review_page, "run_review", lambda service, run, key: review)
    monkeypatch.setattr(review_page, "_source", lambda review, stored, unit: source)
    monkeypatch.setattr(review_page, "_progress", lambda service, run, q, key: None)
    client = _client(settings)
    _sign_in(client, RITA)
    page = client.get(f"/review/tasks/{TASK}")
    assert page.status_code == 200
    link = "/v1/runs/r1/documents/q3%20report%232%3Fv%3D1/receipts"
    assert f'id="receipt" href="{link}"' in page.text


def test_the_queue_says_what_is_wrong_with_its_filters_on_the_page(settings):
    """A policy the filter form names that does not exist is said on the queue page, with
    the form to change it (as an unknown run is), not answered as the API's JSON."""
    client = _client(settings)
    _sign_in(client, RITA)
    for policy, words in (("nope@1", "unknown policy"), ("default@999", "no version 999")):
        page = client.get("/review", params={"policy": policy})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<p class="problem">' in page.text and words in page.text
        assert 'id="filters"' in page.text
    unknown_run = client.get("/review", params={"run": "nope"})
    assert unknown_run.status_code == 200 and "no run &#39;nope&#39;" in unknown_run.text
