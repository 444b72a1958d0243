"""The normalization ladder: cumulative tiers, tightest first, each declaring whether it is sound.

A tier applies its steps to the previous tier's output, so tier *i* of a text is the text pushed
through the steps of tiers ``0..i``. A claim goes through exactly the same steps as its source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groundswell.shared.text.transforms import (
    CASE_STEPS,
    OCR_STEPS,
    SKELETON_STEPS,
    TYPOGRAPHY_STEPS,
    WHITESPACE_STEPS,
    SeparateMarkers,
    Transform,
    TransformError,
    is_registered,
    transform_from_spec,
)

RATIONALES = {
    "exact": (
        "The source's own characters, once declared layout markers are separated. Needs no "
        "assumption."
    ),
    "whitespace": (
        "Any run of whitespace (line breaks, tabs, non-breaking and other Unicode spaces) "
        "counts as one space. Assumes layout whitespace carries no meaning, as in text "
        "extracted from HTML or PDF."
    ),
    "typography": (
        "HTML entities decoded; curly quotes, dashes, the minus sign and special spaces "
        "written as ASCII; invisible characters and soft hyphens removed; compatibility "
        "forms (ligatures, full-width letters) folded one character at a time, except "
        "superscripts, subscripts, and fractions or circled numbers next to a figure. "
        "Assumes these are presentation; where a dash and a minus sign differ, don't accept it."
    ),
    "case": (
        "Letter case ignored (Unicode case folding). Assumes case carries no meaning, which "
        "is false for units (mW and MW), tickers and defined terms."
    ),
    "ocr": (
        "UNSOUND: the letters a recogniser confuses count as one ('rn' and 'm', '0' and 'o', "
        "'1', 'i' and 'l', 'vv' and 'w'), and a word broken by a line-end hyphen is joined, "
        "so 'burn' and 'bum', '10' and 'lo' become the same text. For text recognised from a "
        "scan; a diagnostic, not evidence."
    ),
    "skeleton": (
        "UNSOUND: only letters and digits are compared, so '($10.0 million)' and '$100 "
        "million' become the same text; signs, decimal points and negation in parentheses "
        "are lost. A diagnostic, not evidence."
    ),
}


@dataclass(frozen=True)
class Tier:
    name: str
    steps: tuple[Transform, ...]
    sound: bool
    rationale: str = ""

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sound": self.sound,
            "rationale": self.rationale,
            "steps": [step.spec() for step in self.steps],
        }


class LadderError(ValueError):
    """A ladder that cannot be used: empty, duplicate names, unregistered steps, bad order."""


@dataclass(frozen=True)
class Ladder:
    tiers: tuple[Tier, ...]

    def __post_init__(self) -> None:
        if not self.tiers:
            raise LadderError("a ladder needs at least one tier")
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise LadderError(f"tier names must be unique: {names}")
        seen_unsound = False
        for tier in self.tiers:
            if not isinstance(tier.name, str) or not tier.name:
                raise LadderError("every tier needs a name")
            if not isinstance(tier.sound, bool):
                raise LadderError(f"tier {tier.name!r}: 'sound' must be a boolean")
            for step in tier.steps:
                if not is_registered(step):
                    raise LadderError(
                        f"tier {tier.name!r}: step {step!r} is not a registered transform; "
                        "register it with shared.text.register_transform"
                    )
            if tier.sound and seen_unsound:
                raise LadderError(
                    f"sound tier {tier.name!r} comes after an unsound one; every sound tier "
                    "must precede every unsound tier"
                )
            seen_unsound = seen_unsound or not tier.sound

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tiers]

    def index_of(self, name: str) -> int:
        for i, tier in enumerate(self.tiers):
            if tier.name == name:
                return i
        raise LadderError(f"no tier named {name!r} in ladder {self.names}")

    def chains(self) -> list[tuple[Transform, ...]]:
        """For each tier, every step from the source up to and including that tier."""
        out: list[tuple[Transform, ...]] = []
        acc: tuple[Transform, ...] = ()
        for tier in self.tiers:
            acc = acc + tier.steps
            out.append(acc)
        return out

    def normalize(self, text: str) -> list[str]:
        """``text`` pushed through each tier on its own (cumulatively)."""
        out: list[str] = []
        for tier in self.tiers:
            for step in tier.steps:
                text = step.apply(text)
            out.append(text)
        return out

    def spec(self) -> list[dict[str, Any]]:
        return [tier.spec() for tier in self.tiers]

    @classmethod
    def from_spec(cls, spec: Sequence[Mapping[str, Any]]) -> Ladder:
        if not isinstance(spec, Sequence) or isinstance(spec, str | bytes):
            raise LadderError("a ladder is a list of tiers")
        tiers = []
        for item in spec:
            if not isinstance(item, Mapping):
                raise LadderError(f"a tier is an object, not {item!r}")
            unknown = set(item) - {"name", "sound", "rationale", "steps"}
            if unknown:
                raise LadderError(f"unknown tier fields {sorted(unknown)}")
            try:
                steps = tuple(transform_from_spec(s) for s in item.get("steps") or ())
            except TransformError as exc:
                raise LadderError(f"tier {item.get('name')!r}: {exc}") from exc
            rationale = item.get("rationale", "")
            tiers.append(
                Tier(
                    name=item.get("name", ""),
                    steps=steps,
                    sound=item.get("sound"),  # type: ignore[arg-type]
                    rationale=rationale if isinstance(rationale, str) else "",
                )
            )
        return cls(tuple(tiers))


def _marker_steps(marker_pattern: str | None) -> tuple[Transform, ...]:
    return (SeparateMarkers(marker_pattern),) if marker_pattern else ()


def default_ladder(marker_pattern: str | None = None) -> Ladder:
    """exact, whitespace, typography, case (all sound), then skeleton (unsound)."""
    return Ladder(
        (
            Tier("exact", _marker_steps(marker_pattern), True, RATIONALES["exact"]),
            Tier("whitespace", WHITESPACE_STEPS, True, RATIONALES["whitespace"]),
            Tier("typography", TYPOGRAPHY_STEPS, True, RATIONALES["typography"]),
            Tier("case", CASE_STEPS, True, RATIONALES["case"]),
            Tier("skeleton", SKELETON_STEPS, False, RATIONALES["skeleton"]),
        )
    )


def ocr_ladder(marker_pattern: str | None = None) -> Ladder:
    """The default ladder with the OCR confusions folded between case and skeleton: the
    ``ocr`` tier (unsound) says which quotations a recogniser's usual errors would explain."""
    tiers = default_ladder(marker_pattern).tiers
    return Ladder((*tiers[:4], Tier("ocr", OCR_STEPS, False, RATIONALES["ocr"]), *tiers[4:]))


def strict_ladder(marker_pattern: str | None = None) -> Ladder:
    """The default ladder without case folding and skeleton: exact, whitespace, typography."""
    return Ladder(default_ladder(marker_pattern).tiers[:3])


BUILTIN_LADDERS = {"default": default_ladder, "strict": strict_ladder, "ocr": ocr_ladder}


def standard_chain(marker_pattern: str | None) -> tuple[Transform, ...]:
    """Every step of the default ladder in order: the chain the search index is built on."""
    return (
        _marker_steps(marker_pattern)
        + WHITESPACE_STEPS
        + TYPOGRAPHY_STEPS
        + CASE_STEPS
        + SKELETON_STEPS
    )
