"""Verification policies as data: named, versioned, fingerprinted.

A policy records every choice that can move a verdict: the ladder (tiers, their steps with
versions and parameters, their declared soundness), parser markers, the tier through which a
match counts as grounded, whether an unsound tier may count, what to do with an ellipsis, the
minimum fragment length, whether stitched fragments count, and whether lexical boundaries are
enforced. The fingerprint digests exactly those settings plus ``ENGINE_REVISION``; names,
versions, descriptions and rationales are labels and are not digested.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groundswell.shared.text.ladder import BUILTIN_LADDERS, Ladder, LadderError, standard_chain
from groundswell.shared.text.transforms import (
    TransformError,
    compile_marker,
    current_regex_engine,
    regex_engine,
)

# Bump whenever a change to the engine can move a verdict, tier or offset for an unchanged
# policy: every fingerprint changes with it.
ENGINE_REVISION = 1
POLICY_SCHEMA = "groundswell/verify-policy/1"
ELLIPSIS_POLICIES = ("reject", "fragments", "ignore")

# The settings besides the ladder that can move a verdict (gtrex's names for them too).
VERDICT_SETTINGS = (
    "marker_pattern",
    "accept_through",
    "allow_unsound",
    "ellipsis_policy",
    "min_fragment_tokens",
    "require_contiguous",
    "match_boundaries",
)
# Fields of a policy file that become constructor arguments as they are.
_PASSED_THROUGH = ("name", "version", "description", *VERDICT_SETTINGS)
_FIELDS = {"schema", "engine_revision", "fingerprint", "ladder_name", "ladder", *_PASSED_THROUGH}


class PolicyError(ValueError):
    """A policy that cannot be used, with the reason."""


@dataclass(frozen=True)
class VerifyPolicy:
    name: str = "custom"
    version: int = 1
    ladder_name: str = "default"
    ladder: Ladder | None = None
    marker_pattern: str | None = None
    accept_through: str | None = None
    allow_unsound: bool = False
    ellipsis_policy: str = "fragments"
    min_fragment_tokens: int = 8
    require_contiguous: bool = True
    match_boundaries: bool = True
    description: str = ""
    # Which engine runs its marker patterns: 're' (as gtrex), or 're2' for policies from
    # the registry. Not a setting that moves a verdict on any pattern RE2 accepts, so it is
    # outside the fingerprint; taken from the context the policy is built in.
    regex_engine: str = field(default="", compare=False, repr=False)
    # Derived, filled in by __post_init__.
    resolved_ladder: Ladder = field(init=False, repr=False, compare=False)
    accept_index: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.regex_engine:
            object.__setattr__(self, "regex_engine", current_regex_engine())
        with regex_engine(self.regex_engine):
            self._check_and_resolve()

    def _check_and_resolve(self) -> None:
        for flag in ("allow_unsound", "require_contiguous", "match_boundaries"):
            if not isinstance(getattr(self, flag), bool):
                raise PolicyError(f"{flag} must be true or false")
        if not isinstance(self.name, str) or not self.name or "@" in self.name:
            raise PolicyError("a policy name is a non-empty string without '@'")
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise PolicyError("a policy version is a positive integer")
        if self.ellipsis_policy not in ELLIPSIS_POLICIES:
            raise PolicyError(
                f"ellipsis_policy must be one of {', '.join(ELLIPSIS_POLICIES)}, "
                f"not {self.ellipsis_policy!r}"
            )
        n = self.min_fragment_tokens
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise PolicyError("min_fragment_tokens must be a positive integer")
        if self.marker_pattern is not None:
            if not isinstance(self.marker_pattern, str) or not self.marker_pattern:
                raise PolicyError("marker_pattern must be a non-empty regular expression")
            try:
                compile_marker(self.marker_pattern, self.regex_engine)
            except TransformError as exc:
                raise PolicyError(str(exc)) from exc
        if self.ladder is not None:
            if self.ladder_name != "custom":
                raise PolicyError("a policy with its own ladder has ladder_name 'custom'")
            if self.marker_pattern is not None:
                raise PolicyError(
                    "marker_pattern applies to the built-in ladders; a custom ladder declares "
                    "a separate_markers step in its first tier instead"
                )
            ladder = self.ladder
        else:
            factory = BUILTIN_LADDERS.get(self.ladder_name)
            if factory is None:
                raise PolicyError(
                    f"unknown ladder {self.ladder_name!r}: use 'default', 'strict', 'ocr', or give a "
                    "custom ladder"
                )
            ladder = factory(self.marker_pattern)
        sound = [t.name for t in ladder.tiers if t.sound]
        if self.accept_through is None:
            if not sound:
                raise PolicyError("the ladder has no sound tier to accept through")
            index = ladder.names.index(sound[-1])
        else:
            try:
                index = ladder.index_of(self.accept_through)
            except LadderError as exc:
                raise PolicyError(str(exc)) from exc
        unsound = [t.name for t in ladder.tiers[: index + 1] if not t.sound]
        if unsound and not self.allow_unsound:
            raise PolicyError(
                f"accept_through={ladder.tiers[index].name!r} accepts the unsound tier "
                f"{unsound[0]!r}; set allow_unsound to true to count it as grounded"
            )
        object.__setattr__(self, "resolved_ladder", ladder)
        object.__setattr__(self, "accept_index", index)

    # --- identity -------------------------------------------------------------------------

    @property
    def accept_tier(self) -> str:
        return self.resolved_ladder.tiers[self.accept_index].name

    @property
    def ref(self) -> str:
        """``name@version``."""
        return f"{self.name}@{self.version}"

    def identity(self) -> dict[str, Any]:
        """Every setting that can move a verdict, and the engine revision: what is digested."""
        return {
            "schema": POLICY_SCHEMA,
            "engine_revision": ENGINE_REVISION,
            "ladder": [
                {
                    "name": t.name,
                    "sound": t.sound,
                    "steps": [s.spec() for s in t.steps],
                }
                for t in self.resolved_ladder.tiers
            ],
            "accept_through": self.accept_tier,
            "allow_unsound": self.allow_unsound,
            "ellipsis_policy": self.ellipsis_policy,
            "min_fragment_tokens": self.min_fragment_tokens,
            "require_contiguous": self.require_contiguous,
            "match_boundaries": self.match_boundaries,
        }

    @property
    def fingerprint(self) -> str:
        cached = self.__dict__.get("_fingerprint")
        if cached is None:
            doc = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
            cached = hashlib.sha256(doc.encode("utf-8")).hexdigest()[:16]
            object.__setattr__(self, "_fingerprint", cached)
        return cached

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VerifyPolicy) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    @property
    def uses_standard_chain(self) -> bool:
        """Whether every tier is a prefix of the default ladder's steps (the search index and
        its guarantees are built for that chain)."""
        standard = standard_chain(self.marker_pattern)
        chains = self.resolved_ladder.chains()
        return all(chain == standard[: len(chain)] for chain in chains)

    # --- serialization ----------------------------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": POLICY_SCHEMA,
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "engine_revision": ENGINE_REVISION,
            "fingerprint": self.fingerprint,
            "ladder_name": self.ladder_name,
            "ladder": self.resolved_ladder.spec(),
            "marker_pattern": self.marker_pattern,
            "accept_through": self.accept_tier,
            "allow_unsound": self.allow_unsound,
            "ellipsis_policy": self.ellipsis_policy,
            "min_fragment_tokens": self.min_fragment_tokens,
            "require_contiguous": self.require_contiguous,
            "match_boundaries": self.match_boundaries,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerifyPolicy:
        if not isinstance(data, Mapping):
            raise PolicyError("a policy is a JSON object")
        unknown = set(data) - _FIELDS
        if unknown:
            raise PolicyError(f"unknown policy fields: {', '.join(sorted(unknown))}")
        schema = data.get("schema", POLICY_SCHEMA)
        if schema != POLICY_SCHEMA:
            raise PolicyError(f"unsupported policy schema {schema!r} (this is {POLICY_SCHEMA})")
        ladder_name = data.get("ladder_name", "default")
        ladder: Ladder | None = None
        if ladder_name == "custom":
            try:
                ladder = Ladder.from_spec(data.get("ladder") or [])
            except (LadderError, TransformError) as exc:
                raise PolicyError(f"invalid ladder: {exc}") from exc
        elif "ladder" in data and data["ladder"] is not None:
            # A built-in ladder is named, never replaced by a serialized one: the serialized
            # steps must be exactly the built-in's.
            expected = BUILTIN_LADDERS.get(ladder_name)
            if expected is None:
                raise PolicyError(f"unknown ladder {ladder_name!r}")
            try:
                given = Ladder.from_spec(data["ladder"])
            except (LadderError, TransformError) as exc:
                raise PolicyError(f"invalid ladder: {exc}") from exc
            built = expected(data.get("marker_pattern"))
            if [(t.name, t.sound, t.steps) for t in given.tiers] != [
                (t.name, t.sound, t.steps) for t in built.tiers
            ]:
                raise PolicyError(
                    f"the serialized ladder differs from the built-in {ladder_name!r} ladder; "
                    "use ladder_name 'custom' for your own"
                )
        kwargs: dict[str, Any] = {"ladder_name": ladder_name, "ladder": ladder}
        for key in _PASSED_THROUGH:
            if key in data:
                kwargs[key] = data[key]
        try:
            policy = cls(**kwargs)
        except TypeError as exc:
            raise PolicyError(str(exc)) from exc
        stored = data.get("fingerprint")
        revision = data.get("engine_revision", ENGINE_REVISION)
        if stored is not None and revision == ENGINE_REVISION and stored != policy.fingerprint:
            raise PolicyError(
                f"stored fingerprint {stored} does not match the settings ({policy.fingerprint}); "
                "the file was edited or is corrupt"
            )
        return policy

    @classmethod
    def load(cls, path: str | Path) -> VerifyPolicy:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise PolicyError(f"{path}: cannot read: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise PolicyError(f"{path}: invalid JSON: {exc}") from exc
        try:
            return cls.from_dict(data)
        except PolicyError as exc:
            raise PolicyError(f"{path}: {exc}") from exc

    def with_changes(self, **changes: Any) -> VerifyPolicy:
        """A copy with some settings changed (a new fingerprint if a verdict can move)."""
        try:
            return replace(self, **changes)
        except TypeError as exc:
            raise PolicyError(str(exc)) from exc


STRICT = VerifyPolicy(
    name="strict",
    ladder_name="strict",
    accept_through="exact",
    ellipsis_policy="reject",
    description="Only character-identical quotations are grounded.",
)
DEFAULT = VerifyPolicy(
    name="default",
    ladder_name="default",
    accept_through="case",
    ellipsis_policy="fragments",
    description=(
        "The sound tiers (exact, whitespace, typography, case) are grounded; fragments joined "
        "by an ellipsis are reported as stitched, not grounded."
    ),
)
PERMISSIVE = VerifyPolicy(
    name="permissive",
    ladder_name="default",
    accept_through="skeleton",
    allow_unsound=True,
    ellipsis_policy="ignore",
    require_contiguous=False,
    description=(
        "Accepts the unsound skeleton tier and ignores ellipses. It measures how much such a "
        "policy inflates a rate; it is not a recommendation."
    ),
)

BUILTIN_VERIFY_POLICIES: dict[str, VerifyPolicy] = {
    "strict": STRICT,
    "default": DEFAULT,
    "permissive": PERMISSIVE,
}


def ocr_variant(policy: VerifyPolicy) -> VerifyPolicy:
    """``policy`` on the ``ocr`` ladder (its own tiers with the OCR confusions folded between
    case and skeleton), accepting through the same tier: what ``sensitivity --ocr`` verifies
    with to count the quotations only a recogniser's usual errors explain. A policy with its
    own ladder has no such variant."""
    if policy.ladder is not None:
        raise PolicyError(
            f"{policy.ref} has its own ladder: add a fold_ocr_confusions step to it instead"
        )
    return replace(policy, name=f"{policy.name}-ocr", ladder_name="ocr", ladder=None,
                   accept_through=policy.accept_tier)  # fmt: skip


def get_verify_policy(ref: str) -> VerifyPolicy:
    """A built-in policy by name or ``name@version``."""
    name, _, version = ref.partition("@")
    policy = BUILTIN_VERIFY_POLICIES.get(name)
    if policy is None:
        raise PolicyError(
            f"unknown verification policy {ref!r}; built-ins: " + ", ".join(BUILTIN_VERIFY_POLICIES)
        )
    if version and version != str(policy.version):
        raise PolicyError(f"{name} has no version {version} (latest is {policy.version})")
    return policy
