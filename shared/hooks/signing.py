"""Signatures, as the common webhook schemes make them (Stripe's, Standard Webhooks').

A delivery carries ``X-Groundswell-Signature: t=<unix seconds>,v1=<hex>`` where the hex is
HMAC-SHA256, keyed by the hook's secret, of ``<t>.<body>`` (the body's exact bytes). A
receiver recomputes it, compares in constant time, and refuses a timestamp older than its
tolerance (replays). ``X-Groundswell-Delivery`` names the delivery: the same on every retry,
so a receiver can also drop one it has already handled.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Groundswell-Signature"
DELIVERY_HEADER = "X-Groundswell-Delivery"
EVENT_HEADER = "X-Groundswell-Event"
TOLERANCE_SECONDS = 300


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def verify(
    secret: str,
    header: str,
    body: bytes,
    tolerance: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance`` seconds."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        t = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - t) > tolerance:
        return False
    expected = sign(secret, body, t).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))
