"""Producers as a dimension: who made a record, as a short key, and the bounded counters by it.

A producer is what a record or the corpus declares about the extractor that made it
(:class:`groundswell.shared.formats.models.Producer`: format, producer version, model, prompt
and schema version). A unit's receipt carries the corpus's declared producer (``corpus.yaml``)
and each record its own (a ``producer`` member of a claim line or a candidate); the counters
of a unit are then also kept per producer key, as ``producer.<counter>@<key>``, so summaries
still merge by addition.

The bound: a summary names at most :data:`MAX_PRODUCERS` producers, the largest by volume
(claims and candidates), and sums the rest as :data:`OTHER` (:func:`bounded`, applied when a
summary is built); while a run's segments are summed, past :data:`MAX_TRACKED` keys the smallest
are folded the same way, so finalize's state stays small; Redis never holds them
(:func:`run_counters`); a process's metrics label at most :data:`MAX_PRODUCERS` producers, the
rest ``other`` (``shared/metrics.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

PREFIX = "producer."
SEP = "@"
OTHER = "other"
# Named in a summary, the API, the report and as metric labels; the rest are OTHER.
MAX_PRODUCERS = 20
# Kept apart while a run's segments are summed (finalize), before the summary's bound.
MAX_TRACKED = 4 * MAX_PRODUCERS
# The members of a producer, in the order its key lists them.
FIELDS = ("format", "model", "prompt_version", "schema_version", "producer_version")
MAX_KEY = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._+/-]+")
# The counters of a unit kept per producer: volume, grounding, labels and escapes, review
# load, and producer/verifier disagreement (``disagree.*``: DISAGREEMENTS).
KEPT = (
    "claims",
    "claims.accepted",
    "claims.labelled",
    "claims.labelled_fabricated",
    "claims.escapes",
    "claims.aligned",
    "candidates",
    "candidates.outcome.admitted",
    "candidates.outcome.needs_verification",
    "candidates.outcome.rejected",
    "candidates.labelled",
    "candidates.labelled_wrong",
    "candidates.escapes",
)
KEPT_PREFIXES = ("disagree.",)


def producer_of(value: Any) -> dict[str, str] | None:
    """A declared producer as a dict of its string members, or None when ``value`` is not one
    (not an object, no ``format`` string, a known member that is not a string). Members it
    does not know are left out of the key (a producer's own additions are carried). A string
    names a producer by itself (``"gpt-4o"``: its format member)."""
    if isinstance(value, str) and value.strip():
        return {"format": value}
    if not isinstance(value, dict) or not isinstance(value.get("format"), str):
        return None
    if any(not isinstance(value.get(k), str | None) for k in FIELDS):
        return None
    return {k: value[k] for k in FIELDS if value.get(k) is not None}


def producer_problem(value: Any) -> str | None:
    """Why a record's ``producer`` member is not a producer (None: it is one)."""
    if producer_of(value) is not None:
        return None
    if not isinstance(value, dict):
        return f"a producer is an object, not {type(value).__name__}"
    return f"a producer has a format string, and string members ({', '.join(FIELDS)})"


def producer_key(producer: Mapping[str, Any]) -> str:
    """The short key of a producer: its members in :data:`FIELDS` order, ``:``-separated,
    trailing empty ones left out (``langextract:gemini-2.5-flash:v3``); characters outside
    ``A-Za-z0-9._+/-`` become ``_``, and a key longer than :data:`MAX_KEY` keeps its start and
    a digest of the whole. Never :data:`OTHER`."""
    parts = [_UNSAFE.sub("_", str(producer.get(f) or "")) for f in FIELDS]
    while parts and not parts[-1]:
        parts.pop()
    key = ":".join(parts)
    if len(key) > MAX_KEY:
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        key = f"{key[: MAX_KEY - 13]}~{digest}"
    return key if key != OTHER else f"{OTHER}:"


def declared_input(producer: Mapping[str, Any] | None) -> dict[str, str]:
    """A unit's ``inputs`` entry for the corpus's declared producer (its digest), so a changed
    declaration reads as a changed input; none without one (the index rows are as before)."""
    if not producer:
        return {}
    from groundswell.shared.canonical import json_sha256

    return {"producer": json_sha256(dict(producer))}


def counter(name: str, key: str) -> str:
    return f"{PREFIX}{name}{SEP}{key}"


def split_counter(name: str) -> tuple[str, str] | None:
    """``(counter, key)`` of a per-producer counter name, None for any other counter."""
    if not name.startswith(PREFIX):
        return None
    inner, sep, key = name[len(PREFIX) :].rpartition(SEP)
    return (inner, key) if sep else None


def kept(counts: Mapping[str, int], key: str) -> dict[str, int]:
    """The counters of ``counts`` (one producer's share of a unit) kept under ``key``."""
    return {
        counter(name, key): n
        for name, n in counts.items()
        if n and (name in KEPT or name.startswith(KEPT_PREFIXES))
    }


def by_producer(counters: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Per-producer counters as ``{key: {counter: n}}``."""
    out: dict[str, dict[str, int]] = {}
    for name, n in counters.items():
        split = split_counter(name)
        if split is not None and n:
            inner, key = split
            out.setdefault(key, {})[inner] = out.get(key, {}).get(inner, 0) + n
    return out


def volume(counts: Mapping[str, int]) -> int:
    return counts.get("claims", 0) + counts.get("candidates", 0)


def bounded(counters: Mapping[str, int], limit: int = MAX_PRODUCERS) -> dict[str, int]:
    """``counters`` with at most ``limit`` producer keys besides OTHER: the largest by volume
    (ties by key, so the fold is deterministic), the rest summed into OTHER. Other counters are
    unchanged; within the bound, the same map."""
    groups = by_producer(counters)
    named = [k for k in groups if k != OTHER]
    if len(named) <= limit:
        return dict(counters)
    ranked = sorted(named, key=lambda k: (-volume(groups[k]), k))
    folded = set(ranked[limit:])
    out: Counter[str] = Counter()
    for name, n in counters.items():
        split = split_counter(name)
        if split is not None and split[1] in folded:
            out[counter(split[0], OTHER)] += n
        else:
            out[name] += n
    return dict(out)


def run_counters(counters: Mapping[str, int]) -> dict[str, int]:
    """The counters Redis adds up during a run: all but the per-producer ones (the summary
    sums those from the segments, bounded there), so Redis holds a few numbers per run
    however many producers a corpus has."""
    return {k: v for k, v in counters.items() if not k.startswith(PREFIX)}


def rates(counts: Mapping[str, int]) -> dict[str, float | None]:
    """One producer's rates: grounding, escapes (labelled claims and candidates), review load
    and the share of aligned claims whose alignment the verifier contradicts."""

    def share(num: str, den: str) -> float | None:
        d = counts.get(den, 0)
        return round(counts.get(num, 0) / d, 6) if d else None

    disagreements = sum(n for k, n in counts.items() if k.startswith("disagree."))
    aligned = counts.get("claims.aligned", 0)
    return {
        "grounding_rate": share("claims.accepted", "claims"),
        "claims_escape_rate": share("claims.escapes", "claims.labelled_fabricated"),
        "candidates_escape_rate": share("candidates.escapes", "candidates.labelled_wrong"),
        "review_rate": share("candidates.outcome.needs_verification", "candidates"),
        "rejected_rate": share("candidates.outcome.rejected", "candidates"),
        "disagreement_rate": round(disagreements / aligned, 6) if aligned else None,
    }


def summary_section(counters: Mapping[str, int]) -> dict[str, Any]:
    """A summary's ``producers``: per key (largest first, OTHER last) its counters and rates."""
    groups = by_producer(bounded(counters))
    order = sorted(groups, key=lambda k: (k == OTHER, -volume(groups[k]), k))
    return {
        k: {"counts": dict(sorted(groups[k].items())), "rates": rates(groups[k])} for k in order
    }


def group_by(
    items: Iterable[tuple[str | None, Any]], default: str | None
) -> dict[str | None, list[Any]]:
    """Items grouped by their producer key (None: the unit's ``default``), in first-seen order."""
    out: dict[str | None, list[Any]] = {}
    for key, item in items:
        out.setdefault(key if key is not None else default, []).append(item)
    return out


DISAGREEMENTS = ("exact_not_verified", "unaligned_located", "lesser_short")
# Tiers at which a span "is" the quotation a producer calls exact; verdicts that find it.
EXACT_TIERS = ("exact", "whitespace")
FOUND = ("grounded", "grounded_loose")


def disagreement(alignment: Any, bound: bool, verdict: Any, tier: Any) -> str | None:
    """Where a producer's own alignment claim and the verifier's certificate disagree:
    ``exact_not_verified`` (a span called exact that does not verify at the exact or
    whitespace tier), ``unaligned_located`` (a quotation the producer could not align that the
    verifier finds), ``lesser_short`` (a span called a lesser match that does not hold the
    quotation); None when they agree. ``bound``: verified at the producer's span."""
    found = verdict in FOUND
    if not bound:
        return "unaligned_located" if alignment == "unaligned" and found else None
    if alignment == "exact" and not (found and tier in EXACT_TIERS):
        return "exact_not_verified"
    if alignment == "lesser" and not found:
        return "lesser_short"
    return None
