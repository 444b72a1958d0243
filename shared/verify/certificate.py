"""The certificate of one verification: verdict, tier, and offsets into the original text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

VERDICTS = ("grounded", "grounded_loose", "stitched", "unlocated", "degenerate")


@dataclass(frozen=True)
class Certificate:
    """What a policy says about one quotation.

    ``start``/``end`` are half-open character offsets into the original source text, and
    ``span_text`` is the source's own characters there. ``grounded`` is whether the policy
    accepts the quotation; ``grounded_loose`` means it was found only at a tier the policy does
    not accept.
    """

    claim: str
    verdict: str
    tier: str | None
    tier_sound: bool
    grounded: bool
    start: int | None
    end: int | None
    span_text: str | None
    contiguous: bool
    had_ellipsis: bool
    fragments: int
    fragments_found: int
    policy_fingerprint: str
    source_sha256: str
    notes: tuple[str, ...] = ()
    fragment_statuses: tuple[str, ...] = ()
    scope: str = "document"
    requested_span: tuple[int, int] | None = None
    found_elsewhere: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-able, with gtrex's field names and order (the claim itself is left out)."""
        return {
            "verdict": self.verdict,
            "tier": self.tier,
            "tier_sound": self.tier_sound,
            "grounded": self.grounded,
            "start": self.start,
            "end": self.end,
            "span_text": self.span_text,
            "contiguous": self.contiguous,
            "had_ellipsis": self.had_ellipsis,
            "fragments": self.fragments,
            "fragments_found": self.fragments_found,
            "fragment_statuses": list(self.fragment_statuses),
            "scope": self.scope,
            "requested_span": list(self.requested_span) if self.requested_span else None,
            "found_elsewhere": self.found_elsewhere,
            "policy_fingerprint": self.policy_fingerprint,
            "source_sha256": self.source_sha256,
            "notes": list(self.notes),
        }
