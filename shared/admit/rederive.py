"""Re-derivation of a receipt from its inputs (SPEC §1: anyone can re-derive it byte for byte).

``check_receipt`` re-runs every decision and reports each difference: another spec version, a
receipt whose own digest does not hold, a changed document, schema, policy or candidate, and
any decision, coverage, judgment or relation that moved.

A receipt with a ``guard`` member is the guarded policy's, which builds on this engine: it
re-derives through ``guarded/rederive.py``, which passes the admitter the receipt's recorded
guard settings make (``guards``); here, without one, that is the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groundswell.shared.admit.digest import SPEC_VERSION, digest
from groundswell.shared.admit.engine import Admitter
from groundswell.shared.admit.errors import PacketError

# A receipt's ``guard`` member read into the admitter that re-derives it, or the difference
# that says why it cannot be (guarded/rederive.py's ``recorded_guard``).
Guards = Callable[[dict[str, Any]], tuple[Callable[..., Admitter] | None, str | None]]

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
    guards: Guards | None = None,
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
    make: Callable[..., Admitter] | None = Admitter
    if "guard" in receipt:
        if guards is None:
            return [
                *problems,
                "the receipt is the guarded policy's (it has a guard member): "
                "re-derive it with groundswell.shared.guarded.rederive.check_receipt",
            ]
        make, refused = guards(receipt)
        if refused or make is None:
            return [*problems, refused or "guard cannot be re-derived"]
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
        fresh = make(document, schema, policy, **kwargs).admit(candidates, judgments)
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
