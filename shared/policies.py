"""Named, versioned policies: a verification part and an admission part, each fingerprinted.

Policies live in object storage under ``policies/<name>/<version>.json`` (the registry). A
version never changes once published: publishing a version that exists with other content is
refused, publishing the same content again is a no-op. The built-ins (gtrex's strict / default /
permissive verification, each with groundgate's default admission) are registered as version 1.

Each part has its own fingerprint over every setting that can move a verdict plus its engine
revision, so a new version that changes only admission settings recomputes no verification
receipt, and the reverse.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from groundswell.shared.canonical import canonical_json, json_sha256

if TYPE_CHECKING:
    from groundswell.shared.storage import ObjectStore

POLICY_REF = re.compile(r"^(?P<name>[a-z][a-z0-9_-]{0,63})(?:@(?P<version>[1-9][0-9]*|latest))?$")
PREFIX = "policies/"
# Keys of a verification policy's dict that describe it rather than configure it.
_VERIFY_META = ("name", "version", "description", "fingerprint", "engine_revision", "schema")


class PolicyError(ValueError):
    """An unknown or malformed policy reference or policy document."""


class PolicyConflict(PolicyError):
    """A published version exists with other content: versions are immutable."""


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
        from groundswell.shared.text.transforms import regex_engine
        from groundswell.shared.verify import VerifyPolicy

        # The stored settings carry no identity; the verification policy takes this one.
        # Registry policies run their patterns with RE2: anyone with an API key publishes
        # them and every worker runs them, so their matching time must be linear.
        with regex_engine("re2"):
            return VerifyPolicy.from_dict(
                {
                    **self.verify,
                    "name": self.name,
                    "version": self.version,
                    "description": self.description,
                }
            )

    @cached_property
    def verify_fingerprint(self) -> str:
        """Covers every verification setting and the verification engine revision."""
        return self.verify_policy.fingerprint

    @cached_property
    def admit_fingerprint(self) -> str:
        """Covers the admission policy, the spec version and the admission engine revision."""
        from groundswell.shared.admit import ENGINE_REVISION, SPEC_VERSION

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

    def content(self) -> dict[str, Any]:
        """What makes a version: compared when the same version is published again."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "verify": self.verify,
            "admit": self.admit,
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.content(), **self.identity()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicyVersion:
        return cls(
            name=data["name"],
            version=int(data["version"]),
            verify=data["verify"],
            admit=data.get("admit"),
            description=data.get("description", ""),
        )


class PolicyDocument(BaseModel):
    """What a user publishes. ``verify`` may be partial: it is applied over ``extends``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    description: str | None = Field(
        default=None, description="Default: the base and what this version changes."
    )
    extends: str | None = Field(
        default=None, description="A policy ref whose parts are the base (default: NAME@latest)."
    )
    verify: dict[str, Any] = Field(default_factory=dict)
    admit: dict[str, Any] | None = None


_BUILTIN_DESCRIPTIONS = {
    "strict": "Only character-identical quotations are grounded; groundgate's default admission.",
    "default": "Sound tiers (exact to case) are grounded; stitched quotations are reported, "
    "not grounded; groundgate's default admission.",
    "permissive": "Accepts the unsound skeleton tier, ignores ellipses and admits stitched "
    "fragments: for measuring how much such a policy inflates a rate.",
}


def builtin_policies() -> dict[str, PolicyVersion]:
    from groundswell.shared.verify import get_verify_policy

    out = {}
    for name, text in _BUILTIN_DESCRIPTIONS.items():
        settings = {
            k: v for k, v in get_verify_policy(name).as_dict().items() if k not in _VERIFY_META
        }
        out[name] = PolicyVersion(name, 1, settings, None, text)
    return out


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME@latest`` (version None) or ``NAME@N``."""
    match = POLICY_REF.match(ref.strip())
    if not match:
        raise PolicyError(
            f"invalid policy reference {ref!r}: expected NAME, NAME@VERSION or NAME@latest, e.g. default@1"
        )
    version = match.group("version")
    return match.group("name"), (int(version) if version and version != "latest" else None)


def check_parts(verify: dict[str, Any], admit: dict[str, Any] | None) -> dict[str, Any]:
    """Validate both parts with their engines; return the complete verification settings."""
    from groundswell.shared.admit import PacketError
    from groundswell.shared.admit import admit as admit_packet
    from groundswell.shared.text.transforms import regex_engine
    from groundswell.shared.verify import VerifyPolicy

    try:
        with regex_engine("re2"):  # what the workers will run it with
            complete = VerifyPolicy.from_dict(verify).as_dict()
    except ValueError as exc:
        raise PolicyError(f"verify: {exc}") from None
    if admit is not None:
        try:
            admit_packet("x", {"fields": {}}, [], admit)
        except PacketError as exc:
            raise PolicyError(f"admit: {exc}") from None
    return complete


class PolicyRegistry:
    """Policies and their versions in an object store."""

    # Versions never change, so a process can keep every one it has read.
    _cache: ClassVar[dict[tuple[str, str, int], PolicyVersion]] = {}

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    @staticmethod
    def key(name: str, version: int) -> str:
        return f"{PREFIX}{name}/{version}.json"

    def names(self) -> list[str]:
        seen: set[str] = set()
        for page in self.store.list_pages(PREFIX):
            for info in page:
                name = info.key[len(PREFIX) :].split("/", 1)[0]
                seen.add(name)
        return sorted(seen)

    def versions(self, name: str) -> list[int]:
        out = []
        for page in self.store.list_pages(f"{PREFIX}{name}/"):
            for info in page:
                stem = info.key.rsplit("/", 1)[-1].removesuffix(".json")
                if stem.isdigit():
                    out.append(int(stem))
        return sorted(out)

    def get(self, name: str, version: int | None = None) -> PolicyVersion:
        if version is None:
            versions = self.versions(name)
            if not versions:
                raise PolicyError(
                    f"unknown policy {name!r}: known policies are {', '.join(self.names())}"
                )
            version = versions[-1]
        cache_key = (self.store.url, name, version)
        policy = self._cache.get(cache_key)
        if policy is None:
            try:
                data = self.store.get(self.key(name, version))
            except KeyError:
                known = self.versions(name)
                if not known:
                    raise PolicyError(
                        f"unknown policy {name!r}: known policies are {', '.join(self.names())}"
                    ) from None
                raise PolicyError(
                    f"policy {name} has no version {version} (versions: {', '.join(map(str, known))})"
                ) from None
            policy = PolicyVersion.from_dict(json.loads(data))
            self._cache[cache_key] = policy
        return policy

    def resolve(self, ref: str) -> PolicyVersion:
        name, version = parse_ref(ref)
        return self.get(name, version)

    def publish(
        self, document: dict[str, Any] | PolicyDocument, version: int | None = None
    ) -> tuple[PolicyVersion, bool]:
        """Publish a version (the next one by default). Returns (version, created)."""
        try:
            doc = (
                document
                if isinstance(document, PolicyDocument)
                else PolicyDocument.model_validate(document)
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            raise PolicyError(
                f"{loc}: {first.get('msg')}" if loc else str(first.get("msg"))
            ) from None
        existing = self.versions(doc.name)
        base: PolicyVersion | None = None
        if doc.extends:
            base = self.resolve(doc.extends)
        elif existing:
            base = self.get(doc.name, existing[-1])
        verify = {**(base.verify if base else {}), **doc.verify}
        for key in _VERIFY_META:
            verify.pop(key, None)
        admit = doc.admit if doc.admit is not None else (base.admit if base else None)
        description = doc.description
        if description is None:
            # The base's description would describe the base, not this version: say what it is.
            changed = sorted({*doc.verify} | ({"admit"} if doc.admit is not None else set()))
            description = (
                f"{base.ref} with {', '.join(changed) or 'nothing'} changed" if base else ""
            )
        verify = check_parts(verify, admit)
        for key in _VERIFY_META:
            verify.pop(key, None)
        if version is None:
            latest = self.get(doc.name, existing[-1]) if existing else None
            next_version = (existing[-1] + 1) if existing else 1
            if doc.description is None and latest is not None:
                description = latest.description  # compared as unchanged when nothing else is
            candidate = PolicyVersion(doc.name, next_version, verify, admit, description)
            if latest is not None and _same(latest, candidate, ignore_version=True):
                return latest, False
            if doc.description is None and base is not None:
                changed = sorted({*doc.verify} | ({"admit"} if doc.admit is not None else set()))
                candidate = PolicyVersion(
                    doc.name,
                    next_version,
                    verify,
                    admit,
                    f"{base.ref} with {', '.join(changed) or 'nothing'} changed",
                )
        else:
            candidate = PolicyVersion(doc.name, version, verify, admit, description)
        return self._put(candidate)

    def _put(self, policy: PolicyVersion) -> tuple[PolicyVersion, bool]:
        data = canonical_json(policy.as_dict())
        if self.store.put(self.key(policy.name, policy.version), data, create_only=True):
            return policy, True
        stored = self.get(policy.name, policy.version)
        if _same(stored, policy):
            return stored, False
        raise PolicyConflict(
            f"{policy.ref} is already published with other content; versions never change: "
            f"publish {policy.name}@{self.versions(policy.name)[-1] + 1} instead"
        )

    def ensure_builtins(self) -> None:
        """Register the built-in policies as version 1 (a no-op once they exist)."""
        for policy in builtin_policies().values():
            if not self.store.exists(self.key(policy.name, policy.version)):
                self._put(policy)


def _same(a: PolicyVersion, b: PolicyVersion, ignore_version: bool = False) -> bool:
    left, right = a.content(), b.content()
    if ignore_version:
        left.pop("version")
        right.pop("version")
    return (
        canonical_json(left) == canonical_json(right)
        and a.verify_fingerprint == b.verify_fingerprint
    )


def resolve_policy(ref: str) -> PolicyVersion:
    """A built-in policy by ``name`` or ``name@version``, without a registry (local commands)."""
    name, version = parse_ref(ref)
    policies = builtin_policies()
    if name not in policies:
        raise PolicyError(f"unknown policy {name!r}: known policies are {', '.join(policies)}")
    policy = policies[name]
    if version is not None and version != policy.version:
        raise PolicyError(f"policy {name} has no version {version} (latest is {policy.version})")
    return policy
