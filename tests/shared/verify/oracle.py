"""gtrex 1.1.0 as a test oracle: the same claims through gtrex and through groundswell."""

from __future__ import annotations

import dataclasses
from typing import Any

import gtrex

from groundswell.shared.verify import Verifier, get_verify_policy

POLICIES = ("strict", "default", "permissive")
COMPARED = ("verdict", "tier", "start", "end")
# Everything else a certificate says that does not depend on wording or identity.
DETAIL = (
    "grounded",
    "tier_sound",
    "span_text",
    "contiguous",
    "had_ellipsis",
    "fragments",
    "fragments_found",
    "fragment_statuses",
    "scope",
    "requested_span",
    "found_elsewhere",
)

_GTREX = {"strict": gtrex.STRICT, "default": gtrex.DEFAULT, "permissive": gtrex.PERMISSIVE}


def gtrex_policy(name: str, **overrides: Any) -> gtrex.Policy:
    return dataclasses.replace(_GTREX[name], **overrides) if overrides else _GTREX[name]


def our_policy(name: str, **overrides: Any):
    policy = get_verify_policy(name)
    return policy.with_changes(**overrides) if overrides else policy


def outcome(verifier: Any, claim: str, at: tuple[int, int] | None = None) -> dict[str, Any]:
    try:
        cert = verifier.verify(claim) if at is None else verifier.verify_at(claim, *at)
    except (TypeError, ValueError) as exc:
        return {"error": type(exc).__name__}
    return cert.as_dict()


def differences(ours: dict[str, Any], theirs: dict[str, Any], keys=COMPARED + DETAIL) -> dict:
    if "error" in ours or "error" in theirs:
        return {} if ours.get("error") == theirs.get("error") else {"error": (ours, theirs)}
    return {k: (ours[k], theirs[k]) for k in keys if ours[k] != theirs[k]}


class Pair:
    """One document verified by both engines under one policy (each engine reuses its index)."""

    def __init__(self, source: str, name: str, **overrides: Any) -> None:
        self.ours = Verifier(source, our_policy(name, **overrides))
        self.theirs = gtrex.Verifier(source, gtrex_policy(name, **overrides))

    def compare(self, claim: str, at: tuple[int, int] | None = None) -> dict:
        return differences(outcome(self.ours, claim, at), outcome(self.theirs, claim, at))
