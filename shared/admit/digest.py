"""Digests of SPEC §6: sha256 over a kind prefix and RFC 8785 canonical JSON."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from groundswell.shared.canonical import canonical_json

SPEC_VERSION = "0.11"
_PREFIX = f"groundgate/{SPEC_VERSION}:".encode("ascii")


def digest(kind: str, obj: Any) -> str:
    """``sha256:`` + hex(SHA-256("groundgate/0.11:" + kind + NUL + JCS(obj)))."""
    h = hashlib.sha256(_PREFIX)
    h.update(kind.encode("ascii"))
    h.update(b"\0")
    h.update(canonical_json(obj))
    return "sha256:" + h.hexdigest()


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_digest(kind: str, text: str) -> str:
    """``digest(kind, {"text": text})`` without escaping a long text one character at a time.

    ``json.dumps`` escapes exactly as ECMAScript's JSON.stringify does for every string without
    lone surrogates (quote, backslash, the short escapes and ``\\u00xx`` for other controls);
    a text with a lone surrogate takes the general path.
    """
    if _SURROGATE.search(text):
        return digest(kind, {"text": text})
    h = hashlib.sha256(_PREFIX)
    h.update(kind.encode("ascii"))
    h.update(b'\0{"text":')
    h.update(json.dumps(text, ensure_ascii=False).encode("utf-8"))
    h.update(b"}")
    return "sha256:" + h.hexdigest()
