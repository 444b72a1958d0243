"""Differential tests of the repair cascade against gtrex 1.1.0 (issue 13, the proof).

The same (source, claim, policy) goes through gtrex's ``Repairer`` and through groundswell's;
every field of ``Repair.as_dict()`` and the stored text must agree (policy fingerprints and
the wording of notes excepted; floats exactly).

Policies: every combination of repair mode (off, substitute, annotate), fragment salvage (off,
longest_grounded), threshold (0.65 set by the policy; none, so the default 0.65 with
``threshold_source="default"``; a high 0.9; a low 0.3) and the numeric and polarity guards
(on, off), on DEFAULT's other settings.

Claims: the near-miss families of ``families.py``, made from a fixed-seed sample of the shared
corpus: one small document from each part under every policy, and two large ones (the filing
nearest 200 KB, and the two largest documents joined to pass 1 MB) under a few policies; plus
the ``rep-*`` cases of reference/gtrex/cases.jsonl under every policy (and gtrex's own
recorded output for them, which checks the oracle).

The test of coverage asserts that every stage of the cascade decided at least one claim, so
agreement is not agreement on an easy subset. The (action, stage) table per family is printed
(``pytest -s``) and attached to a failure.

``GROUNDSWELL_REPAIR_SELF_CHECK=1`` runs gtrex against itself: the harness and the coverage
without groundswell's repair.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import re
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest

from groundswell.shared.repair import ACTIONS, STAGES
from groundswell.shared.settings import get_settings
from tests.shared.repair.families import FAMILIES, RepairClaimFactory, read_document, read_index
from tests.shared.repair.oracle import (
    Pair,
    differences,
    gtrex_repairer,
    our_policy,
    our_repairer,
    outcome,
)
from tests.shared.verify.oracle import gtrex_policy

CASES_PATH = get_settings().shared_corpus.parent / "reference" / "gtrex" / "cases.jsonl"
SELF_CHECK = os.environ.get("GROUNDSWELL_REPAIR_SELF_CHECK") == "1"
OURS = gtrex_repairer if SELF_CHECK else our_repairer

SEED = 13
MODES = ("off", "substitute", "annotate")
SALVAGE = ("off", "longest_grounded")
THRESHOLDS = (0.65, None, 0.9, 0.3)
GUARDS = (True, False)


def _variant(mode: str, salvage: str, threshold: float | None, guards: bool) -> dict[str, Any]:
    return {
        "repair_mode": mode,
        "salvage_policy": salvage,
        "repair_threshold": threshold,
        "numeric_guard": guards,
        "polarity_guard": guards,
    }


# Mode off returns before salvage, threshold and guards are read, so two of its sixteen
# combinations stand for all (one with every other setting at its default, one with every
# other setting changed); the repairing modes run all sixteen.
VARIANTS = [
    _variant("off", "off", None, True),
    _variant("off", "longest_grounded", 0.9, False),
    *(_variant(*v) for v in itertools.product(MODES[1:], SALVAGE, THRESHOLDS, GUARDS)),
]
# The ~200 KB document: the default policy as shipped, annotate with salvage at a low
# threshold, substitute with salvage and without guards at a high one. The 1 MB one (whose
# first alignment alone builds an index over a million characters): the default policy with
# salvage on.
LARGE_VARIANTS = (
    [
        _variant("substitute", "off", None, True),
        _variant("annotate", "longest_grounded", 0.3, True),
        _variant("substitute", "longest_grounded", 0.9, False),
    ],
    [_variant("substitute", "longest_grounded", None, True)],
)


def label(overrides: dict[str, Any]) -> str:
    guards = "guards" if overrides["numeric_guard"] else "noguards"
    return (
        f"{overrides['repair_mode']}/salvage={overrides['salvage_policy']}"
        f"/t={overrides['repair_threshold']}/{guards}"
    )


# --- the sample ----------------------------------------------------------------------------

SMALL = (8_000, 40_000)  # characters, for the documents that run under every policy
PARTS = ("sec_edgartools", "fda_labels", "uslm", "docugami_pdfs", "tatqa")
LARGE_TARGETS = (200_000, 1_000_000)
PER_FAMILY_SMALL = 2
DOCS_PER_VARIANT = 3  # variant n runs on small documents n, n + 1 and n + 2 (mod their number)
PER_FAMILY_LARGE = 2
# A run of dashes: the document a punctuation-only span can be located in (post_verify).
_RULE = re.compile(r"-{5,}")


@dataclass(frozen=True)
class Doc:
    name: str
    ids: tuple[str, ...]

    def text(self) -> str:
        return "\n\n".join(read_document(i) for i in self.ids)


@cache
def sample() -> tuple[list[Doc], list[Doc]]:
    """(small documents, large documents), the same on every run."""
    index = read_index()
    rng = random.Random(SEED)
    small: list[Doc] = []
    for part in PARTS:
        rows = (
            sorted(
                (
                    r
                    for r in index
                    if r["part"] == part and SMALL[0] <= r["length_chars"] <= SMALL[1]
                ),
                key=lambda r: r["id"],
            )
            or sorted((r for r in index if r["part"] == part), key=lambda r: -r["length_chars"])[:1]
        )
        if rows:
            pick = rng.choice(rows)["id"]
            small.append(Doc(pick, (pick,)))
    if not any(_RULE.search(d.text()) for d in small):
        ruled = [
            r["id"]
            for r in sorted(index, key=lambda r: r["id"])
            if SMALL[0] <= r["length_chars"] <= SMALL[1] and _RULE.search(read_document(r["id"]))
        ]
        if ruled:
            small.append(Doc(ruled[0], (ruled[0],)))
    by_size = sorted(index, key=lambda r: -r["length_chars"])
    near = min(index, key=lambda r: abs(r["length_chars"] - LARGE_TARGETS[0]))["id"]
    joined: list[str] = []
    for r in by_size:
        joined.append(r["id"])
        if sum(x["length_chars"] for x in by_size[: len(joined)]) >= LARGE_TARGETS[1]:
            break
    return small, [Doc(near, (near,)), Doc("+".join(joined), tuple(joined))]


def _cases() -> list[dict]:
    if not CASES_PATH.exists():
        return []
    with CASES_PATH.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if r["id"].startswith("rep-")]


# --- one run of everything, shared by the tests ----------------------------------------------


@dataclass
class Run:
    # (family, policy) -> Counter of gtrex's (action, stage)
    table: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    stages: Counter = field(default_factory=Counter)
    pairs: Counter = field(default_factory=Counter)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    claims: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def record(self, where: str, family: str, overrides: dict, claim: str, ours, theirs) -> None:
        self.claims += 1
        key = (theirs.get("action"), theirs.get("stage"))
        self.table[family][key] += 1
        self.stages[key[1]] += 1
        self.pairs[key] += 1
        diff = differences(ours, theirs)
        if diff:
            self.disagreements.append(
                {
                    "where": where,
                    "family": family,
                    "policy": label(overrides),
                    "claim": claim,
                    "theirs": key,
                    "diff": diff,
                }
            )

    def report(self) -> str:
        pairs = sorted(self.pairs)
        head = ["family".ljust(24)] + [f"{a}/{s}" for a, s in pairs]
        lines = ["  ".join(head)]
        for family in [*FAMILIES, "rep-cases"]:
            counts = self.table.get(family, Counter())
            cells = [str(counts.get(p, 0)).rjust(len(f"{p[0]}/{p[1]}")) for p in pairs]
            lines.append("  ".join([family.ljust(24), *cells]))
        lines.append(f"{self.claims} repairs per engine; seconds: {self.seconds}")
        for d in self.disagreements[:40]:
            lines.append(f"DIFF {d['where']} {d['family']} {d['policy']} {d['claim']!r:.100}")
            lines.append(f"     gtrex {d['theirs']}; {d['diff']}")
        if len(self.disagreements) > 40:
            lines.append(f"... and {len(self.disagreements) - 40} more")
        return "\n".join(lines)


def _document(run: Run, doc: Doc, text: str, n: int, overrides: dict, per_family: int) -> None:
    seed = zlib.crc32(f"{doc.name}/{n}".encode())
    pair = Pair(text, ours=OURS, **overrides)
    for c in RepairClaimFactory(text, seed).claims(per_family):
        run.record(doc.name, c.family, overrides, c.claim, *pair.run(c.claim))


def _small(run: Run, docs: list[Doc]) -> None:
    texts = [d.text() for d in docs]
    for n, overrides in enumerate(VARIANTS):
        for k in range(DOCS_PER_VARIANT):
            i = (n + k) % len(docs)
            _document(run, docs[i], texts[i], n, overrides, PER_FAMILY_SMALL)


def _large(run: Run, docs: list[Doc]) -> None:
    for doc, variants in zip(docs, LARGE_VARIANTS, strict=True):
        text = doc.text()
        for n, overrides in enumerate(variants):
            _document(run, doc, text, n, overrides, PER_FAMILY_LARGE)


def _rep_cases(run: Run) -> None:
    for case in _cases():
        base = case.get("policy_overrides") or {}
        for overrides in [None, *VARIANTS]:
            policy = base if overrides is None else overrides
            pair = Pair(case["source"], ours=OURS, **policy)
            ours, theirs = pair.run(case["claim"])
            shown = policy if overrides is not None else _variant_of(base)
            run.record(case["id"], "rep-cases", shown, case["claim"], ours, theirs)


def _variant_of(overrides: dict[str, Any]) -> dict[str, Any]:
    default = _variant("substitute", "off", None, True)
    return {**default, **overrides}


@pytest.fixture(scope="module")
def run() -> Run:
    result = Run()
    small, large = sample()
    for name, step in (
        ("small", lambda: _small(result, small)),
        ("large", lambda: _large(result, large)),
        ("cases", lambda: _rep_cases(result)),
    ):
        t0 = time.perf_counter()
        step()
        result.seconds[name] = round(time.perf_counter() - t0, 1)
    print("\n" + result.report())
    return result


# --- the tests -------------------------------------------------------------------------------


@pytest.mark.corpus
def test_sample_has_small_and_large_documents(shared_corpus) -> None:
    small, large = sample()
    assert len(small) >= len(PARTS) - 1
    sizes = [len(d.text()) for d in large]
    assert 150_000 <= sizes[0] <= 300_000
    assert sizes[1] >= 1_000_000


# gtrex's Policy fields not compared by value here: objects and provenance (the alignment is
# compared as a dictionary), and accept_through, which gtrex leaves None for "the last sound
# tier" and groundswell names.
NOT_COMPARED = {"alignment", "ladder", "upstream", "migrated_from", "accept_through"}


@pytest.mark.parametrize("name", ["strict", "default", "permissive"])
def test_builtin_policies_carry_gtrex_settings(name: str) -> None:
    """Every setting of a built-in policy, the cascade's included (a policy whose mode is
    changed from off repairs with them)."""
    ours, theirs = our_policy(name), gtrex_policy(name)
    differ = {
        f.name: (getattr(ours, f.name), getattr(theirs, f.name))
        for f in dataclasses.fields(theirs)
        if f.name not in NOT_COMPARED and getattr(ours, f.name) != getattr(theirs, f.name)
    }
    assert differ == {}
    assert ours.alignment.as_dict() == dataclasses.asdict(theirs.alignment)


def test_gtrex_reproduces_its_recorded_cases() -> None:
    """The oracle's own check: gtrex here gives what cases.jsonl recorded."""
    cases = _cases()
    assert len(cases) == 22
    for case in cases:
        repairer = gtrex_repairer(case["source"], **(case.get("policy_overrides") or {}))
        got = outcome(repairer, case["claim"])
        got.pop("text")
        assert differences(got, case["gtrex"]["default"]) == {}, case["id"]


@pytest.mark.corpus
def test_repair_agrees_with_gtrex(run: Run) -> None:
    assert run.disagreements == [], run.report()


@pytest.mark.corpus
def test_every_stage_decides_some_claim(run: Run) -> None:
    """gtrex decided claims at every stage and with every action groundswell declares, and
    at no other (so agreement covers the whole cascade)."""
    assert set(run.stages) == set(STAGES), run.report()
    assert {a for a, _ in run.pairs} == set(ACTIONS), run.report()
    # Annotate mode with salvage stops at the salvage stage too.
    assert ("annotated", "fragment_salvage") in run.pairs, run.report()
