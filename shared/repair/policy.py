"""Repair policies: a verification policy plus the settings of the near-miss cascade.

The settings are gtrex 1.1.0's (mode, salvage, threshold, the four guards' knobs, the aligner),
so a gtrex policy file means the same here. A repair policy has three identities:

- ``fingerprint``: every setting, the threshold included;
- ``pre_threshold_fingerprint``: every setting but the threshold, plus the scorer revision: what
  a calibrated threshold depends on (which claims reach the alignment stage, how they are
  scored, which guards run), so a calibration is bound to it and never to its own output;
- ``scorer_fingerprint``: the score alone (scorer, revision, parameters, the projection the
  index reads).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from groundswell.shared.repair.params import (
    SCORER_ID,
    SCORER_REVISION,
    AlignmentError,
    AlignmentParams,
    finite_number,
)
from groundswell.shared.verify.policy import (
    ENGINE_REVISION,
    VERDICT_SETTINGS,
    PolicyError,
    VerifyPolicy,
    get_verify_policy,
)

REPAIR_MODES = ("off", "substitute", "annotate")
SALVAGE_POLICIES = ("off", "longest_grounded")
# Never calibrated (gtrex's hand-picked value): a repair at it says so.
DEFAULT_REPAIR_THRESHOLD = 0.65
# gtrex's built-in policies: only the default one substitutes; the permissive one also has
# its guards off (it exists to measure, not to repair).
BUILTIN_REPAIR_SETTINGS: dict[str, dict[str, Any]] = {
    "strict": {"repair_mode": "off"},
    "default": {"repair_mode": "substitute"},
    "permissive": {"repair_mode": "off", "numeric_guard": False, "polarity_guard": False},
}
THRESHOLD_SOURCES = ("calibration", "threshold_flag", "policy", "default")


def _digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _unit(name: str, value: Any, lower: float, upper: float) -> float:
    try:
        number = finite_number(name, value)
    except AlignmentError as exc:
        raise PolicyError(str(exc)) from None
    if not lower <= number <= upper:
        raise PolicyError(f"{name} must be in [{lower}, {upper}], not {value!r}")
    return number


@dataclass(frozen=True)
class RepairSettings:
    """The cascade's settings (gtrex's names and defaults)."""

    repair_mode: str = "substitute"
    repair_threshold: float | None = None
    salvage_policy: str = "off"
    numeric_guard: bool = True
    polarity_guard: bool = True
    min_repair_coverage: float = 0.7
    max_source_expansion: float = 1.5
    polarity_tokens: tuple[str, ...] | None = None
    alignment: AlignmentParams = field(default_factory=AlignmentParams)

    def __post_init__(self) -> None:
        if self.repair_mode not in REPAIR_MODES:
            raise PolicyError(
                f"repair_mode must be one of {', '.join(REPAIR_MODES)}, not {self.repair_mode!r}"
            )
        if self.salvage_policy not in SALVAGE_POLICIES:
            raise PolicyError(
                f"salvage_policy must be one of {', '.join(SALVAGE_POLICIES)}, "
                f"not {self.salvage_policy!r}"
            )
        for flag in ("numeric_guard", "polarity_guard"):
            if not isinstance(getattr(self, flag), bool):
                raise PolicyError(f"{flag} must be true or false")
        if self.repair_threshold is not None:
            value = _unit("repair_threshold", self.repair_threshold, 0.0, 1.0)
            object.__setattr__(self, "repair_threshold", value)
        object.__setattr__(
            self,
            "min_repair_coverage",
            _unit("min_repair_coverage", self.min_repair_coverage, 0.0, 1.0),
        )
        object.__setattr__(
            self,
            "max_source_expansion",
            _unit("max_source_expansion", self.max_source_expansion, 1.0, math.inf),
        )
        if self.polarity_tokens is not None:
            tokens = self.polarity_tokens
            if isinstance(tokens, str | Mapping) or not all(
                isinstance(t, str) and t for t in tokens
            ):
                raise PolicyError("polarity_tokens must be a list of non-empty words")
            from groundswell.shared.repair.guards import polarity_token_supported

            unusable = [t for t in tokens if not polarity_token_supported(t)]
            if unusable:
                raise PolicyError(
                    "polarity_tokens must be single words the polarity guard can read; "
                    f"not {unusable!r}"
                )
            object.__setattr__(self, "polarity_tokens", tuple(tokens))
        if not isinstance(self.alignment, AlignmentParams):
            raise PolicyError("alignment must be aligner parameters")

    def watched(self) -> frozenset[str]:
        """The polarity guard's vocabulary in force (lowercased)."""
        if self.polarity_tokens is None:
            from groundswell.shared.repair.guards import DEFAULT_POLARITY_TOKENS

            return frozenset(DEFAULT_POLARITY_TOKENS)
        return frozenset(t.lower() for t in self.polarity_tokens)

    def as_dict(self) -> dict[str, Any]:
        return {
            "repair_mode": self.repair_mode,
            "repair_threshold": self.repair_threshold,
            "salvage_policy": self.salvage_policy,
            "numeric_guard": self.numeric_guard,
            "polarity_guard": self.polarity_guard,
            "min_repair_coverage": self.min_repair_coverage,
            "max_source_expansion": self.max_source_expansion,
            "polarity_tokens": sorted(self.watched()),
            "alignment": self.alignment.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RepairSettings:
        """Settings from a policy document (gtrex's field names); absent fields default."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        try:
            if "alignment" in kwargs:
                kwargs["alignment"] = AlignmentParams.from_dict(kwargs["alignment"])
        except (AlignmentError, TypeError) as exc:
            raise PolicyError(f"alignment: {exc}") from None
        if isinstance(kwargs.get("polarity_tokens"), list):
            kwargs["polarity_tokens"] = tuple(kwargs["polarity_tokens"])
        return cls(**kwargs)

    @classmethod
    def for_policy(cls, policy: VerifyPolicy) -> RepairSettings:
        """gtrex's settings for its built-in policy of that name (substitute otherwise)."""
        return cls(**BUILTIN_REPAIR_SETTINGS.get(policy.name, {}))

    def lines(self) -> list[str]:
        """For ``explain``: every setting in force."""
        threshold = (
            f"(none: the uncalibrated default {DEFAULT_REPAIR_THRESHOLD} is used, with a warning)"
            if self.repair_threshold is None
            else repr(self.repair_threshold)
        )
        words = sorted(self.watched())
        return [
            f"  repair_mode          {self.repair_mode}",
            f"  salvage_policy       {self.salvage_policy}",
            f"  repair_threshold     {threshold}",
            f"  numeric_guard        {json.dumps(self.numeric_guard)}",
            f"  polarity_guard       {json.dumps(self.polarity_guard)}",
            f"  min_repair_coverage  {self.min_repair_coverage}",
            f"  max_source_expansion {self.max_source_expansion}",
            f"  polarity_tokens      {len(words)} words"
            + (" (the English default)" if self.polarity_tokens is None else ""),
            "  alignment            "
            + ", ".join(f"{k}={v}" for k, v in self.alignment.as_dict().items()),
        ]


_SETTING_NAMES = frozenset(f.name for f in fields(RepairSettings))
_VERIFY_NAMES = frozenset(
    {"name", "version", "description", "ladder_name", "ladder", *VERDICT_SETTINGS}
)


@dataclass(frozen=True)
class RepairPolicy:
    """What a repair depends on: the verification policy and the cascade's settings."""

    verify: VerifyPolicy
    settings: RepairSettings = field(default_factory=RepairSettings)

    def __getattr__(self, name: str) -> Any:
        # repair_mode, min_fragment_tokens, ...: one namespace, as gtrex's Policy.
        if name in _SETTING_NAMES:
            return getattr(self.settings, name)
        if name in _VERIFY_NAMES:
            return getattr(self.verify, name)
        raise AttributeError(name)

    def with_changes(self, **changes: Any) -> RepairPolicy:
        """A copy with some settings changed, verification's or the cascade's."""
        repair = {k: changes.pop(k) for k in list(changes) if k in _SETTING_NAMES}
        unknown = set(changes) - _VERIFY_NAMES
        if unknown:
            raise PolicyError(f"unknown policy settings: {', '.join(sorted(unknown))}")
        verify = self.verify.with_changes(**changes) if changes else self.verify
        try:
            settings = replace(self.settings, **repair) if repair else self.settings
        except TypeError as exc:
            raise PolicyError(str(exc)) from None
        return RepairPolicy(verify, settings)

    def risk(self) -> str | None:
        """Why this policy may store text that says something else than the claim, if it may."""
        unsound = any(
            not t.sound for t in self.verify.resolved_ladder.tiers[: self.verify.accept_index + 1]
        )
        guards_off = not (self.settings.numeric_guard and self.settings.polarity_guard)
        if unsound and guards_off and self.settings.repair_mode == "substitute":
            return (
                "this policy accepts an unsound tier, substitutes, and has the numeric or "
                "polarity guard off: a repair can store source text whose figures or negation "
                "differ from the claim; use repair mode off or annotate, or keep both guards on"
            )
        return None

    def with_threshold(self, threshold: float) -> RepairPolicy:
        return self.with_changes(repair_threshold=threshold)

    # --- identity -------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"verify": self.verify.identity(), "repair": self.settings.as_dict()}

    @property
    def fingerprint(self) -> str:
        return _digest(self.identity())

    @property
    def pre_threshold_fingerprint(self) -> str:
        identity = self.identity()
        del identity["repair"]["repair_threshold"]
        identity["scorer_revision"] = SCORER_REVISION
        return _digest({"pre_threshold": identity})

    @property
    def scorer_fingerprint(self) -> str:
        return _digest(
            {
                "scorer": SCORER_ID,
                "scorer_revision": SCORER_REVISION,
                "alignment": self.settings.alignment.as_dict(),
                "index_projection": [s.spec() for s in self.verify.resolved_ladder.tiers[0].steps],
            }
        )

    def identities(self) -> dict[str, Any]:
        """Every identity a manifest or a calibration refers to."""
        return {
            "fingerprint": self.fingerprint,
            "pre_threshold_fingerprint": self.pre_threshold_fingerprint,
            "scorer_fingerprint": self.scorer_fingerprint,
            "verifier_revision": ENGINE_REVISION,
            "scorer_revision": SCORER_REVISION,
        }

    def binding(self) -> dict[str, Any]:
        """What a calibration made under this policy records about it."""
        from groundswell.shared import __version__

        identities = self.identities()
        return {
            "pre_threshold_fingerprint": identities["pre_threshold_fingerprint"],
            "scorer_fingerprint": identities["scorer_fingerprint"],
            "verifier_revision": identities["verifier_revision"],
            "scorer_revision": identities["scorer_revision"],
            "calibrated_under_policy": identities["fingerprint"],
            "groundswell_version": __version__,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "verify": self.verify.as_dict(),
            "repair": self.settings.as_dict(),
            "fingerprint": self.fingerprint,
        }


def get_repair_policy(ref: str) -> RepairPolicy:
    """A built-in policy by name, with gtrex's repair settings for it."""
    verify = get_verify_policy(ref)
    return RepairPolicy(verify, RepairSettings.for_policy(verify))
