"""The aligner's parameters and scorer identity, apart from the aligner itself: a policy holds
them, and reading a policy (``verify`` does, for gtrex's files) should not load the aligner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SCORER_ID = "groundswell.align.seeded_smith_waterman"
# Bump whenever a score can change for the same claim, source and parameters: a calibration is
# bound to it.
SCORER_REVISION = 1


class AlignmentError(ValueError):
    """Alignment parameters that cannot be used."""


def _integer(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AlignmentError(f"{name} must be an integer, not {value!r}")
    if value < minimum:
        raise AlignmentError(f"{name} must be >= {minimum}, not {value}")
    return value


def finite_number(name: str, value: Any) -> float:
    """``value`` as a finite float, refusing booleans and non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AlignmentError(f"{name} must be a number, not {value!r}")
    try:
        result = float(value)
    except OverflowError:
        raise AlignmentError(f"{name} is too large") from None
    if not math.isfinite(result):
        raise AlignmentError(f"{name} must be finite, not {value!r}")
    return result


@dataclass(frozen=True)
class AlignmentParams:
    """Every knob of the aligner (gtrex's names and defaults); all are in the scorer identity."""

    seed_ngram: int = 3
    match_score: float = 2.0
    mismatch_score: float = -1.0
    gap_open: float = -2.0
    gap_extend: float = -0.5
    max_regions: int = 24
    region_pad_tokens: int = 12
    coverage_weight: float = 0.65
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        _integer("seed_ngram", self.seed_ngram, 1)
        _integer("max_regions", self.max_regions, 1)
        _integer("region_pad_tokens", self.region_pad_tokens, 0)
        # Floats, so 2 and 2.0 are one configuration with one fingerprint.
        match = finite_number("match_score", self.match_score)
        if match <= 0:
            raise AlignmentError(f"match_score must be > 0, not {match}")
        object.__setattr__(self, "match_score", match)
        for name in ("mismatch_score", "gap_open", "gap_extend"):
            value = finite_number(name, getattr(self, name))
            if value > 0:
                raise AlignmentError(f"{name} must be <= 0, not {value}")
            object.__setattr__(self, name, value)
        weight = finite_number("coverage_weight", self.coverage_weight)
        if not 0 <= weight <= 1:
            raise AlignmentError(f"coverage_weight must be in [0, 1], not {weight}")
        object.__setattr__(self, "coverage_weight", weight)
        if not isinstance(self.case_sensitive, bool):
            raise AlignmentError(
                f"case_sensitive must be true or false, not {self.case_sensitive!r}"
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed_ngram": self.seed_ngram,
            "match_score": self.match_score,
            "mismatch_score": self.mismatch_score,
            "gap_open": self.gap_open,
            "gap_extend": self.gap_extend,
            "max_regions": self.max_regions,
            "region_pad_tokens": self.region_pad_tokens,
            "coverage_weight": self.coverage_weight,
            "case_sensitive": self.case_sensitive,
        }

    @classmethod
    def from_dict(cls, data: Any) -> AlignmentParams:
        if not isinstance(data, dict):
            raise AlignmentError("alignment must be a JSON object")
        unknown = set(data) - set(cls().as_dict())
        if unknown:
            raise AlignmentError(f"unknown alignment fields: {', '.join(sorted(unknown))}")
        return cls(**data)
