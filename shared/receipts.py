"""Unit receipts: content-addressed, deterministic, hashed over canonical JSON.

A receipt's key is a fingerprint of everything that can change it (input bytes, the policy
part that applies, the engine revision), so a redelivered task, a repeated run or a
reprocessing run under an unchanged policy part finds it and does no work. Receipts hold no
run id, document id or time, so identical inputs give byte-identical receipts.
"""

from __future__ import annotations

import json
from typing import Any

from groundswell.shared.canonical import canonical_text, json_sha256, sha256_hex

RECEIPT_FORMAT = 1
KINDS = ("verify", "admit")


class ReceiptError(ValueError):
    """A stored receipt that does not parse or whose digest does not match its content."""


def receipt_key(kind: str, fingerprint: str) -> str:
    """``receipts/<kind>/<fp[:2]>/<fp>.json``: 256 folders per kind, so that no folder (or S3
    prefix) holds millions of receipts."""
    return f"receipts/{kind}/{fingerprint[:2]}/{fingerprint}.json"


def verify_fingerprint(
    document_sha256: str | None,
    claims_sha256: str,
    policy_fingerprint: str,
    source: dict[str, Any] | None = None,
    producer: dict[str, Any] | None = None,
) -> str:
    """``source`` (``{"sha256", "format", "reader"}``) for a document read from a PDF, HTML or
    XML file, whose ``document_sha256`` is then the digest of the text read. ``producer``: the
    corpus's declared producer, which its receipt carries (a record's own is in its input's
    digest); without one, the fingerprint is as before."""
    from groundswell.shared.verify import ENGINE_REVISION

    return json_sha256(
        {
            "kind": "verify",
            "document_sha256": document_sha256,
            "claims_sha256": claims_sha256,
            "policy": policy_fingerprint,
            "engine": ENGINE_REVISION,
            **({"source": source} if source else {}),
            **({"producer": producer} if producer else {}),
        }
    )


def admit_fingerprint(
    document_sha256: str | None,
    candidates_sha256: str,
    schema_sha256: str,
    policy_fingerprint: str,
    source: dict[str, Any] | None = None,
    producer: dict[str, Any] | None = None,
) -> str:
    from groundswell.shared.admit import ENGINE_REVISION

    return json_sha256(
        {
            "kind": "admit",
            "document_sha256": document_sha256,
            "candidates_sha256": candidates_sha256,
            "schema_sha256": schema_sha256,
            "policy": policy_fingerprint,
            "engine": ENGINE_REVISION,
            **({"source": source} if source else {}),
            **({"producer": producer} if producer else {}),
        }
    )


def seal(body: dict[str, Any]) -> tuple[bytes, str]:
    """Add ``receipt_sha256`` over the canonical body; return the stored bytes and the digest.

    Each top-level member is encoded once and reused for both the digest and the stored
    form (receipts can be megabytes; encoding them twice was the cost of writing one).
    """
    members = {k: v for k, v in body.items() if k != "receipt_sha256"}
    members["format"] = RECEIPT_FORMAT
    encoded = {k: canonical_text(k) + ":" + canonical_text(v) for k, v in members.items()}

    def assemble(parts: dict[str, str]) -> str:
        order = sorted(parts, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(parts[k] for k in order) + "}"

    digest = sha256_hex(assemble(encoded).encode("utf-8", "surrogatepass"))
    encoded["receipt_sha256"] = canonical_text("receipt_sha256") + ":" + canonical_text(digest)
    return assemble(encoded).encode("utf-8", "surrogatepass"), digest


def open_receipt(data: bytes, key: str) -> dict[str, Any]:
    """Parse a stored receipt and check its digest."""
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReceiptError(f"{key}: not a JSON receipt ({exc})") from None
    if not isinstance(body, dict) or "receipt_sha256" not in body:
        raise ReceiptError(f"{key}: not a groundswell receipt")
    stated = body["receipt_sha256"]
    actual = json_sha256({k: v for k, v in body.items() if k != "receipt_sha256"})
    if stated != actual:
        raise ReceiptError(f"{key}: receipt_sha256 {stated} does not match its content {actual}")
    return body


def content_sha256(data: bytes) -> str:
    return sha256_hex(data)
