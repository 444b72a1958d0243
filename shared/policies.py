"""Named, versioned policies: a verification part and an admission part, each fingerprinted.

A version never changes once published. The built-ins mirror gtrex's strict / default /
permissive verification policies, each with groundgate's default admission policy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from shared.canonical import json_sha256

POLICY_REF = re.compile(r"^(?P<name>[a-z][a-z0-9_-]{0,63})(?:@(?P<version>[1-9][0-9]*|latest))?$")


class PolicyError(ValueError):
    """An unknown or malformed policy reference or policy document."""


@dataclass(frozen=True)
class PolicyVersion:
    name: str
    version: int
    verify: dict[str, Any]
    admit: dict[str, Any] | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    @cached_property
    def verify_policy(self):
        from shared.verify import VerifyPolicy

        return VerifyPolicy.from_dict(self.verify)

    @cached_property
    def verify_fingerprint(self) -> str:
        """Covers every verification setting and the verification engine revision."""
        return self.verify_policy.fingerprint

    @cached_property
    def admit_fingerprint(self) -> str:
        """Covers the admission policy, the spec version and the admission engine revision."""
        from shared.admit import ENGINE_REVISION, SPEC_VERSION

        return json_sha256({"policy": self.admit, "spec": SPEC_VERSION, "engine": ENGINE_REVISION})[
            :16
        ]

    def identity(self) -> dict[str, Any]:
        """What a run and a summary record about the policy."""
        return {
            "name": self.name,
            "version": self.version,
            "ref": self.ref,
            "verify_fingerprint": self.verify_fingerprint,
            "admit_fingerprint": self.admit_fingerprint,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "verify": self.verify,
            "admit": self.admit,
            **self.identity(),
        }


def _builtin(name: str, description: str) -> PolicyVersion:
    from shared.verify import get_verify_policy

    return PolicyVersion(name, 1, get_verify_policy(name).as_dict(), None, description)


_BUILTIN_DESCRIPTIONS = {
    "strict": "Only character-identical quotations are grounded; groundgate's default admission.",
    "default": "Sound tiers (exact to case) are grounded; stitched quotations are reported, "
    "not grounded; groundgate's default admission.",
    "permissive": "Accepts the unsound skeleton tier, ignores ellipses and admits stitched "
    "fragments: for measuring how much such a policy inflates a rate.",
}


def builtin_policies() -> dict[str, PolicyVersion]:
    return {name: _builtin(name, text) for name, text in _BUILTIN_DESCRIPTIONS.items()}


def parse_ref(ref: str) -> tuple[str, int | None]:
    match = POLICY_REF.match(ref.strip())
    if not match:
        raise PolicyError(
            f"invalid policy reference {ref!r}: expected NAME or NAME@VERSION, e.g. default@1"
        )
    version = match.group("version")
    return match.group("name"), (int(version) if version and version != "latest" else None)


def resolve_policy(ref: str) -> PolicyVersion:
    """A built-in policy by ``name`` or ``name@version`` (the latest when no version is given)."""
    name, version = parse_ref(ref)
    policies = builtin_policies()
    if name not in policies:
        raise PolicyError(f"unknown policy {name!r}: known policies are {', '.join(policies)}")
    policy = policies[name]
    if version is not None and version != policy.version:
        raise PolicyError(f"policy {name} has no version {version} (latest is {policy.version})")
    return policy
