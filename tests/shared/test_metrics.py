"""What the metrics count: work done now, never a receipt found again; bounded corpus labels."""

from __future__ import annotations

import json
import re

from groundswell.shared.metrics import computed_now, corpus_label
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store


def _runner(tmp_path, only: str = "missing") -> UnitRunner:
    corpus = open_store(str(tmp_path / "corpus"))
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    return UnitRunner(corpus, output, registry.resolve("default@1"), only=only)


def sample(name: str, labels: dict[str, str]) -> float | None:
    """A sample of groundswell's own metrics, read from them (not from the global registry,
    which may hold an API's collector that another test of this process registered and that
    needs its Redis)."""
    from prometheus_client.metrics import MetricWrapperBase

    from groundswell.shared import metrics

    for metric in vars(metrics).values():
        if isinstance(metric, MetricWrapperBase):
            for family in metric.collect():
                for s in family.samples:
                    if s.name == name and s.labels == labels:
                        return s.value
    return None


def test_computed_now_tells_work_done_from_a_receipt_found(tmp_path):
    corpus = open_store(str(tmp_path / "corpus"))
    corpus.put("documents/ok.txt", b"Net sales rose 5% to $391.0 billion.")
    corpus.put("claims/ok.jsonl", b'{"id": "a", "claim": "Net sales rose 5%"}\n{"id": \n')
    corpus.put("documents/bad.txt", b"Net sales rose 5%.")
    corpus.put("candidates/bad.json", b"[{not json")
    corpus.put("schema.json", json.dumps({"fields": {"sales": {"type": "number"}}}).encode())
    corpus.put("claims/orphan.jsonl", b'{"id": "a", "claim": "x"}\n')  # no document

    runner = _runner(tmp_path)
    first = [
        runner.unit("verify", "ok"),
        runner.unit("admit", "bad"),
        runner.unit("verify", "orphan"),
    ]
    assert [r.status for r in first] == ["computed", "failed", "failed"]
    assert all(computed_now(r.row()) for r in first)

    again = [
        runner.unit("verify", "ok"),
        runner.unit("admit", "bad"),
        runner.unit("verify", "orphan"),
    ]
    assert [r.status for r in again] == ["cached", "failed", "failed"]
    # The receipt of a result and of a failure are found again; a missing input is not cached.
    assert [computed_now(r.row()) for r in again] == [False, False, True]

    recomputed = _runner(tmp_path, only="all").unit("verify", "ok")
    assert recomputed.status == "computed" and computed_now(recomputed.row())


def test_corpus_labels_are_short_distinct_and_name_no_folder():
    a = corpus_label("/srv/data/customer-a/filings-2025")
    b = corpus_label("/srv/data/customer-b/filings-2025")
    assert a.startswith("filings-2025-") and b.startswith("filings-2025-") and a != b
    assert "srv" not in a and corpus_label("/srv/data/customer-a/filings-2025") == a
    assert corpus_label("s3://bucket/corpora/sample").startswith("sample-")
    assert corpus_label("s3://bucket").startswith("bucket-")
    odd = corpus_label("/x/" + "é ü/" * 3 + "a" * 100)
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,32}-[0-9a-f]{8}", odd), odd
    assert re.fullmatch(r"[0-9a-f]{8}", corpus_label("/"))


def test_repair_actions_by_stage_and_wrong_repairs_are_exported_with_bounded_labels():
    from groundswell.shared.metrics import observe_batch
    from groundswell.shared.runs import kinds

    fresh = {
        "claims": 4,
        "repairs": 4,
        "repairs.at.substituted.alignment": 2,
        "repairs.at.rejected.numeric_guard": 1,
        "repairs.at.salvaged.fragment_salvage": 1,
        "repairs.at.rejected.run-1234": 7,  # not a stage: never a label
        "repairs.labelled.substituted": 2,
        "repairs.labelled.salvaged": 1,
        "repairs.wrong": 1,
        "repairs.wrong.substituted": 1,
    }
    policy = {"name": "metrics-repair", "version": 3}

    def value(name: str, **labels: str) -> float | None:
        return sample(name, {"policy": "metrics-repair", "version": "3", **labels})

    # The verify kind declares its own metrics (the registry's observe), as execute passes them.
    observe = kinds.get("verify").observe
    observe_batch("verify", [], fresh, policy, observe=observe)
    observe_batch("verify", [], {"claims": 1}, policy, observe=observe)  # no repair: nothing
    assert value("groundswell_repairs_total", action="substituted", stage="alignment") == 2
    assert value("groundswell_repairs_total", action="rejected", stage="numeric_guard") == 1
    assert value("groundswell_repairs_total", action="rejected", stage="run-1234") is None
    assert value("groundswell_wrong_repairs_total", action="substituted") == 1
    assert value("groundswell_wrong_repairs_total", action="salvaged") is None
    assert value("groundswell_labelled_total", kind="repair") == 3


def test_labelled_candidates_are_exported_by_gold_label_and_outcome_per_policy_version():
    from groundswell.shared.metrics import observe_batch
    from groundswell.shared.runs import kinds

    fresh = {
        "candidates": 9,
        "candidates.outcome.admitted": 4,
        "candidates.code.VALUE_NOT_IN_COLUMN": 2,
        "candidates.labelled": 8,
        "candidates.right_admitted": 3,
        "candidates.right_reviewed": 1,
        "candidates.escapes": 1,
        "candidates.wrong_reviewed": 2,
        "candidates.wrong_rejected": 1,
    }
    for name in ("metrics-gold-a", "metrics-gold-b"):
        observe_batch(
            "admit", [], fresh, {"name": name, "version": 2}, observe=kinds.get("admit").observe
        )

    def value(policy: str, gold: str, outcome: str) -> float | None:
        return sample(
            "groundswell_labelled_candidates_total",
            {"policy": policy, "version": "2", "gold": gold, "outcome": outcome},
        )

    for policy in ("metrics-gold-a", "metrics-gold-b"):  # side by side, one series each
        assert value(policy, "right", "admitted") == 3
        assert value(policy, "right", "needs_verification") == 1
        assert value(policy, "wrong", "admitted") == 1
        assert value(policy, "wrong", "needs_verification") == 2
        assert value(policy, "wrong", "rejected") == 1
        assert value(policy, "right", "rejected") is None  # nothing counted, no series
    assert (
        sample(
            "groundswell_decision_codes_total",
            {"policy": "metrics-gold-a", "version": "2", "code": "VALUE_NOT_IN_COLUMN"},
        )
        == 2
    )


def test_a_kind_without_rows_counts_its_computed_units_from_its_batch():
    """A ledger unit that loads leaves no index row: its batch's counters count it, as the
    kind's declaration (rows "failed") tells execute."""
    from groundswell.shared.metrics import observe_batch
    from groundswell.shared.runs import kinds

    def computed() -> float:  # the counter itself (the registry may hold an API collector)
        from groundswell.shared.metrics import UNITS

        labels = {"kind": "ledger", "status": "computed"}
        found = [
            s.value
            for family in UNITS.collect()
            for s in family.samples
            if s.name.endswith("_total") and s.labels == labels
        ]
        return found[0] if found else 0.0

    rowless = kinds.get("ledger").rows != "every"
    assert rowless
    before = computed()
    observe_batch("ledger", [], {"units.ledger.computed": 3}, {}, rowless=rowless)
    assert computed() == before + 3
    observe_batch("ledger", [], {"units.ledger.computed": 3}, {})  # a kind with rows: by rows
    assert computed() == before + 3


def test_producer_series_count_a_batch_by_producer_with_a_bounded_label(monkeypatch):
    from groundswell.shared import metrics
    from groundswell.shared.producers import MAX_PRODUCERS, OTHER, counter

    monkeypatch.setattr(metrics, "_PRODUCER_LABELS", set())
    fresh = {
        counter("claims", "lx:m1"): 5,
        counter("claims.accepted", "lx:m1"): 3,
        counter("claims.labelled_fabricated", "lx:m1"): 2,
        counter("claims.escapes", "lx:m1"): 1,
        counter("claims.aligned", "lx:m1"): 4,
        counter("disagree.exact_not_verified", "lx:m1"): 1,
    }
    metrics.observe_claims("pt", "1", fresh)
    at = {"policy": "pt", "version": "1", "producer": "lx:m1"}
    assert sample("groundswell_producer_claims_total", {**at, "outcome": "accepted"}) == 3
    assert sample("groundswell_producer_claims_total", {**at, "outcome": "refused"}) == 2
    assert sample("groundswell_producer_escapes_total", {**at, "kind": "claim"}) == 1
    assert sample("groundswell_producer_labelled_total", {**at, "kind": "claim"}) == 2
    assert sample("groundswell_producer_aligned_claims_total", at) == 4
    found = {**at, "disagreement": "exact_not_verified"}
    assert sample("groundswell_producer_disagreements_total", found) == 1
    # Past the bound, a new producer's series are "other"'s.
    for i in range(MAX_PRODUCERS):
        metrics.observe_candidates("pt", "1", {counter("candidates.outcome.admitted", f"p{i}"): 1})
    other = {"policy": "pt", "version": "1", "producer": OTHER, "outcome": "admitted"}
    assert sample("groundswell_producer_candidates_total", other) == 1
    assert len(metrics._PRODUCER_LABELS) == MAX_PRODUCERS
