"""Re-derivation of a receipt from its inputs (SPEC §1: anyone can re-derive it byte for byte).

``check_receipt`` re-runs every decision and reports each difference: another spec version, a
receipt whose own digest does not hold, a changed document, schema, policy or candidate, and
any decision, coverage, judgment or relation that moved.

A receipt with a ``guard`` member (the guarded policy's) re-derives under the guard settings it
records, once they validate and its revision is this engine's; otherwise that is the difference.
"""

from __future__ import annotations

from typing import Any

from groundswell.shared.admit.digest import SPEC_VERSION, digest
from groundswell.shared.admit.engine import Admitter
from groundswell.shared.admit.errors import PacketError

_SECTIONS = (
    "document",
    "references",
    "packs",
    "schema_sha256",
    "policy_sha256",
    "guard",
    "coverage",
    "judgments",
    "relations",
    "summary",
)


def check_receipt(
    receipt: dict[str, Any],
    document: str,
    schema: dict[str, Any],
    candidates: list[Any],
    policy: dict[str, Any] | None = None,
    *,
    document_source: str | None = None,
    references: list[Any] | None = None,
    judgments: list[Any] | None = None,
    packs: list[Any] | None = None,
    raise_invalid: bool = False,
) -> list[str]:
    """Every difference between ``receipt`` and the receipt its inputs give; [] when it holds.

    Inputs that are not a valid packet are one more difference, or (``raise_invalid``) the
    PacketError itself."""
    problems: list[str] = []
    if not isinstance(receipt, dict):
        return ["the receipt is not a JSON object"]
    version = receipt.get("groundgate")
    if version != SPEC_VERSION:
        return [f"the receipt is of spec version {version!r}, not {SPEC_VERSION}"]
    body = {k: v for k, v in receipt.items() if k != "receipt_sha256"}
    try:
        own = digest("receipt", body)
    except ValueError as exc:
        return [f"the receipt has no canonical form: {exc}"]
    if own != receipt.get("receipt_sha256"):
        problems.append("receipt_sha256 does not match the receipt's own content")
    guard, refused = recorded_guard(receipt)
    if refused:
        return [*problems, refused]
    doc = receipt.get("document")
    document_id = doc.get("id") if isinstance(doc, dict) else None
    if document_source is None and isinstance(doc, dict):
        document_source = doc.get("source")
    kwargs: dict[str, Any] = {
        "document_id": document_id,
        "document_source": document_source,
        "references": references,
        "packs": packs,
    }
    try:
        if guard is None:
            admitter = Admitter(document, schema, policy, **kwargs)
        else:
            from groundswell.shared.guarded.admitter import GuardedAdmitter

            admitter = GuardedAdmitter(document, schema, policy, guard=guard, **kwargs)
        fresh = admitter.admit(candidates, judgments)
    except PacketError as exc:
        if raise_invalid:
            raise
        return [*problems, f"the inputs are not a valid packet: {exc}"]
    for section in _SECTIONS:
        if receipt.get(section) != fresh.get(section):
            problems.append(f"{section} differs")
    old = receipt.get("decisions")
    new = fresh["decisions"]
    if not isinstance(old, list) or len(old) != len(new):
        problems.append(
            f"the receipt has {len(old) if isinstance(old, list) else 'no'} decisions, "
            f"the inputs give {len(new)}"
        )
    else:
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                what = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                label = b.get("candidate_id")
                problems.append(f"decision {i} (candidate {label!r}) differs in {', '.join(what)}")
    if fresh["receipt_sha256"] != receipt.get("receipt_sha256") and not problems:
        problems.append("receipt_sha256 differs")
    return problems


def recorded_guard(receipt: dict[str, Any]) -> tuple[Any, str | None]:
    """The guard settings (GuardSettings) a receipt records, None for a receipt without a
    ``guard`` member; or, when they cannot be re-derived under (another revision, a setting
    that does not validate), the difference that says so."""
    if "guard" not in receipt:
        return None, None
    from groundswell.shared.guarded.admitter import NAME
    from groundswell.shared.guarded.settings import (
        GUARD_REVISION,
        GuardSettings,
        GuardSettingsError,
    )

    guard = receipt["guard"]
    if not isinstance(guard, dict):
        return None, "guard is not an object of the guarded policy's settings"
    if guard.get("policy") != NAME:
        return None, f"guard names the policy {guard.get('policy')!r}, not {NAME!r}"
    if guard.get("revision") != GUARD_REVISION:
        return None, (
            f"guard is of revision {guard.get('revision')!r}; this engine re-derives "
            f"{GUARD_REVISION}"
        )
    try:
        return GuardSettings.from_dict(guard.get("settings")), None
    except GuardSettingsError as exc:
        return None, f"guard settings are invalid: {exc}"
