"""Reporting on certificates: the ladder profile, the run manifest, sensitivity, explain."""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from groundswell.shared import __version__
from groundswell.shared.text.projections import Projections
from groundswell.shared.text.unicode import UNICODE_VERSION
from groundswell.shared.verify.certificate import Certificate
from groundswell.shared.verify.engine import Verifier
from groundswell.shared.verify.policy import ENGINE_REVISION, VerifyPolicy, ocr_variant

MANIFEST_SCHEMA = "groundswell/verify-manifest/1"


class ProfileError(ValueError):
    """Certificates made under another policy than the profile's."""


class LadderProfile:
    """Counts of certificates by verdict and tier, under one policy (additive, mergeable)."""

    def __init__(self, policy: VerifyPolicy) -> None:
        self.policy = policy
        self.tiers = policy.resolved_ladder.names
        self.total = 0
        self.accepted = 0
        self.by_verdict: dict[str, int] = {}
        self.by_tier: dict[str, int] = {}

    def add(self, cert: Certificate | Mapping[str, Any]) -> None:
        d = cert.as_dict() if isinstance(cert, Certificate) else cert
        if d["policy_fingerprint"] != self.policy.fingerprint:
            raise ProfileError(
                f"certificate made under policy {d['policy_fingerprint']}, not "
                f"{self.policy.fingerprint}"
            )
        self.total += 1
        self.accepted += bool(d["grounded"])
        verdict = d["verdict"]
        self.by_verdict[verdict] = self.by_verdict.get(verdict, 0) + 1
        key = d["tier"] if d["tier"] is not None else verdict
        self.by_tier[key] = self.by_tier.get(key, 0) + 1

    def add_all(self, certs: Iterable[Certificate | Mapping[str, Any]]) -> LadderProfile:
        for cert in certs:
            self.add(cert)
        return self

    def merge(self, other: LadderProfile) -> LadderProfile:
        if other.policy.fingerprint != self.policy.fingerprint:
            raise ProfileError("cannot merge profiles made under different policies")
        merged = LadderProfile(self.policy)
        for part in (self, other):
            merged.total += part.total
            merged.accepted += part.accepted
            for src, dst in ((part.by_verdict, merged.by_verdict), (part.by_tier, merged.by_tier)):
                for k, v in src.items():
                    dst[k] = dst.get(k, 0) + v
        return merged

    def _share(self, n: int) -> float:
        return n / self.total if self.total else 0.0

    @property
    def contiguous_through_accept(self) -> int:
        """Claims found as one contiguous span at a tier the policy accepts."""
        accept = self.policy.accept_index
        return sum(self.by_tier.get(name, 0) for name in self.tiers[: accept + 1])

    def rates(self) -> dict[str, Any]:
        return {
            "policy_accepted_rate": self._share(self.accepted),
            "accept_through": self.policy.accept_tier,
            "contiguous_rate_through_accept_tier": self._share(self.contiguous_through_accept),
            "exact_floor": self._share(self.by_tier.get(self.tiers[0], 0)),
        }

    def as_dict(self) -> dict[str, Any]:
        cumulative = []
        running = 0
        for name in self.tiers:
            at = self.by_tier.get(name, 0)
            running += at
            cumulative.append(
                {"tier": name, "at_tier": at, "cumulative": running, "share": self._share(running)}
            )
        return {
            "policy_fingerprint": self.policy.fingerprint,
            "total": self.total,
            "accepted": self.accepted,
            "accepted_rate": self._share(self.accepted),
            "by_verdict": dict(sorted(self.by_verdict.items())),
            "by_tier": dict(sorted(self.by_tier.items())),
            "cumulative": cumulative,
            "grounded_loose": self.by_verdict.get("grounded_loose", 0),
            "stitched": self.by_verdict.get("stitched", 0),
            "unlocated": self.by_verdict.get("unlocated", 0),
            "degenerate": self.by_verdict.get("degenerate", 0),
        }

    def table(self) -> list[tuple[str, str, str, str]]:
        """Rows ``(tier, at tier, cumulative, share)`` for a terminal table."""
        rows = [
            (row["tier"], str(row["at_tier"]), str(row["cumulative"]), f"{100 * row['share']:.2f}%")
            for row in self.as_dict()["cumulative"]
        ]
        for verdict in ("stitched", "unlocated", "degenerate"):
            n = self.by_verdict.get(verdict, 0)
            if n:
                rows.append((verdict, str(n), "-", f"{100 * self._share(n):.2f}%"))
        return rows


def tool_identity() -> dict[str, Any]:
    return {
        "name": "groundswell",
        "version": __version__,
        "engine_revision": ENGINE_REVISION,
        "python": platform.python_version(),
        "unicode_version": UNICODE_VERSION,
        "platform": platform.platform(),
    }


def manifest(
    policy: VerifyPolicy,
    profile: LadderProfile,
    inputs: Mapping[str, Any],
) -> dict[str, Any]:
    """A run manifest: what was run (tool, policy, Unicode database) and what it found."""
    if profile.policy.fingerprint != policy.fingerprint:
        raise ProfileError("the profile was made under another policy")
    return {
        "schema": MANIFEST_SCHEMA,
        "tool": tool_identity(),
        "generated_utc": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "policy": policy.as_dict(),
        "policy_fingerprint": policy.fingerprint,
        "policy_ref": policy.ref,
        "rates": profile.rates(),
        "profile": profile.as_dict(),
        "inputs": dict(inputs),
    }


def sensitivity(
    claims_by_source: Iterable[tuple[str, Sequence[str]]],
    policies: Mapping[str, VerifyPolicy],
    *,
    ocr: bool = False,
) -> dict[str, dict[str, Any]]:
    """The same claims re-verified under each policy: rates side by side; with ``ocr``, also
    how many each policy's ``ocr`` variant locates only at the (unsound) OCR-confusion tier.

    Each source is normalized once for all the policies (they share its projections).
    """
    profiles = {name: LadderProfile(policy) for name, policy in policies.items()}
    variants = {name: ocr_variant(policy) for name, policy in policies.items()} if ocr else {}
    explained = dict.fromkeys(variants, 0)
    for source, claims in claims_by_source:
        projections = Projections(source)
        for name, policy in policies.items():
            verifier = Verifier(source, policy, projections=projections)
            certs = [verifier.verify(claim) for claim in claims]
            profiles[name].add_all(certs)
            if name in variants:
                # Only a claim no sound tier found can be found first at the ocr tier.
                sound = {t.name for t in policy.resolved_ladder.tiers if t.sound}
                loose = Verifier(source, variants[name], projections=projections)
                explained[name] += sum(
                    loose.verify(c).tier == "ocr"
                    for c, cert in zip(claims, certs, strict=True)
                    if cert.tier not in sound
                )
    out: dict[str, dict[str, Any]] = {}
    for name, profile in profiles.items():
        rates = profile.rates()
        out[name] = {
            "fingerprint": profile.policy.fingerprint,
            "accept_through": rates["accept_through"],
            "grounded_rate": rates["policy_accepted_rate"],
            "contiguous_rate": rates["contiguous_rate_through_accept_tier"],
            "exact_floor": rates["exact_floor"],
            "profile": profile.as_dict(),
        }
        if name in variants:
            # Found only once the recogniser's usual confusions are folded: never grounded.
            out[name]["ocr_explained"] = explained[name]
            out[name]["ocr_explained_rate"] = profile._share(explained[name])
    return out


def spread_points(result: Mapping[str, Mapping[str, Any]]) -> float:
    """The spread of the grounding rate across policies, in percentage points."""
    rates = [row["grounded_rate"] for row in result.values()]
    return 100 * (max(rates) - min(rates)) if rates else 0.0


def explain(policy: VerifyPolicy) -> str:
    """The policy in words: identity, ladder, and every assumption a verdict rests on."""
    lines = [
        f"policy        {policy.ref}",
        f"fingerprint   {policy.fingerprint}",
        f"engine        groundswell {__version__}, engine revision {ENGINE_REVISION}",
        f"unicode       {UNICODE_VERSION} (Python {sys.version.split()[0]}); verdicts depend on it",
    ]
    if policy.description:
        lines.append(f"about         {policy.description}")
    lines.append("")
    lines.append(f"ladder ({policy.ladder_name}), tightest first; every tier applies its steps")
    lines.append("to the previous tier's text, and a claim goes through the same steps:")
    for i, tier in enumerate(policy.resolved_ladder.tiers):
        accepted = i <= policy.accept_index
        mark = "accepted" if accepted else "reported only (grounded_loose)"
        sound = "sound" if tier.sound else "UNSOUND"
        lines.append(f"  {i + 1}. {tier.name:<11} {sound:<8} {mark}")
        steps = ", ".join(repr(s) for s in tier.steps) or "(no step: the text as it is)"
        lines.append(f"       steps: {steps}")
        if tier.rationale:
            lines.append(f"       assumes: {tier.rationale}")
    lines.append("")
    lines.append("decisions:")
    unsound = "yes" if policy.allow_unsound else "no"
    ellipsis = {
        "reject": "a quotation with an ellipsis that is not found as it stands is unlocated",
        "fragments": (
            "a quotation with an ellipsis that is not found as it stands is split at the "
            "ellipsis; each fragment is looked for on its own at the accepted tiers"
        ),
        "ignore": "an ellipsis gets no special treatment",
    }[policy.ellipsis_policy]
    lines += [
        f"  accept_through      {policy.accept_tier}: a match at this tier or tighter is grounded",
        f"  allow_unsound       {unsound}: whether an unsound tier may count as grounded",
        f"  ellipsis_policy     {policy.ellipsis_policy}: {ellipsis}",
        f"  min_fragment_tokens {policy.min_fragment_tokens}: shorter fragments are not checked "
        "(punctuation marks count as tokens)",
        f"  require_contiguous  {'yes' if policy.require_contiguous else 'no'}: "
        + (
            "fragments found separately (stitched) are not grounded"
            if policy.require_contiguous
            else "stitched quotations count as grounded; order and proximity are not checked"
        ),
        f"  match_boundaries    {'yes' if policy.match_boundaries else 'no'}: "
        + (
            "a match may not start or end inside a word, hyphenated term, signed figure, "
            "decimal, grouped number or time"
            if policy.match_boundaries
            else "plain substring matching; a quotation may clip a word or a figure"
        ),
        f"  marker_pattern      {policy.marker_pattern or '(none)'}"
        + (": parser markers count as one space" if policy.marker_pattern else ""),
        "",
        "always:",
        "  offsets are character offsets into the original text, whatever the tier",
        "  a match may not cut through a rewritten region (no '1' out of '¼', no 'f' out of 'ﬁ')",
        "  the whole claim is checked; the tightest tier with a valid occurrence wins, and",
        "  within a tier the first valid occurrence",
        "  a certificate says the quotation is in the source under this policy; it does not",
        "  say that what the quotation claims is true",
    ]
    return "\n".join(lines)
