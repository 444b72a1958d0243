"""Sessions of the review page: sign in once with an API key, then a signed cookie.

The cookie holds ``<key digest hex>.<expiry>.<nonce>.<mac>``, the mac an HMAC-SHA256 under the
session secret over the first three (stdlib ``hmac``; nothing is deserialized: the value is
only split on dots). It names the key by its digest, never the key. The nonce is the
session's id on the server (``shared/sessions.py``: a Redis record of the key's digest with
the session's TTL), so a session is valid while its record lives and its key is configured:
signing out, ``groundswell api-key revoke-sessions NAME`` and removing the key from
``api_key_hashes`` end it, copies of the cookie included. The CSRF token of a session is
another HMAC of the cookie, so it needs no storage; a request authenticated by the cookie with
an unsafe method must send it (``X-CSRF-Token``, or the form field ``csrf``).

The secret is ``session_secret``; unset, a random one of this process (sessions end with the
process, and another API process does not accept them: several processes must share one).
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from hashlib import sha256
from urllib.parse import parse_qs

from fastapi import HTTPException, Request, Response, status

from groundswell.shared.runs.state import redis_client
from groundswell.shared.sessions import SessionStore
from groundswell.shared.settings import ApiKey, Settings

COOKIE = "gs_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORM_TYPE = "application/x-www-form-urlencoded"
_PROCESS_SECRET = secrets.token_bytes(32)
_COOKIE_RE = re.compile(r"([0-9a-f]{64})\.([0-9]{1,12})\.([0-9a-f]{32})\.([0-9a-f]{64})")


def _secret(settings: Settings) -> bytes:
    configured = settings.session_secret
    return configured.get_secret_value().encode("utf-8") if configured else _PROCESS_SECRET


def _mac(settings: Settings, purpose: str, *parts: str) -> str:
    message = "|".join((purpose, *parts)).encode("utf-8")
    return hmac.new(_secret(settings), message, sha256).hexdigest()


def find_key(settings: Settings, digest: str) -> ApiKey | None:
    """The configured key with this digest; every entry is compared (no early exit)."""
    found = None
    for known in settings.api_keys:
        if hmac.compare_digest(digest, known.digest):
            found = known
    return found


def sessions(settings: Settings) -> SessionStore:
    return SessionStore(redis_client(settings.state_redis_url))


def issue(settings: Settings, key: ApiKey, now: float | None = None) -> str:
    """A new session of ``key``, recorded on the server: the cookie's value, valid for
    ``session_ttl_s``."""
    expiry = str(int((time.time() if now is None else now) + settings.session_ttl_s))
    digest, nonce = key.digest[7:], secrets.token_hex(16)
    sessions(settings).add(nonce, digest, settings.session_ttl_s)
    return ".".join((digest, expiry, nonce, _mac(settings, "session/1", digest, expiry, nonce)))


def _parts(settings: Settings, value: str, now: float | None) -> tuple[str, str] | None:
    """(key digest hex, session id) of a well-formed, genuine, unexpired cookie."""
    found = _COOKIE_RE.fullmatch(value or "")
    if found is None:
        return None
    digest, expiry, nonce, mac = found.groups()
    if not hmac.compare_digest(mac, _mac(settings, "session/1", digest, expiry, nonce)):
        return None
    if int(expiry) <= (time.time() if now is None else now):
        return None
    return digest, nonce


def open_session(settings: Settings, value: str, now: float | None = None) -> ApiKey | None:
    """The key a session cookie authenticates: None when it is malformed, forged, expired,
    ended on the server (signed out, revoked), or its key is no longer configured (which
    ends it on the server too). Redis errors propagate: an unchecked session is no session."""
    parts = _parts(settings, value, now)
    if parts is None:
        return None
    digest, nonce = parts
    store = sessions(settings)
    if not store.holds(nonce, digest):
        return None
    key = find_key(settings, "sha256:" + digest)
    if key is None:
        store.revoke(nonce)
    return key


def unavailable() -> HTTPException:
    """What a request gets while sessions cannot be checked or recorded (Redis is down)."""
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        "sessions cannot be checked or recorded now (the run-state Redis is unreachable): retry",
    )


def end(settings: Settings, value: str) -> None:
    """Sign out: the session's record is deleted, so no copy of its cookie works again."""
    parts = _parts(settings, value, None)
    if parts is not None:
        sessions(settings).revoke(parts[1])


def csrf_token(settings: Settings, value: str) -> str:
    """The CSRF token of a session (derived from its cookie: nothing is stored)."""
    return _mac(settings, "csrf/1", value)


def csrf_matches(settings: Settings, value: str, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(str(token), csrf_token(settings, value))


def form_fields(body: bytes) -> dict[str, str]:
    """A urlencoded form body: the first value of each field."""
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in parsed.items()}


def check_csrf(settings: Settings, request: Request, value: str, body: bytes | None) -> None:
    """403 naming the problem unless an unsafe request of a session carries its CSRF token
    (``X-CSRF-Token``, or the form field ``csrf`` of a urlencoded ``body``)."""
    if request.method in SAFE_METHODS:
        return
    token = request.headers.get(CSRF_HEADER)
    if token is None and body is not None:
        token = form_fields(body).get(CSRF_FIELD)
    if token is None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"missing CSRF token: a {request.method} signed in by the session cookie needs "
            f"the {CSRF_HEADER} header (or the form field {CSRF_FIELD!r}) of the session",
        )
    if not csrf_matches(settings, value, token):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "wrong CSRF token: it is not this session's (reload)"
        )


def is_form(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";")[0].strip() == FORM_TYPE


def cookie_name(settings: Settings) -> str:
    """``gs_session``; ``__Host-gs_session`` when the cookie is always Secure (browsers keep
    such a cookie only from a secure origin, for this host alone, on every path)."""
    return f"__Host-{COOKIE}" if settings.session_cookie_secure else COOKIE


def cookie_of(request: Request, settings: Settings) -> str | None:
    """The request's session cookie, by this deployment's name only."""
    return request.cookies.get(cookie_name(settings))


def _secure(request: Request, settings: Settings) -> bool:
    return settings.session_cookie_secure or request.url.scheme == "https"


def set_cookie(response: Response, request: Request, settings: Settings, value: str) -> None:
    response.set_cookie(
        cookie_name(settings),
        value,
        max_age=settings.session_ttl_s,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_secure(request, settings),
    )


def clear_cookie(response: Response, request: Request, settings: Settings) -> None:
    response.delete_cookie(
        cookie_name(settings),
        path="/",
        httponly=True,
        samesite="strict",
        secure=_secure(request, settings),
    )
