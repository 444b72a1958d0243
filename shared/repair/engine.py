"""The repair cascade: what to do with a quotation that does not verify as given.

verify -> [fragment salvage, opted in] -> align, threshold, guards -> annotate | substitute ->
re-verify; anything else is rejected, at the stage that refused it. The stages, their order,
the actions and the fields of a result are gtrex 1.1.0's, so a result means the same in both:

- ``verify``: a degenerate claim is rejected. A grounded claim is accepted as given, except in
  substitute mode, where one grounded contiguously at a *sound* tier is stored as the source's
  own characters (``normalized``); a stitched or unsound-tier match goes on like a near miss.
  Mode ``off`` stops here.
- ``fragment_salvage`` (``salvage_policy=longest_grounded``, claims with an ellipsis): the
  longest fragment that verifies contiguously on its own is kept; what was dropped is listed.
- ``alignment``: the best source span, accepted only at ``score >= threshold``; then the guards
  in order, the first failure naming the stage (numeric, polarity, span, boundary); then
  ``annotated`` (the model's wording kept, the span attached) or ``substituted`` (the span's
  text, which must itself verify, else ``post_verify``).

One :class:`Repairer` per document serves all of its claims: the ladder's projections, the
alignment index and the guards' views are built once, and shared with a :class:`Verifier` of
the same document when one is passed in.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

from groundswell.shared.repair.align import AlignIndex, Alignment, token_count
from groundswell.shared.repair.guards import Guards
from groundswell.shared.repair.policy import DEFAULT_REPAIR_THRESHOLD, RepairPolicy
from groundswell.shared.text.offsets import OffsetMap
from groundswell.shared.verify.certificate import Certificate
from groundswell.shared.verify.engine import CONTENT, ELLIPSIS, Verifier

ACTIONS = ("accepted", "normalized", "salvaged", "substituted", "annotated", "rejected")
STAGES = (
    "verify",
    "fragment_salvage",
    "alignment",
    "numeric_guard",
    "polarity_guard",
    "span_guard",
    "boundary_guard",
    "post_verify",
)
SALVAGE_CAVEAT = (
    "Only the kept fragment is verified. The fragments that were dropped, and whatever the "
    "claim said through them, are not."
)


class DefaultThresholdWarning(UserWarning):
    """A repair ran at the uncalibrated default threshold."""


@dataclass(frozen=True)
class Salvage:
    """An opted-in salvage: the fragment kept (as the model wrote it), its certificate, and
    every other fragment with content, dropped."""

    kept: str
    certificate: Certificate
    discarded: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "kept": self.kept,
            "certificate": self.certificate.as_dict(),
            "discarded": list(self.discarded),
            "caveat": SALVAGE_CAVEAT,
        }


@dataclass(frozen=True)
class Repair:
    """One claim through the cascade. ``text`` is what the record carries now (None when
    rejected); ``after`` certifies it when it differs from the claim."""

    original: str
    text: str | None
    action: str
    stage: str
    before: Certificate
    after: Certificate | None = None
    alignment: Alignment | None = None
    salvage: Salvage | None = None
    threshold: float | None = None
    threshold_source: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether the record is kept (an annotation is kept without being grounded)."""
        return self.text is not None

    @property
    def changed(self) -> bool:
        return self.text is not None and self.text != self.original

    @property
    def certificate(self) -> Certificate:
        return self.after if self.after is not None else self.before

    @property
    def grounded(self) -> bool:
        """Whether the text the record carries verifies."""
        return self.accepted and self.certificate.grounded

    def as_dict(self) -> dict[str, Any]:
        """gtrex's fields, in its order."""
        doc: dict[str, Any] = {
            "claim_original": self.original,
            "action": self.action,
            "stage": self.stage,
            "accepted": self.accepted,
            "grounded": self.grounded,
            "changed": self.changed,
            "before": self.before.as_dict(),
            "after": self.after.as_dict() if self.after is not None else None,
        }
        if self.alignment is not None:
            doc["alignment"] = self.alignment.as_dict()
        if self.salvage is not None:
            doc["salvage"] = self.salvage.as_dict()
        if self.threshold is not None:
            doc["threshold"] = self.threshold
            doc["threshold_source"] = self.threshold_source
        return doc


def _right_edge(omap: OffsetMap, end: int, length: int) -> int:
    """How many projection characters lie wholly before original offset ``end``."""
    j = omap.first_at_or_after(end)
    while j < length and omap.end(j) <= end:
        j += 1
    while j > 0 and omap.end(j - 1) > end:
        j -= 1
    return j


class Repairer:
    """Runs the cascade for every claim of one source document under one policy."""

    def __init__(
        self,
        source: str,
        policy: RepairPolicy,
        *,
        verifier: Verifier | None = None,
        warn: bool = True,
    ) -> None:
        self.source = source
        self.policy = policy
        settings = policy.settings
        self.settings = settings
        self.threshold: float | None = None
        self.threshold_source: str | None = None
        if settings.repair_mode != "off":
            if settings.repair_threshold is None:
                self.threshold, self.threshold_source = DEFAULT_REPAIR_THRESHOLD, "default"
                if warn:
                    warnings.warn(
                        f"no repair threshold set: repairing at the default "
                        f"{DEFAULT_REPAIR_THRESHOLD}, which was never calibrated; calibrate "
                        "one (groundswell calibrate) or set one",
                        DefaultThresholdWarning,
                        stacklevel=2,
                    )
            else:
                self.threshold, self.threshold_source = settings.repair_threshold, "policy"
        if verifier is None:
            verifier = Verifier(source, policy.verify)
        elif verifier.source != source or verifier.policy != policy.verify:
            raise ValueError("the verifier was built for another source or policy")
        self.verifier = verifier
        self._guards: Guards | None = None

    # --- per-document structures, built on first need -----------------------------------------

    @property
    def index(self) -> AlignIndex:
        verifier = self.verifier
        tier0 = verifier._projection(0)
        params = self.settings.alignment
        key = ("align", tuple(s.key for s in verifier._chains[0]), params)
        return verifier.projections.memo(
            key, lambda: AlignIndex(self.source, tier0.text, tier0.map, params)
        )

    @property
    def guards(self) -> Guards:
        if self._guards is None:
            self._guards = Guards(self.source, self.settings.watched())
        return self._guards

    # --- the cascade ------------------------------------------------------------------------

    def repair(self, claim: str) -> Repair:
        result = self._repair(claim)
        if self.threshold is None:
            return result
        return replace(result, threshold=self.threshold, threshold_source=self.threshold_source)

    def _repair(self, claim: str) -> Repair:
        settings = self.settings
        mode = settings.repair_mode
        verify = self.verifier.verify
        before = verify(claim)
        if before.verdict == "degenerate":
            return Repair(claim, None, "rejected", "verify", before)
        if before.grounded and mode != "substitute":
            return Repair(claim, claim, "accepted", "verify", before)
        if (
            before.grounded
            and before.tier_sound
            and before.contiguous
            and before.span_text is not None
        ):
            # The source's own characters, even when only case or spacing differ; an unsound
            # tier collides on changed figures, so it goes through the threshold and guards.
            text = before.span_text
            if text == claim:
                return Repair(claim, text, "accepted", "verify", before)
            return Repair(claim, text, "normalized", "verify", before, verify(text))
        if mode == "off":
            return Repair(claim, None, "rejected", "verify", before)

        if settings.salvage_policy == "longest_grounded" and before.had_ellipsis:
            salvage = self._salvage(claim)
            if salvage is not None:
                if mode == "annotate":
                    return Repair(
                        claim, claim, "annotated", "fragment_salvage", before, salvage=salvage
                    )
                text = salvage.certificate.span_text or salvage.kept
                return Repair(
                    claim, text, "salvaged", "fragment_salvage", before, verify(text),
                    salvage=salvage,
                )  # fmt: skip

        threshold = self.threshold
        assert threshold is not None  # set whenever the mode repairs
        alignment = self.index.best_span(claim)
        # Guards judge only spans the threshold would accept: a low score is the threshold's
        # refusal, not a guard's.
        if alignment is not None and alignment.score >= threshold:
            blocked = self._blocked(claim, alignment)
            if blocked:
                return Repair(claim, None, "rejected", blocked, before, alignment=alignment)
            if mode == "annotate":
                return Repair(claim, claim, "annotated", "alignment", before, alignment=alignment)
            after = verify(alignment.text)
            if not after.grounded:
                return Repair(claim, None, "rejected", "post_verify", before, after, alignment)
            return Repair(
                claim, alignment.text, "substituted", "alignment", before, after, alignment
            )
        return Repair(claim, None, "rejected", "alignment", before, alignment=alignment)

    def _blocked(self, claim: str, alignment: Alignment) -> str | None:
        """The first guard that refuses the span, or None."""
        settings = self.settings
        start, end, text = alignment.start, alignment.end, alignment.text
        if settings.numeric_guard and not self.guards.numbers_agree(claim, start, end, text):
            return "numeric_guard"
        if settings.polarity_guard and not self.guards.polarity_agrees(claim, start, end, text):
            return "polarity_guard"
        if alignment.coverage < settings.min_repair_coverage or (
            token_count(self._projected(start, end))
            > token_count(claim) * settings.max_source_expansion
        ):
            return "span_guard"
        if self.policy.verify.match_boundaries and not self.verifier._boundaries().span_ok(
            start, end
        ):
            return "boundary_guard"
        return None

    def _projected(self, start: int, end: int) -> str:
        """The span as the alignment index read it (parser markers separated)."""
        tier0 = self.verifier._projection(0)
        omap = tier0.map
        left = omap.first_at_or_after(start)
        return tier0.text[left : _right_edge(omap, end, len(tier0.text))]

    def _salvage(self, claim: str) -> Salvage | None:
        """The longest fragment (by tokens; the first on ties) that verifies contiguously."""
        parts = [p.strip() for p in ELLIPSIS.split(claim) if CONTENT.search(p)]
        best: tuple[int, int, Certificate] | None = None
        minimum = self.policy.verify.min_fragment_tokens
        for i, part in enumerate(parts):
            tokens = token_count(part)
            if tokens < minimum:
                continue
            cert = self.verifier.verify(part)
            if not (cert.grounded and cert.contiguous):
                continue
            if best is None or tokens > best[1]:
                best = (i, tokens, cert)
        if best is None:
            return None
        kept = best[0]
        return Salvage(parts[kept], best[2], tuple(p for i, p in enumerate(parts) if i != kept))
