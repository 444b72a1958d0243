"""Planning merges three sorted listings into units without reading bodies, and resumes."""

from __future__ import annotations

import json
import random

import pytest

from groundswell.shared.runs.plan import CorpusPlanner, PlannedUnit, batches
from groundswell.shared.storage import open_store


def _corpus(tmp_path, ids_docs, ids_claims, ids_cands):
    store = open_store(str(tmp_path / "corpus"))
    for doc_id in ids_docs:
        store.put(f"documents/{doc_id}.txt", b"x" * 10)
    for doc_id in ids_claims:
        store.put(f"claims/{doc_id}.jsonl", b"y" * 3)
    for doc_id in ids_cands:
        store.put(f"candidates/{doc_id}.json", b"z" * 2)
    store.put("schema.json", b"{}")
    return store


def _expected(ids_claims, ids_cands):
    return {("verify", d) for d in ids_claims} | {("admit", d) for d in ids_cands}


def test_ids_whose_keys_sort_differently_per_listing_are_merged(tmp_path):
    # "x" < "x.p" as ids, but "x.p.txt" < "x.txt" while "x.jsonl" < "x.p.jsonl".
    ids = ["x", "x.p", "x-1", "a", "x.k", "b"]
    store = _corpus(tmp_path, ids, ids, ids[:3])
    planner = CorpusPlanner(store, page_size=2)
    units = list(planner)
    assert {(u.kind, u.doc_id) for u in units} == _expected(ids, ids[:3])
    assert len(units) == len(ids) + 3  # each unit exactly once
    assert planner.documents == len(ids)
    weights = {(u.kind, u.doc_id): u.weight for u in units}
    assert weights[("verify", "x.p")] == 13 and weights[("admit", "x")] == 12


def test_units_without_a_document_are_still_planned(tmp_path):
    store = _corpus(tmp_path, ["a"], ["a", "ghost"], [])
    assert {(u.kind, u.doc_id) for u in CorpusPlanner(store)} == {
        ("verify", "a"),
        ("verify", "ghost"),
    }


@pytest.mark.parametrize("stop_every", [None, 1, 4])
def test_planning_resumes_from_its_cursor_planning_each_unit_exactly_once(tmp_path, stop_every):
    rng = random.Random(7)
    ids = sorted(
        {"".join(rng.choice("ab.-_1") for _ in range(rng.randint(1, 4))) for _ in range(300)}
    )
    claims = [d for d in ids if rng.random() < 0.8]
    cands = [d for d in ids if rng.random() < 0.5]
    store = _corpus(tmp_path, ids, claims, cands)
    seen: list[tuple[str, str]] = []
    cursor = None
    steps = 0
    while True:
        planner = CorpusPlanner(store, cursor, page_size=7)
        taken: list[int] = []

        def take(units, taken=taken) -> bool:  # a full planning window ends the step early
            if stop_every is not None and len(taken) >= stop_every:
                return False
            taken.append(len(units))
            return True

        seen += [(u.kind, u.doc_id) for u in planner.step(3, take)]  # then "crash", resume
        cursor = json.loads(json.dumps(planner.cursor()))  # as stored
        steps += 1
        if planner.finished:
            break
        assert steps < 2000
    assert len(seen) == len(set(seen))  # nothing planned twice across resumes
    assert set(seen) == _expected(claims, cands)


@pytest.mark.parametrize("max_units", [1, 3, 100])
def test_batches_respect_byte_budget_and_unit_count(max_units):
    units = [PlannedUnit("verify", f"d{i}", 40) for i in range(10)]
    units += [PlannedUnit("admit", "big", 1000), PlannedUnit("admit", "small", 5)]
    out = list(batches(units, max_bytes=100, max_units=max_units))
    verify = [ids for kind, ids in out if kind == "verify"]
    assert sum(len(ids) for ids in verify) == 10
    assert all(len(ids) <= min(2, max_units) for ids in verify)
    assert [ids for kind, ids in out if kind == "admit"] == [["big"], ["small"]]


def test_the_last_step_spreads_each_kind_over_even_batches():
    from groundswell.shared.runs.plan import Batcher

    batcher = Batcher(max_bytes=10_000, max_units=64)
    for i in range(70):
        batcher.add(PlannedUnit("verify", f"d{i:02d}", 40))
    for i in range(3):
        batcher.add(PlannedUnit("admit", f"d{i:02d}", 40))
    out = batcher.finish(spread=4)
    sizes = {kind: [len(ids) for k, ids in out if k == kind] for kind in ("verify", "admit")}
    assert sizes == {"verify": [18, 18, 18, 16], "admit": [1, 1, 1]}  # not 64 + 6
    assert [d for k, ids in out if k == "verify" for d in ids] == [f"d{i:02d}" for i in range(70)]
    plain = Batcher(max_bytes=10_000, max_units=64)
    for i in range(70):
        plain.add(PlannedUnit("verify", f"d{i:02d}", 40))
    assert [len(ids) for _, ids in plain.finish()] == [64, 6]


def test_the_planner_counts_every_listed_object_once_across_resumes(tmp_path):
    ids = [f"d{i:03d}" for i in range(40)]
    store = _corpus(tmp_path, ids, ids[:30], ids[:10])
    store.put("documents/sub/x.txt", b"stray")
    cursor, listed = None, 0
    while True:
        planner = CorpusPlanner(store, cursor, page_size=7)
        planner.step(3)
        listed += planner.listed
        cursor = json.loads(json.dumps(planner.cursor()))
        if planner.finished:
            break
    assert listed == 40 + 30 + 10 + 1  # documents, claims, candidates, the stray file
