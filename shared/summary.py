"""Summaries: additive counters per unit that merge into runs and policy versions.

Counters are flat ``name -> int`` maps so that Redis can add them atomically and any set
of summaries can be merged. Rates are derived from counters, never stored as counters.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from groundswell.shared.corpus import Labels
from groundswell.shared.producers import disagreement, group_by, kept, producer_key, producer_of
from groundswell.shared.repair.engine import ACTIONS as REPAIR_ACTIONS
from groundswell.shared.repair.engine import STAGES as REPAIR_STAGES

# The verification ladder, tightest first; rates "through a tier" accumulate in this order.
TIERS = ("exact", "whitespace", "typography", "case", "skeleton")
VERDICTS = ("grounded", "grounded_loose", "stitched", "unlocated", "degenerate")
OUTCOMES = ("admitted", "needs_verification", "rejected")
# What became of the candidates labelled right: (rate name, counter), by outcome.
RIGHT_OUTCOMES = (
    ("admitted", "right_admitted"),
    ("to_review", "right_reviewed"),
    ("rejected", "false_rejections"),
)
# Actions that keep a claim the source does not say as given: wrong when its label is false.
REPAIRED = ("salvaged", "substituted", "annotated")


def verify_unit_counts(
    certificates: Iterable[tuple[Any, Mapping[str, Any]]], labels: Labels | None
) -> Counter[str]:
    """Counters of one verification unit from ``(claim id, certificate dict)`` pairs."""
    counts: Counter[str] = Counter()
    gold = labels.claims if labels else {}
    for claim_id, cert in certificates:
        accepted = bool(cert.get("grounded"))
        counts["claims"] += 1
        verdict, tier = cert.get("verdict"), cert.get("tier") or "none"
        counts[f"claims.verdict.{verdict}"] += 1
        counts[f"claims.tier.{tier}"] += 1
        counts[f"claims.at.{verdict}.{tier}"] += 1  # the joint count, for metrics by both
        if accepted:
            counts["claims.accepted"] += 1
        label = gold.get(str(claim_id)) if claim_id is not None else None
        if label is None:
            continue
        counts["claims.labelled"] += 1
        if label:
            counts["claims.labelled_genuine"] += 1
            if not accepted:
                counts["claims.refused_genuine"] += 1
        else:
            counts["claims.labelled_fabricated"] += 1
            if accepted:
                counts["claims.escapes"] += 1
    return counts


def repair_unit_counts(
    repairs: Iterable[tuple[Any, Mapping[str, Any]]], labels: Labels | None
) -> Counter[str]:
    """Counters of the repair cascade from ``(claim id, repair dict)`` pairs: ``repairs``,
    ``repairs.action.<action>``, ``repairs.stage.<stage>``, ``repairs.at.<action>.<stage>``,
    ``repairs.changed``; with labels, ``repairs.labelled.<action>`` for the repaired actions
    (salvaged, substituted, annotated) and ``repairs.wrong`` / ``repairs.wrong.<action>``:
    the claims so kept whose label says the quotation is not genuine."""
    counts: Counter[str] = Counter()
    gold = labels.claims if labels else {}
    for claim_id, repair in repairs:
        action, stage = repair.get("action"), repair.get("stage")
        counts["repairs"] += 1
        counts[f"repairs.action.{action}"] += 1
        counts[f"repairs.stage.{stage}"] += 1
        counts[f"repairs.at.{action}.{stage}"] += 1
        if repair.get("changed"):
            counts["repairs.changed"] += 1
        label = gold.get(str(claim_id)) if claim_id is not None else None
        if label is None or action not in REPAIRED:
            continue
        counts[f"repairs.labelled.{action}"] += 1
        if not label:
            counts["repairs.wrong"] += 1
            counts[f"repairs.wrong.{action}"] += 1
    return counts


def repair_stage_counts(counts: Mapping[str, int]) -> list[tuple[str, str, int]]:
    """``(action, stage, claims)`` of every repair action and the stage that decided it, in
    the cascade's order, for the summary tables."""
    return [
        (action, stage, counts[f"repairs.at.{action}.{stage}"])
        for action in REPAIR_ACTIONS
        for stage in REPAIR_STAGES
        if counts.get(f"repairs.at.{action}.{stage}")
    ]


def admit_unit_counts(receipt: Mapping[str, Any], labels: Labels | None) -> Counter[str]:
    """Counters of one admission unit from its receipt and the document's gold labels.

    Every code of a decision counts (``candidates.code.<code>``), groundgate's and those a
    guarded policy adds alike. With labels, each labelled candidate counts once by its label
    and outcome: right values admitted, sent to review (``right_reviewed``) or rejected
    (``false_rejections``); wrong values admitted (``escapes``), or caught (``caught``: sent
    to review, ``wrong_reviewed``, or rejected, ``wrong_rejected``)."""
    counts: Counter[str] = Counter()
    gold = labels.candidates if labels else {}
    for decision in receipt.get("decisions", ()):
        outcome = decision.get("outcome")
        counts["candidates"] += 1
        counts[f"candidates.outcome.{outcome}"] += 1
        codes = decision.get("codes", ())
        for code in codes:
            counts[f"candidates.code.{code}"] += 1
        # Per schema field (the quality gates read them); a field the schema lacks is no
        # field, so an extractor's stray names cannot multiply the counters.
        field = decision.get("field")
        per_field = isinstance(field, str) and "FIELD_UNKNOWN" not in codes
        if per_field:
            counts[f"candidates.field.{field}"] += 1
            counts[f"candidates.field.{field}.outcome.{outcome}"] += 1
        candidate_id = decision.get("candidate_id")
        label = gold.get(str(candidate_id)) if candidate_id is not None else None
        if label is None:
            continue
        counts["candidates.labelled"] += 1
        if label:
            counts["candidates.labelled_right"] += 1
            if outcome == "admitted":
                counts["candidates.right_admitted"] += 1
            elif outcome == "rejected":
                counts["candidates.false_rejections"] += 1
            else:
                counts["candidates.right_reviewed"] += 1
        else:
            counts["candidates.labelled_wrong"] += 1
            if per_field:
                counts[f"candidates.field.{field}.labelled_wrong"] += 1
            if outcome == "admitted":
                counts["candidates.escapes"] += 1
                if per_field:
                    counts[f"candidates.field.{field}.escapes"] += 1
            else:
                counts["candidates.caught"] += 1
                caught = "wrong_rejected" if outcome == "rejected" else "wrong_reviewed"
                counts[f"candidates.{caught}"] += 1
        if outcome == "needs_verification":
            counts["candidates.reviews"] += 1
    for finding in receipt.get("coverage", ()):
        counts[f"coverage.{finding.get('code', 'finding')}"] += 1
    return counts


def _key(value: Any) -> str | None:
    producer = producer_of(value)
    return producer_key(producer) if producer is not None else None


def producer_claim_counts(
    records: list[Mapping[str, Any]], labels: Labels | None, default: Any = None
) -> Counter[str]:
    """The per-producer counters (``producer.<counter>@<key>``) of a verification receipt's
    records: each record's own ``producer`` member, else the unit's ``default`` (the corpus's
    declared producer); a record with neither counts under no producer. With an alignment
    claim (``alignment``, a producer file's), where the verifier disagrees with it."""
    fallback = _key(default)
    if fallback is None and not any("producer" in i["record"] for i in records):
        return Counter()
    groups = group_by(((_key(i["record"].get("producer")), i) for i in records), fallback)
    out: Counter[str] = Counter()
    for key, items in groups.items():
        if key is None:
            continue
        counts = verify_unit_counts(
            ((i["record"].get("id"), i["certificate"]) for i in items), labels
        )
        for item in items:
            record, cert = item["record"], item["certificate"]
            if record.get("alignment") is None:
                continue
            counts["claims.aligned"] += 1
            bound = record.get("start") is not None and record.get("end") is not None
            found = disagreement(record["alignment"], bound, cert.get("verdict"), cert.get("tier"))
            if found is not None:
                counts[f"disagree.{found}"] += 1
        out.update(kept(counts, key))
    return out


def producer_candidate_counts(body: Mapping[str, Any], labels: Labels | None) -> Counter[str]:
    """The per-producer counters of an admission receipt: each decision by its candidate's
    ``producer`` member (the receipt's ``records`` are the candidates as given), else the
    unit's (``producer``: the corpus's declared one)."""
    fallback = _key(body.get("producer"))
    given = {
        str(c.get("id")): c["producer"]
        for c in body.get("records") or ()
        if isinstance(c, dict) and "producer" in c
    }
    if fallback is None and not given:
        return Counter()
    decisions = (body.get("receipt") or {}).get("decisions", ())
    groups = group_by(
        ((_key(given.get(str(d.get("candidate_id")))), d) for d in decisions), fallback
    )
    out: Counter[str] = Counter()
    for key, items in groups.items():
        if key is not None:
            out.update(kept(admit_unit_counts({"decisions": items}, labels), key))
    return out


# The summary counts codes under these prefixes: the decisions' codes, and the coverage
# findings (a required field no candidate gave: a review task with no decision).
CODE_PREFIXES = ("candidates.code.", "coverage.")


def code_counts(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """Every code the summary counts, most frequent first: the code tables' rows."""
    total: Counter[str] = Counter()
    for key, n in counts.items():
        for prefix in CODE_PREFIXES:
            if key.startswith(prefix):
                total[key[len(prefix) :]] += n
    return sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))


def merge(*parts: Mapping[str, int]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for part in parts:
        total.update(part)
    return dict(sorted((k, v) for k, v in total.items() if v))


def _share(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def rates(counts: Mapping[str, int]) -> dict[str, Any]:
    """Rates derived from counters (shares in 0..1, None when the denominator is zero)."""
    claims = counts.get("claims", 0)
    through: dict[str, float | None] = {}
    running = 0
    for tier in TIERS:
        running += counts.get(f"claims.tier.{tier}", 0)
        through[tier] = _share(running, claims)
    candidates = counts.get("candidates", 0)
    out = {
        "claims_accepted": _share(counts.get("claims.accepted", 0), claims),
        "claims_located_through_tier": through,
        "claims_escape_rate": _share(
            counts.get("claims.escapes", 0), counts.get("claims.labelled_fabricated", 0)
        ),
        "candidates": {
            outcome: _share(counts.get(f"candidates.outcome.{outcome}", 0), candidates)
            for outcome in OUTCOMES
        },
        "candidates_escape_rate": _share(
            counts.get("candidates.escapes", 0), counts.get("candidates.labelled_wrong", 0)
        ),
        **{
            f"right_values_{name}": _share(
                counts.get(f"candidates.{counter}", 0), counts.get("candidates.labelled_right", 0)
            )
            for name, counter in RIGHT_OUTCOMES
        },
    }
    repairs = counts.get("repairs", 0)
    if repairs:  # only a run under a policy that repairs has them
        labelled = sum(counts.get(f"repairs.labelled.{a}", 0) for a in REPAIRED)
        out["repairs"] = {
            action: _share(counts.get(f"repairs.action.{action}", 0), repairs)
            for action in REPAIR_ACTIONS
        }
        out["repairs_kept"] = _share(repairs - counts.get("repairs.action.rejected", 0), repairs)
        out["wrong_repair_rate"] = _share(counts.get("repairs.wrong", 0), labelled)
    return out


def merkle_root(leaves: Iterable[bytes]) -> str:
    """sha256 Merkle root (leaf and node hashes domain-separated); empty input gives sha256('').

    At each level an odd last node is paired with itself. :class:`MerkleStream` computes
    the same root without holding the leaves.
    """
    level = [hashlib.sha256(b"\x00" + leaf).digest() for leaf in leaves]
    if not level:
        return hashlib.sha256(b"").hexdigest()
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [
            hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest()
            for i in range(0, len(level), 2)
        ]
    return level[0].hex()


class MerkleStream:
    """:func:`merkle_root` over leaves fed one at a time, in O(log n) memory.

    ``stack`` holds the roots of the complete subtrees so far, largest first (one per set
    bit of the leaf count), so the state is a few hundred bytes whatever the count and
    can be saved and resumed (:meth:`state`).
    """

    __slots__ = ("count", "stack")

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.count: int = int(state["count"]) if state else 0
        self.stack: list[tuple[int, bytes]] = (
            [(int(h), bytes.fromhex(d)) for h, d in state["stack"]] if state else []
        )

    def add(self, leaf: bytes) -> None:
        node, height = hashlib.sha256(b"\x00" + leaf).digest(), 0
        stack = self.stack
        while stack and stack[-1][0] == height:
            node = hashlib.sha256(b"\x01" + stack.pop()[1] + node).digest()
            height += 1
        stack.append((height, node))
        self.count += 1

    def root(self) -> str:
        if not self.stack:
            return hashlib.sha256(b"").hexdigest()
        # Fold from the smallest subtree up: where a level has no left partner, the node is
        # paired with itself, which is what the level-by-level duplication does.
        height, node = self.stack[-1]
        for left_height, left in reversed(self.stack[:-1]):
            while height < left_height:
                node = hashlib.sha256(b"\x01" + node + node).digest()
                height += 1
            node = hashlib.sha256(b"\x01" + left + node).digest()
            height += 1
        return node.hex()

    def state(self) -> dict[str, Any]:
        return {"count": self.count, "stack": [[h, d.hex()] for h, d in self.stack]}


def policy_rates(summary: dict[str, Any]) -> dict[str, Any]:
    """What the per-policy-version gauges report about a finished run."""
    rates = summary.get("rates", {})
    return {
        "grounding_rate": rates.get("claims_accepted"),
        "escape_rate": rates.get("candidates_escape_rate"),
        "right_admitted_rate": rates.get("right_values_admitted"),
        "review_rate": (rates.get("candidates") or {}).get("needs_verification"),
        "finished_at": summary.get("finished_at"),
    }
