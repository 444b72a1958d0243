"""groundswell: verify quotations and admit extracted facts at corpus scale.

The packages of the system live under this one name (``groundswell.shared``, the core;
``groundswell.workers``; ``groundswell.api``), so installing groundswell adds a single
top-level name to site-packages.
"""

from __future__ import annotations

import os as _os

# In the repository the packages sit beside this folder (shared/, api/, workers/), which is
# where the project keeps them; installed, they sit inside it. Either way they import as
# groundswell.shared, groundswell.api and groundswell.workers.
_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_here, "shared")):
    __path__.append(_os.path.dirname(_here))  # type: ignore[name-defined]

# -- the public API ----------------------------------------------------------------------
# What gtrex's and groundgate's users call in process, and a client of the HTTP API. Names
# load on first use, so ``import groundswell`` stays cheap.

__all__ = [
    "APIError",
    "Client",
    "admit",
    "check_receipt",
    "verify",
]


def verify(
    document: str,
    claims: list[str | dict],
    policy: str = "default",
) -> list[dict]:
    """Certificates of ``claims`` (strings, or records with "claim" and optional
    "start"/"end") against ``document``, under a built-in policy (``strict``, ``default``,
    ``permissive``) or a policy file: verdict, tier and offsets into the original text."""
    from groundswell.shared.verify import Verifier, VerifyPolicy, get_verify_policy

    chosen = VerifyPolicy.load(policy) if policy.endswith(".json") else get_verify_policy(policy)
    verifier = Verifier(document, chosen)
    out = []
    for claim in claims:
        if isinstance(claim, str):
            out.append(verifier.verify(claim).as_dict())
        elif claim.get("start") is not None and claim.get("end") is not None:
            out.append(verifier.verify_at(claim["claim"], claim["start"], claim["end"]).as_dict())
        else:
            out.append(verifier.verify(claim["claim"]).as_dict())
    return out


def admit(
    document: str, schema: dict, candidates: list, policy: dict | None = None, **options
) -> dict:
    """The receipt of ``candidates`` (groundgate's specification v0.11): each admitted, sent
    for verification or rejected, with its codes; raises PacketError for an invalid packet."""
    from groundswell.shared.admit import admit as _admit

    return _admit(document, schema, candidates, policy, **options)


def check_receipt(
    receipt: dict, document: str, schema: dict, candidates: list, policy: dict | None = None
) -> list[str]:
    """Re-derive ``receipt`` from its inputs: the differences, empty when it holds. A
    receipt as a run stores it (``{"receipt": ...}`` with its inputs' digests) is unwrapped."""
    from groundswell.shared.admit.rederive import check_receipt as _check

    if "decisions" not in receipt and isinstance(receipt.get("receipt"), dict):
        receipt = receipt["receipt"]
    return _check(receipt, document, schema, candidates, policy)


def __getattr__(name: str):
    if name in ("Client", "APIError"):
        from groundswell import client

        return getattr(client, name)
    raise AttributeError(f"module 'groundswell' has no attribute {name!r}")
