"""Calibrating the repair cascade's acceptance threshold (gtrex 1.1.0's guarantees).

The cascade repairs a near-miss quotation when its alignment ``score >= threshold``. The
threshold is the cascade's one free number, and this module turns it into a stated guarantee,
in one of two senses that must not be confused:

* **risk** (:func:`calibrate_risk`, Learn-then-Test): with probability at least ``1 - delta``
  over the draw of the labelled calibration set, the *joint* rate
  ``P(score >= threshold and the repair is unfaithful)`` is at most ``alpha``. That is not the
  rate of unfaithful repairs among accepted ones, which is only reported as an estimate.
* **coverage** (:func:`calibrate_coverage`, split conformal): a faithful repair exchangeable
  with the calibration repairs is accepted with probability at least ``1 - alpha``.

Both speak about one stage, the alignment-score filter, and the claims that reach it; claims
accepted by a verification tier or by fragment salvage are outside them. The risk bound needs
independent examples: rows that share a ``group`` (a document, say) are refused unless the
caller allows them, and then the result is recorded as ``uncertified``.

Why testing the observed scores is valid: the loss is monotone in the threshold (raising it
only removes accepted examples), so the violation count and its binomial p-value can only fall
as the threshold rises. Any threshold whose true risk exceeds ``alpha`` lies at or below the
largest such threshold ``t*``; returning one means ``p(t*) <= delta`` was observed, which for a
fixed ``t*`` happens with probability at most ``delta``. How the candidates were picked does
not enter the argument.

A calibration is bound to the identities of the scorer and pipeline its scores came from
(``binding``), and :meth:`Calibration.check_binding` refuses it anywhere else. Results match
gtrex 1.1.0's ``conformal`` module number for number (thresholds, p-values, rates, data
digests); the schema names are groundswell's, and gtrex's own documents also load.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import sys
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

CALIBRATION_SCHEMA = "groundswell/calibration/1"
REPORT_SCHEMA = "groundswell/calibration-report/1"
# gtrex 1.1.0's names for the same documents: they load too (bound to gtrex's fingerprints).
GTREX_CALIBRATION_SCHEMA = "gtrex/calibration/1"
GTREX_REPORT_SCHEMA = "gtrex/calibration-report/1"
CALIBRATION_SCHEMAS = (CALIBRATION_SCHEMA, GTREX_CALIBRATION_SCHEMA)
REPORT_SCHEMAS = (REPORT_SCHEMA, GTREX_REPORT_SCHEMA)
# How gtrex labels a converted 0.1.0a1 record; refused here, like a record with no schema.
GTREX_LEGACY_SCHEMA = "gtrex/calibration/legacy-0.1.0a1"

ACCEPTANCE_RULE = "score >= threshold"
RISK_METHOD = "learn_then_test_binomial"
# Revision 2: candidates are the observed scores at full precision (plus 1.0), compared with
# ``>=``; revision 1 (gtrex 0.1.0a1) rounded them and could never accept a tie.
RISK_METHOD_REVISION = 2
RISK_TARGET = "joint_false_acceptance"
COVERAGE_METHOD = "split_conformal_coverage"
COVERAGE_METHOD_REVISION = 1
COVERAGE_TARGET = "genuine_repair_coverage"
CALIBRATED_STAGE = "alignment_score_filter"
GUARANTEE_STATUSES = ("conditional", "uncertified")
REPORT_METHODS = ("both", "risk", "coverage")

# What a caller's binding holds, and what check_binding compares.
BINDING_KEYS = (
    "pre_threshold_fingerprint",
    "scorer_fingerprint",
    "verifier_revision",
    "scorer_revision",
    "calibrated_under_policy",
    "groundswell_version",
)
_CHECKED_IDENTITIES = (
    "pre_threshold_fingerprint",
    "scorer_fingerprint",
    "verifier_revision",
    "scorer_revision",
)
_DOCUMENT_FIELDS = frozenset(
    {
        "schema",
        "threshold",
        "acceptance_rule",
        "method",
        "method_revision",
        "target",
        "stage",
        "alpha",
        "delta",
        "n",
        "guarantee",
        "guarantee_status",
        "assumptions",
        "binding",
        "data_sha256",
        "empirical",
        "notes",
    }
)
_NOT_CHECKED = "assumed, not checked"


class CalibrationError(RuntimeError):
    """The calibration set cannot support the requested guarantee (too small, not
    separating, or not independent)."""


class CalibrationInputError(ValueError):
    """A labelled-examples or calibration file that cannot be used; the message names the
    file (and the line, for JSON Lines)."""


# -- validation ---------------------------------------------------------------------------


def _real(value: object, what: str, interval: str) -> float:
    # bool is an int to Python, but True is not a probability anyone meant to write.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number in {interval}, not {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{what} = {value!r} is too large to be a probability") from None


def _unit(value: object, what: str) -> float:
    """A finite number in [0, 1] (a score, a threshold), as a float at full precision."""
    number = _real(value, what, "[0, 1]")
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ValueError(f"{what} must be a finite number in [0, 1], not {value!r}")
    return number


def _level(value: object, what: str) -> float:
    """A significance level: strictly between 0 and 1."""
    number = _real(value, what, "(0, 1)")
    if not (math.isfinite(number) and 0.0 < number < 1.0):
        raise ValueError(f"{what} must be strictly between 0 and 1, not {value!r}")
    return number


def _digest(rows: Iterable[Any]) -> str:
    """sha256 of the calibration data whatever its order: each row's JSON text (keys
    sorted), the texts sorted, joined by newlines. gtrex digests the same way, so the two
    tools' digests of one data set agree."""
    texts = sorted(json.dumps(row, sort_keys=True, allow_nan=False) for row in rows)
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()


def _binding_record(binding: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if binding is None:
        return None
    if not isinstance(binding, Mapping):
        raise TypeError(f"binding must be a mapping or None, not {type(binding).__name__}")
    missing = [key for key in BINDING_KEYS if key not in binding]
    extra = sorted(set(binding) - set(BINDING_KEYS))
    if missing or extra:
        raise ValueError(
            f"a binding has exactly the keys {', '.join(BINDING_KEYS)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unexpected {', '.join(extra)}" if extra else "")
        )
    return {key: binding[key] for key in BINDING_KEYS}


# -- examples -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelledRepair:
    """One labelled calibration example.

    ``score`` is the similarity the aligner gave the repair (a finite number in [0, 1]);
    ``faithful`` says whether substituting the located span kept the claim's meaning (a
    human's or an adjudicated label, not whether the quote matched); ``group`` is the unit
    of independent sampling, usually the source document's id. An integer group is kept as
    its decimal string, so ``7`` and ``"7"`` are one group (as gtrex's command line reads
    them).
    """

    score: float
    faithful: bool
    group: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.faithful, bool):
            raise TypeError(f"faithful must be True or False, not {self.faithful!r}")
        object.__setattr__(self, "score", _unit(self.score, "score"))
        group = self.group
        if isinstance(group, int) and not isinstance(group, bool):
            object.__setattr__(self, "group", str(group))
        elif group is not None and not isinstance(group, str):
            raise TypeError(f"group must be a string, an integer or None, not {group!r}")


def _examples(labelled: Iterable[LabelledRepair]) -> list[LabelledRepair]:
    examples = list(labelled)
    for example in examples:
        if not isinstance(example, LabelledRepair):
            raise TypeError(f"a calibration example is a LabelledRepair, not {example!r}")
    return examples


# -- the calibration record ---------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """A threshold (accept when ``score >= threshold``, full precision) and the guarantee it
    carries.

    ``guarantee_status`` is ``conditional`` when the test passed and the guarantee holds
    under the stated assumptions (which no tool can check), ``uncertified`` when an
    assumption was knowingly bypassed. ``binding`` names the scorer and pipeline the scores
    came from (``None``: unbound, and then never deployable). ``data_sha256`` digests the
    calibration data independently of its order.
    """

    threshold: float
    method: str
    alpha: float
    delta: float | None
    n: int
    guarantee: str
    empirical: Mapping[str, float]
    target: str = ""
    stage: str = CALIBRATED_STAGE
    guarantee_status: str = "conditional"
    assumptions: Mapping[str, Any] = field(default_factory=dict)
    binding: Mapping[str, Any] | None = None
    data_sha256: str | None = None
    method_revision: int | None = None
    notes: tuple[str, ...] = ()
    schema: str = CALIBRATION_SCHEMA

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "threshold", _unit(self.threshold, "threshold"))
        put(self, "alpha", _level(self.alpha, "alpha"))
        if self.delta is not None:
            put(self, "delta", _level(self.delta, "delta"))
        if type(self.n) is not int or self.n < 1:
            raise ValueError(f"n must be a positive integer, not {self.n!r}")
        for name in ("method", "guarantee", "target", "stage", "guarantee_status"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string, not {getattr(self, name)!r}")
        if self.schema not in CALIBRATION_SCHEMAS:
            raise ValueError(
                f"calibration schema {self.schema!r} is not one this version reads "
                f"({', '.join(CALIBRATION_SCHEMAS)})"
            )
        if self.guarantee_status not in GUARANTEE_STATUSES:
            raise ValueError(
                f"guarantee_status is one of {', '.join(GUARANTEE_STATUSES)}, "
                f"not {self.guarantee_status!r}"
            )
        if self.stage != CALIBRATED_STAGE:
            raise ValueError(
                f"a calibration controls the stage {CALIBRATED_STAGE!r}, not {self.stage!r}"
            )
        self._check_method()
        for name in ("empirical", "assumptions"):
            if not isinstance(getattr(self, name), Mapping):
                raise TypeError(f"{name} must be a mapping")
        if self.binding is not None and not isinstance(self.binding, Mapping):
            raise TypeError("binding must be a mapping or None")
        if self.data_sha256 is not None and not isinstance(self.data_sha256, str):
            raise TypeError("data_sha256 must be a string or None")
        if isinstance(self.notes, str) or not all(isinstance(n, str) for n in self.notes):
            raise TypeError("notes must be a sequence of strings")
        # Read-only views, so a calibration cannot be changed after it was checked.
        put(self, "empirical", MappingProxyType(dict(self.empirical)))
        put(self, "assumptions", MappingProxyType(dict(self.assumptions)))
        if self.binding is not None:
            put(self, "binding", MappingProxyType(dict(self.binding)))
        put(self, "notes", tuple(self.notes))

    def _check_method(self) -> None:
        # Each method has one revision, one target, and a delta only for risk.
        revision = self.method_revision
        if self.method == RISK_METHOD:
            expected, target, wants_delta = RISK_METHOD_REVISION, RISK_TARGET, True
        elif self.method == COVERAGE_METHOD:
            expected, target, wants_delta = COVERAGE_METHOD_REVISION, COVERAGE_TARGET, False
        else:
            raise ValueError(
                f"calibration method {self.method!r} is not one this version reads "
                f"({RISK_METHOD}, {COVERAGE_METHOD})"
            )
        if type(revision) is not int or revision != expected:
            raise ValueError(
                f"{self.method} revision {revision!r} is not read here (only revision {expected})"
            )
        if self.target != target:
            raise ValueError(
                f"a {self.method} calibration controls {target!r}, not {self.target!r}"
            )
        if wants_delta and self.delta is None:
            raise ValueError("a risk calibration needs delta")
        if not wants_delta and self.delta is not None:
            raise ValueError("a coverage calibration has no delta")

    @property
    def bound(self) -> bool:
        return self.binding is not None

    def as_dict(self) -> dict[str, Any]:
        # No rounding anywhere: a certified threshold rounded down admits scores the
        # certificate excluded.
        return {
            "schema": self.schema,
            "threshold": self.threshold,
            "acceptance_rule": ACCEPTANCE_RULE,
            "method": self.method,
            "method_revision": self.method_revision,
            "target": self.target,
            "stage": self.stage,
            "alpha": self.alpha,
            "delta": self.delta,
            "n": self.n,
            "guarantee": self.guarantee,
            "guarantee_status": self.guarantee_status,
            "assumptions": dict(self.assumptions),
            "binding": None if self.binding is None else dict(self.binding),
            "data_sha256": self.data_sha256,
            "empirical": dict(self.empirical),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Calibration:
        """A calibration from :meth:`as_dict`'s JSON, groundswell's or gtrex 1.1.0's.

        Refused: other schemas, unknown fields, another acceptance rule, a missing stage,
        and whatever the constructor refuses (method, revision, target, stage, levels).
        A gtrex 0.1.0a1 record (no ``schema``, or gtrex's ``legacy-0.1.0a1`` label for one)
        is refused too: it names no scorer, so it could never be deployed, and its rule
        rounded scores and could not accept ties; recalibrating is the only way forward.
        """
        if not isinstance(document, Mapping):
            raise TypeError("a calibration is a JSON object")
        schema = document.get("schema")
        if schema is None or schema == GTREX_LEGACY_SCHEMA:
            raise ValueError(
                "this is a gtrex 0.1.0a1 calibration (schema "
                f"{'missing' if schema is None else repr(schema)}): it is bound to no scorer "
                "and was chosen by a rule that could not accept tied scores; recalibrate "
                "(groundswell calibrate)"
            )
        if schema not in CALIBRATION_SCHEMAS:
            raise ValueError(
                f"calibration schema {schema!r} is not one this version reads "
                f"({', '.join(CALIBRATION_SCHEMAS)})"
            )
        unknown = sorted(set(document) - _DOCUMENT_FIELDS)
        if unknown:
            raise ValueError(f"unknown calibration fields: {', '.join(unknown)}")
        if document.get("acceptance_rule") != ACCEPTANCE_RULE:
            raise ValueError(
                f"acceptance_rule {document.get('acceptance_rule')!r} is not the rule the "
                f"cascade applies ({ACCEPTANCE_RULE!r})"
            )
        for name in ("stage", "threshold", "method", "alpha", "n", "guarantee"):
            if name not in document:
                raise ValueError(f"calibration is missing the field {name!r}")
        notes = document.get("notes", ())
        if not isinstance(notes, list | tuple):
            raise TypeError("notes must be a list of strings")
        return cls(
            threshold=document["threshold"],
            method=document["method"],
            alpha=document["alpha"],
            delta=document.get("delta"),
            n=document["n"],
            guarantee=document["guarantee"],
            empirical=document.get("empirical", {}),
            target=document.get("target", ""),
            stage=document["stage"],
            # A record that does not say it passed is not taken to have passed.
            guarantee_status=document.get("guarantee_status", "uncertified"),
            assumptions=document.get("assumptions", {}),
            binding=document.get("binding"),
            data_sha256=document.get("data_sha256"),
            method_revision=document.get("method_revision"),
            notes=tuple(notes),
            schema=schema,
        )

    def check_binding(self, identities: Mapping[str, Any]) -> None:
        """Refuse this calibration unless it was made under ``identities`` (a repair
        policy's: ``pre_threshold_fingerprint``, ``scorer_fingerprint``,
        ``verifier_revision``, ``scorer_revision``).

        A threshold certified for one scorer, ladder, guard or salvage setting says nothing
        about another. Raises ValueError naming both values.
        """
        if self.binding is None:
            raise ValueError(
                "the calibration is unbound: it was made without a policy, so nothing ties "
                "its scores to this scorer; recalibrate under the policy (groundswell "
                "calibrate --policy ...)"
            )
        origin = ""
        if self.schema == GTREX_CALIBRATION_SCHEMA:
            origin = (
                f" It was made by gtrex {self.binding.get('gtrex_version', '')}".rstrip()
                + ", whose fingerprints are not groundswell's; recalibrate with groundswell "
                "calibrate."
            )
        found = self.binding.get("pre_threshold_fingerprint")
        wanted = identities.get("pre_threshold_fingerprint")
        if found != wanted:
            raise ValueError(
                f"the calibration belongs to pre-threshold configuration {found} (scorer "
                f"{self.binding.get('scorer_fingerprint')}), but this policy's is {wanted} "
                f"(scorer {identities.get('scorer_fingerprint')}); its threshold carries no "
                f"guarantee here.{origin}"
            )
        for key in _CHECKED_IDENTITIES[1:]:
            if self.binding.get(key) != identities.get(key):
                raise ValueError(
                    f"the calibration's {key} is {self.binding.get(key)!r} but this policy's "
                    f"is {identities.get(key)!r}; its threshold carries no guarantee here."
                    f"{origin}"
                )


# -- coverage: split conformal ------------------------------------------------------------


def calibrate_coverage(
    scores: Iterable[float],
    alpha: float = 0.1,
    binding: Mapping[str, Any] | None = None,
) -> Calibration:
    """The threshold that accepts at least ``1 - alpha`` of faithful repairs.

    Split conformal on the nonconformity ``1 - score``: with ``n`` exchangeable faithful
    scores, the ``ceil((n + 1)(1 - alpha))``-th smallest nonconformity (the same-ranked
    score from the top) gives ``P(faithful repair accepted) >= 1 - alpha``. Raises
    CalibrationError when ``n`` is 0 or below ``ceil(1/alpha) - 1``.
    """
    alpha = _level(alpha, "alpha")
    ordered = sorted(_unit(score, "score") for score in scores)
    n = len(ordered)
    if n == 0:
        raise CalibrationError("coverage calibration needs faithful scores; none were given")
    rank = math.ceil((n + 1) * (1.0 - alpha))
    if rank > n:
        raise CalibrationError(
            f"coverage at alpha={alpha} needs at least {math.ceil(1.0 / alpha) - 1} faithful "
            f"examples; n={n} is too few"
        )
    threshold = ordered[n - rank]
    # Everything from the threshold's first occurrence up is accepted (ties included).
    accepted = n - bisect_left(ordered, threshold)
    return Calibration(
        threshold=threshold,
        method=COVERAGE_METHOD,
        method_revision=COVERAGE_METHOD_REVISION,
        target=COVERAGE_TARGET,
        alpha=alpha,
        delta=None,
        n=n,
        guarantee=(
            f"For a faithful repair exchangeable with the calibration repairs, "
            f"P(score >= threshold) >= {1.0 - alpha:g} at the alignment-score filter. It "
            "says nothing about unfaithful repairs (calibrate risk for that) nor about "
            "repairs a guard blocks afterwards."
        ),
        guarantee_status="conditional",
        assumptions={"exchangeable_faithful_scores": _NOT_CHECKED},
        binding=_binding_record(binding),
        data_sha256=_digest(ordered),
        empirical={"acceptance_rate_on_faithful": accepted / n, "accepted": accepted},
    )


# -- risk: Learn-then-Test ----------------------------------------------------------------


class _BinomialTail:
    """``P(Bin(n, alpha) <= k)`` for one ``n`` and ``alpha`` and growing ``k``, exactly, in
    log space (a sum of ``exp`` of log terms shifted by their maximum, so large ``n`` does
    not underflow). The log terms are computed once and shared by every candidate."""

    def __init__(self, n: int, alpha: float) -> None:
        self.n = n
        self.log_alpha = math.log(alpha)
        self.log_rest = math.log1p(-alpha)
        self.log_n_factorial = math.lgamma(n + 1)
        self.terms: list[float] = []
        self.cache: dict[int, float] = {}

    def __call__(self, k: int) -> float:
        if k >= self.n:
            return 1.0
        value = self.cache.get(k)
        if value is None:
            terms = self.terms
            n = self.n
            for i in range(len(terms), k + 1):
                terms.append(
                    self.log_n_factorial
                    - math.lgamma(i + 1)
                    - math.lgamma(n - i + 1)
                    + i * self.log_alpha
                    + (n - i) * self.log_rest
                )
            head = terms[: k + 1]
            peak = max(head)
            value = self.cache[k] = math.exp(peak + math.log(sum(math.exp(t - peak) for t in head)))
        return value


def _group_check(
    examples: Sequence[LabelledRepair], allow_repeated_groups: bool
) -> tuple[dict[str, Any], dict[str, int]]:
    """The recorded independence assumptions, and the groups with more than one example."""
    counts: dict[str, int] = {}
    ungrouped = 0
    for example in examples:
        if example.group is None:
            ungrouped += 1
        else:
            counts[example.group] = counts.get(example.group, 0) + 1
    repeated = {group: count for group, count in counts.items() if count > 1}
    if repeated and allow_repeated_groups:
        check = "bypassed"
    elif not counts:
        check = "not_possible"  # no example names a group: nothing to check
    elif ungrouped:
        check = "partial"
    else:
        check = "passed"
    assumptions = {
        "independent_examples": _NOT_CHECKED,
        "group_check": check,
        "allow_repeated_groups": allow_repeated_groups,
        "repeated_groups_present": bool(repeated),
        "repeated_groups": len(repeated),
        "distinct_groups": len(counts),
        "examples_without_group": ungrouped,
    }
    return assumptions, repeated


def calibrate_risk(
    labelled: Iterable[LabelledRepair],
    alpha: float = 0.05,
    delta: float = 0.05,
    grid: Iterable[float] | None = None,
    allow_repeated_groups: bool = False,
    binding: Mapping[str, Any] | None = None,
) -> Calibration:
    """The least conservative candidate threshold whose joint risk
    ``P(score >= threshold and unfaithful)`` is at most ``alpha`` with confidence
    ``1 - delta``.

    Candidates are the distinct observed scores plus 1.0 (or exactly ``grid``'s values),
    tested from the highest down; each tests ``H0: risk > alpha`` with the exact binomial
    left tail of its violation count, and testing stops at the first candidate that is not
    rejected (fixed-sequence testing, so no multiplicity correction is needed).

    Raises TypeError/ValueError for bad levels, examples or grid values, and
    CalibrationError when nothing can be certified or groups repeat without
    ``allow_repeated_groups`` (allowing them records the result as ``uncertified``).
    """
    alpha = _level(alpha, "alpha")
    delta = _level(delta, "delta")
    if not isinstance(allow_repeated_groups, bool):
        raise TypeError("allow_repeated_groups must be True or False")
    examples = _examples(labelled)
    n = len(examples)
    if n == 0:
        raise CalibrationError("risk calibration needs labelled examples; none were given")
    assumptions, repeated = _group_check(examples, allow_repeated_groups)
    if repeated and not allow_repeated_groups:
        worst = sorted(repeated.items(), key=lambda item: -item[1])[:3]
        shown = ", ".join(f"{group!r} x{count}" for group, count in worst)
        raise CalibrationError(
            f"{len(repeated)} groups have more than one example ({shown}): examples from one "
            "group are not independent, and the binomial bound needs independent examples. "
            "Keep one example per group, or allow repeated groups and claim no guarantee."
        )
    record = _binding_record(binding)

    notes: list[str] = []
    if grid is None:
        candidates = sorted({e.score for e in examples}, reverse=True)
        if candidates[0] < 1.0:
            candidates.insert(0, 1.0)  # accepting nothing is always a candidate
        notes.append(
            "candidates were every observed score at full precision and 1.0; the threshold "
            "is the least conservative of them that could be certified"
        )
    else:
        values = [_unit(value, "grid value") for value in grid]
        if not values:
            raise ValueError("grid needs at least one threshold")
        candidates = sorted(set(values), reverse=True)
        notes.append(
            f"candidates were the {len(candidates)} values of the supplied grid; the threshold "
            "is the least conservative of them that could be certified"
        )

    # One sweep: examples by score, highest first; each lower candidate accepts a longer
    # prefix, so counts only grow.
    ordered = sorted(examples, key=lambda e: e.score, reverse=True)
    tail = _BinomialTail(n, alpha)
    accepted = violations = 0
    certified: float | None = None
    stats: dict[str, float] = {}
    for tau in candidates:
        while accepted < n and ordered[accepted].score >= tau:
            violations += not ordered[accepted].faithful
            accepted += 1
        p_value = tail(violations)
        if p_value > delta:
            break  # the first hypothesis not rejected ends the sequence
        certified = tau
        stats = {
            "accepted": accepted,
            "violations": violations,
            "marginal_false_acceptance": violations / n,
            "acceptance_rate": accepted / n,
            "conditional_false_acceptance": violations / accepted if accepted else 0.0,
            "p_value": p_value,
        }
    if certified is None:
        raise CalibrationError(
            f"no candidate threshold could be certified at alpha={alpha}, delta={delta} with "
            f"n={n}: the set is too small for even the strictest candidate to reject the "
            "null, or the scores do not separate faithful from unfaithful repairs at this "
            "level"
        )
    if stats["accepted"] == 0:
        notes.append(
            f"the threshold accepts none of the {n} calibration examples: it is certified "
            "only because accepting nothing risks nothing here, and it says nothing about how "
            "many repairs it will accept"
        )
    if repeated:
        status = "uncertified"
        notes.append(
            "repeated groups were allowed: the examples are not independent, so the binomial "
            "guarantee does not apply"
        )
        guarantee = (
            "NOT CERTIFIED: repeated groups were allowed, so the examples are not independent "
            "and no guarantee is claimed. Had they been independent, this threshold passed "
            f"the test that bounds P(score >= threshold and unfaithful) by {alpha:g} with "
            f"confidence {1.0 - delta:g}."
        )
    else:
        status = "conditional"
        guarantee = (
            f"With confidence {1.0 - delta:g} over the draw of the calibration set, "
            f"P(score >= threshold and the repair is unfaithful) <= {alpha:g} for claims like "
            "the calibration claims that reach the alignment-score filter, provided the "
            "calibration examples are independent draws from the claims the threshold is "
            "used on. A joint rate, not P(unfaithful | accepted); claims accepted by a "
            "verification tier or by fragment salvage are not covered."
        )
    return Calibration(
        threshold=certified,
        method=RISK_METHOD,
        method_revision=RISK_METHOD_REVISION,
        target=RISK_TARGET,
        alpha=alpha,
        delta=delta,
        n=n,
        guarantee=guarantee,
        guarantee_status=status,
        assumptions=assumptions,
        binding=record,
        data_sha256=_digest([e.score, e.faithful, e.group] for e in examples),
        empirical=stats,
        notes=tuple(notes),
    )


def evaluate_threshold(labelled: Iterable[LabelledRepair], threshold: float) -> dict[str, float]:
    """What a threshold (a hand-picked 0.65, say) did on labelled data; no guarantee.
    Empty when there are no examples."""
    threshold = _unit(threshold, "threshold")
    examples = _examples(labelled)
    n = len(examples)
    if n == 0:
        return {}
    accepted = violations = faithful = kept = 0
    for example in examples:
        if example.faithful:
            faithful += 1
        if example.score >= threshold:
            accepted += 1
            if example.faithful:
                kept += 1
            else:
                violations += 1
    return {
        "threshold": threshold,
        "n": float(n),
        "acceptance_rate": accepted / n,
        "marginal_false_acceptance": violations / n,
        "conditional_false_acceptance": violations / accepted if accepted else 0.0,
        "faithful_recall": kept / faithful if faithful else 0.0,
    }


# -- the report ---------------------------------------------------------------------------


def bound_to(binding: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The policy identities a report was made under (gtrex's ``bound_to``), from a
    binding."""
    if binding is None:
        return None
    return {
        "fingerprint": binding["calibrated_under_policy"],
        "pre_threshold_fingerprint": binding["pre_threshold_fingerprint"],
        "scorer_fingerprint": binding["scorer_fingerprint"],
        "verifier_revision": binding["verifier_revision"],
        "scorer_revision": binding["scorer_revision"],
    }


def calibration_report(
    rows: Iterable[LabelledRepair],
    method: str = "both",
    alpha: float = 0.05,
    delta: float = 0.05,
    coverage_alpha: float = 0.10,
    compare: float | None = None,
    allow_repeated_groups: bool = False,
    binding: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    """The report ``groundswell calibrate`` writes (gtrex's calibrate report, with
    groundswell's schema and version), and whether every requested method succeeded.

    ``method="both"`` runs coverage only when there are faithful examples. A method that
    cannot certify is recorded as ``failed`` with its reason under ``errors``; invalid
    arguments raise.
    """
    from groundswell.shared import __version__

    if method not in REPORT_METHODS:
        raise ValueError(f"method is one of {', '.join(REPORT_METHODS)}, not {method!r}")
    examples = _examples(rows)
    record = _binding_record(binding)
    faithful = [e.score for e in examples if e.faithful]
    requested = ["risk"] if method in ("risk", "both") else []
    if method == "coverage" or (method == "both" and faithful):
        requested.append("coverage")
    status: dict[str, str] = {}
    errors: dict[str, str] = {}
    report: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "groundswell_version": __version__,
        "n": len(examples),
        "n_faithful": len(faithful),
        "requested": requested,
        "status": status,
        "errors": errors,
        "bound_to": bound_to(record),
    }
    for name in requested:
        try:
            if name == "risk":
                result = calibrate_risk(
                    examples,
                    alpha=alpha,
                    delta=delta,
                    allow_repeated_groups=allow_repeated_groups,
                    binding=record,
                )
            else:
                result = calibrate_coverage(faithful, alpha=coverage_alpha, binding=record)
        except CalibrationError as exc:
            status[name], errors[name] = "failed", str(exc)
        else:
            status[name], report[name] = "ok", result.as_dict()
    if compare is not None:
        report["compare"] = evaluate_threshold(examples, compare)
    return report, all(status.get(name) == "ok" for name in requested)


# -- files --------------------------------------------------------------------------------


def load_calibration(path: str | Path) -> Calibration:
    """The risk calibration in a file: a calibrate report (its ``risk`` part) or a bare
    calibration, groundswell's or gtrex's. What repair deploys is a risk threshold, so a
    coverage calibration, or a report whose risk calibration failed, is refused.
    Raises CalibrationInputError naming the file; check the binding afterwards."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CalibrationInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationInputError(f"{path}: not a JSON calibration: {exc}") from None
    if not isinstance(document, dict):
        raise CalibrationInputError(f"{path}: a calibration is a JSON object")
    section: Any = document
    if "risk" in document or document.get("schema") in REPORT_SCHEMAS:
        section = document.get("risk")
        if section is None:
            raise CalibrationInputError(
                f"{path}: the report holds no risk calibration (it failed or was not "
                "requested), so there is no threshold to deploy"
            )
    try:
        calibration = Calibration.from_dict(section)
    except (TypeError, ValueError) as exc:
        raise CalibrationInputError(f"{path}: not a usable calibration: {exc}") from None
    if calibration.method != RISK_METHOD:
        raise CalibrationInputError(
            f"{path}: a {calibration.method} calibration bounds how many genuine repairs are "
            f"lost, not false acceptance; repair needs a risk calibration ({RISK_METHOD})"
        )
    return calibration


def _numbered_lines(path: str) -> Iterator[tuple[int, str]]:
    """The lines of a UTF-8 file ('-': standard input), numbered from 1; a byte order mark
    is dropped from the first, and an invalid byte names its line."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise CalibrationInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise CalibrationInputError(
                f"{path}:{number}: not valid UTF-8 ({exc.reason}); convert the file first"
            ) from None


def _row(where: str, record: dict[str, Any]) -> LabelledRepair:
    faithful = record.get("faithful")
    if not isinstance(faithful, bool):
        raise CalibrationInputError(f"{where}: 'faithful' must be true or false, not {faithful!r}")
    score = record.get("score")
    # NaN and the infinities fail the range test (json reads NaN and Infinity).
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
        raise CalibrationInputError(f"{where}: 'score' must be a number in [0, 1], not {score!r}")
    group = record.get("group")
    if group is not None and (isinstance(group, bool) or not isinstance(group, str | int)):
        raise CalibrationInputError(
            f"{where}: 'group' must be a string or an integer, not {group!r}"
        )
    return LabelledRepair(float(score), faithful, group)


def _record(where: str, text: str) -> dict[str, Any]:
    """One line's JSON object, or the reason it is not one."""
    try:
        record = json.loads(text)
        if isinstance(record, dict):
            # A \ud800 escape reads as a lone surrogate, which no UTF-8 writer can encode.
            json.dumps(record, ensure_ascii=False).encode("utf-8")
            return record
        problem = "a record is a JSON object"
    except json.JSONDecodeError as exc:
        problem = f"invalid JSON: {exc}"
    except UnicodeEncodeError:
        problem = "contains an unpaired surrogate escape (such as \\ud800), which is not text"
    raise CalibrationInputError(f"{where}: {problem}")


def read_labelled(path: str | Path) -> list[LabelledRepair]:
    """Labelled examples from JSON Lines ``{"score", "faithful", "group"?}`` ('-': standard
    input); other fields are ignored, blank lines skipped. Raises CalibrationInputError as
    ``path:line: message`` at the first bad row."""
    name = str(path)
    return [
        _row(f"{name}:{number}", _record(f"{name}:{number}", line.strip()))
        for number, line in _numbered_lines(name)
        if line.strip()
    ]
