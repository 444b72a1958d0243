"""Producers as a dimension: keys, per-producer counters, the bound and the summary section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundswell.shared import producers
from groundswell.shared.corpus import Labels
from groundswell.shared.producers import (
    MAX_PRODUCERS,
    OTHER,
    bounded,
    by_producer,
    counter,
    producer_key,
    producer_of,
    producer_problem,
    run_counters,
    split_counter,
    summary_section,
)
from groundswell.shared.summary import (
    merge,
    producer_candidate_counts,
    producer_claim_counts,
)

A = {"format": "langextract", "model": "gemini-2.5-flash", "prompt_version": "v3"}
B = {"format": "langextract", "model": "gpt-4.1", "prompt_version": "v3"}


def test_a_key_lists_the_members_in_order_and_is_never_other():
    assert producer_key(A) == "langextract:gemini-2.5-flash:v3"
    # A member left out keeps its place: a model and a prompt version of the same name differ.
    assert producer_key({"format": "x", "model": "a"}) == "x:a"
    assert producer_key({"format": "x", "prompt_version": "a"}) == "x::a"
    assert producer_key({"format": "other"}) != OTHER
    assert producer_key({"format": "a b@c"}) == "a_b_c"  # no @ (the counter's separator)
    long = producer_key({"format": "f", "model": "m" * 300})
    assert len(long) == producers.MAX_KEY
    assert long != producer_key({"format": "f", "model": "m" * 299})


def test_what_a_producer_is():
    assert producer_of(A) == A
    assert producer_of({**A, "temperature": 0.2}) == A  # members it does not know are carried
    assert producer_of("gpt-4o") == {"format": "gpt-4o"}
    assert producer_of({"model": "x"}) is None and producer_of(3) is None
    assert producer_of({"format": "x", "model": 4}) is None
    assert "object" in (producer_problem([1]) or "")
    assert producer_problem(A) is None


def test_counter_names_round_trip():
    name = counter("claims.accepted", producer_key(B))
    assert split_counter(name) == ("claims.accepted", "langextract:gpt-4.1:v3")
    assert split_counter("claims.accepted") is None


def _claims(producer: object, n: int, grounded: int) -> list[dict]:
    out = []
    for i in range(n):
        record = {"id": f"c{i}", "claim": "q", "alignment": "exact", "start": 0, "end": 1}
        if producer is not None:
            record["producer"] = producer
        ok = i < grounded
        cert = {
            "verdict": "grounded" if ok else "unlocated",
            "tier": "exact" if ok else None,
            "grounded": ok,
        }
        out.append({"line": i + 1, "record": record, "certificate": cert})
    return out


def test_claims_count_by_their_own_producer_else_the_corpus_one():
    records = _claims(A, 3, 2) + _claims(None, 2, 2) + _claims({"bad": 1}, 1, 1)
    labels = Labels(claims={"c1": False})
    counts = producer_claim_counts(records, labels, default=B)
    groups = by_producer(counts)
    a, b = groups[producer_key(A)], groups[producer_key(B)]
    assert a["claims"] == 3 and a["claims.accepted"] == 2
    # The exact spans that do not verify are the producer/verifier disagreements.
    assert a["disagree.exact_not_verified"] == 1 and a["claims.aligned"] == 3
    assert a["claims.escapes"] == 1 and a["claims.labelled_fabricated"] == 1  # c1 of A
    assert b["claims"] == 3  # two without a producer, one whose producer is no producer
    # No producer anywhere: nothing is counted by producer (the counters are as before).
    assert producer_claim_counts(_claims(None, 3, 1), labels) == {}


def test_candidates_count_by_their_producer_member_else_the_unit_one():
    body = {
        "producer": B,
        "records": [{"id": "x", "producer": A}, {"id": "y"}],
        "receipt": {
            "decisions": [
                {"candidate_id": "x", "outcome": "admitted", "codes": []},
                {"candidate_id": "y", "outcome": "needs_verification", "codes": []},
            ]
        },
    }
    counts = producer_candidate_counts(body, Labels(candidates={"x": False}))
    groups = by_producer(counts)
    assert groups[producer_key(A)] == {
        "candidates": 1,
        "candidates.outcome.admitted": 1,
        "candidates.labelled": 1,
        "candidates.labelled_wrong": 1,
        "candidates.escapes": 1,
    }
    assert groups[producer_key(B)]["candidates.outcome.needs_verification"] == 1
    assert producer_candidate_counts({"receipt": body["receipt"]}, None) == {}


def _unit(key: str, claims: int) -> dict[str, int]:
    return {counter("claims", key): claims, counter("claims.accepted", key): claims // 2}


def test_the_bound_keeps_the_largest_and_sums_the_rest_as_other():
    units = [_unit(f"p{i:02}", 100 + i) for i in range(MAX_PRODUCERS + 5)]
    total = merge(*units, {"claims": 7})
    kept = bounded(total)
    groups = by_producer(kept)
    assert len(groups) == MAX_PRODUCERS + 1 and OTHER in groups
    # The five smallest (p00..p04) are folded, and nothing is lost.
    assert groups[OTHER]["claims"] == sum(100 + i for i in range(5))
    assert "p04" not in groups and "p05" in groups
    assert sum(g["claims"] for g in groups.values()) == sum(100 + i for i in range(25))
    assert kept["claims"] == 7
    # Within the bound: the same map; bounding twice changes nothing.
    assert bounded(merge(*units[:3])) == merge(*units[:3])
    assert bounded(kept) == kept


def test_summaries_merge_then_bound_the_same_as_bound_at_the_end():
    # Counters are additive: merging two runs' counters and bounding equals the bound of all.
    units = [_unit(f"p{i:02}", 10 * (i + 1)) for i in range(30)]
    once = bounded(merge(*units))
    assert bounded(merge(merge(*units[:15]), merge(*units[15:]))) == once


def test_redis_never_holds_producer_counters():
    counts = {"claims": 3, **_unit("p", 3)}
    assert run_counters(counts) == {"claims": 3}


def test_the_summary_section_has_rates_and_lists_other_last():
    units = [_unit(f"p{i:02}", 100 + i) for i in range(MAX_PRODUCERS + 2)]
    section = summary_section(merge(*units))
    keys = list(section)
    assert keys[-1] == OTHER and keys[0] == f"p{MAX_PRODUCERS + 1:02}"
    first = section[keys[0]]
    assert first["rates"]["grounding_rate"] == round((121 // 2) / 121, 6)
    assert first["rates"]["review_rate"] is None  # no candidates
    assert summary_section({"claims": 4}) == {}


def _two_producer_corpus(root: Path, shared_corpus: Path, corpus_index: list[dict]) -> None:
    from tests.integration.corpus_gen import pick_documents, with_producers, write_corpus

    write_corpus(root, shared_corpus, pick_documents(shared_corpus, corpus_index, 6))
    with_producers(root, [B, A])


@pytest.fixture
def run(tmp_path: Path):
    from groundswell.shared.runs.inprocess import run_in_process
    from groundswell.shared.settings import Settings

    def go(corpus: Path) -> dict:
        return run_in_process(str(corpus), "default", str(tmp_path / "out"), Settings())

    return go


def test_a_run_breaks_its_summary_down_by_producer(tmp_path, shared_corpus, corpus_index, run):
    corpus = tmp_path / "corpus"
    _two_producer_corpus(corpus, shared_corpus, corpus_index)
    summary = run(corpus)
    section = summary["producers"]
    assert set(section) == {producer_key(A), producer_key(B)}
    counts = summary["counts"]
    # Every claim and candidate is some producer's; the per-producer counters add up.
    assert sum(p["counts"]["claims"] for p in section.values()) == counts["claims"]
    assert sum(p["counts"]["candidates"] for p in section.values()) == counts["candidates"]
    assert sum(p["counts"].get("candidates.escapes", 0) for p in section.values()) == counts.get(
        "candidates.escapes", 0
    )
    assert not any(k.startswith("producer.") for k in counts)
    for p in section.values():
        assert 0 <= p["rates"]["grounding_rate"] <= 1


def test_a_declared_corpus_producer_is_in_the_receipts_and_their_fingerprints(
    tmp_path, shared_corpus, corpus_index, run
):
    from groundswell.shared.storage import open_store
    from tests.integration.corpus_gen import pick_documents, write_corpus

    corpus = tmp_path / "corpus"
    write_corpus(corpus, shared_corpus, pick_documents(shared_corpus, corpus_index, 3))
    plain = run(corpus)
    assert "producers" not in plain
    out = open_store(str(tmp_path / "out"))
    before = {i.key for p in out.list_pages("receipts/") for i in p}
    assert before and all(b'"producer"' not in out.get(k) for k in before)

    (corpus / "corpus.yaml").write_text("producer:\n  format: layout\n  model: m1\n")
    declared = run(corpus)
    assert list(declared["producers"]) == ["layout:m1"]
    assert declared["producers"]["layout:m1"]["counts"]["claims"] == plain["counts"]["claims"]
    after = {i.key for p in out.list_pages("receipts/") for i in p} - before
    # New receipts (the producer is in their content, so in their fingerprint), each naming it.
    assert len(after) == len(before)
    assert all(json.loads(out.get(k))["producer"]["model"] == "m1" for k in after)
    # The same counts otherwise: the producer changes no verdict.
    assert declared["counts"] == plain["counts"]


def test_the_report_the_cli_summary_and_the_diff_show_the_breakdown(
    tmp_path, shared_corpus, corpus_index, run
):
    from rich.console import Console

    from groundswell.shared.cli.render import print_summary
    from groundswell.shared.report.render import render_report
    from groundswell.shared.results.diff import producer_rows

    corpus = tmp_path / "corpus"
    _two_producer_corpus(corpus, shared_corpus, corpus_index)
    summary = run(corpus)
    ka, kb = producer_key(A), producer_key(B)

    page = render_report(summary, [], lambda k: None, lambda d: None, lambda d: {}, 1)
    assert 'id="producers"' in page and f"<code>{ka}</code>" in page and kb in page

    console = Console(record=True, width=200)
    print_summary(summary, None, console)
    text = console.export_text()
    assert "By producer" in text and ka in text and kb in text

    # A run where only A's producer remains: B's rates stand against nothing.
    only_a = {**summary, "producers": {ka: summary["producers"][ka]}}
    rows = producer_rows(summary, only_a)
    grounding = {r["producer"]: r for r in rows if r["rate"] == "grounding rate"}
    assert grounding[ka]["change_pp"] == 0 and grounding[kb]["b"] is None
    assert producer_rows({}, {}) == []


def test_a_changed_declaration_is_a_changed_input_and_a_bad_producer_member_fails_its_record(
    tmp_path,
):
    from groundswell.shared.policies import PolicyRegistry
    from groundswell.shared.runs.units import UnitRunner
    from groundswell.shared.storage import open_store

    corpus = tmp_path / "c"
    (corpus / "documents").mkdir(parents=True)
    (corpus / "claims").mkdir()
    (corpus / "documents" / "d.txt").write_text("Net sales were $391 million in 2023.")
    (corpus / "claims" / "d.jsonl").write_text(
        json.dumps({"id": "a", "claim": "Net sales were $391 million"})
        + "\n"
        + json.dumps({"id": "b", "claim": "in 2023", "producer": 7})
        + "\n"
    )
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    policy = registry.resolve("default@1")

    def runner(previous=None) -> UnitRunner:
        return UnitRunner(open_store(str(corpus)), output, policy, previous=previous)

    first = runner().unit("verify", "d")
    assert "producer" not in first.inputs and first.counts["claims"] == 2
    # The record whose producer is no producer is verified, and named by file, line, field.
    (error,) = first.errors
    assert (error.file, error.line, error.field) == ("claims/d.jsonl", 2, "producer")
    row = first.row()
    (corpus / "corpus.yaml").write_text("producer:\n  model: m2\n")
    second = runner(lambda kind, doc: row).unit("verify", "d")
    assert second.status == "computed" and second.reason == "changed input"
    assert second.inputs["producer"] and second.receipt_key != first.receipt_key
    assert by_producer(second.counts) == {
        "layout:m2": {"claims": 2, "claims.accepted": 2},
    }
    # The same declaration again: its receipt is found.
    third = runner(lambda kind, doc: second.row()).unit("verify", "d")
    assert third.status == "cached" and third.receipt_key == second.receipt_key


def test_a_run_summary_names_at_most_the_bound_and_finalize_keeps_its_state_small(tmp_path):
    from groundswell.shared.runs.finalize import IndexBuild, build_summary
    from groundswell.shared.runs.segments import Segment, write_segment
    from groundswell.shared.storage import open_store

    store = open_store(str(tmp_path / "out"))
    # 120 producers, one batch each: finalize's summed state keeps at most MAX_TRACKED apart.
    for i in range(120):
        counters = {**_unit(f"p{i:03}", 10 + i), "claims": 10 + i}
        write_segment(store, "r1", Segment(f"b{i:04}", "verify", [], counters))
    build = IndexBuild(store, "r1")
    manifest = build.step(float("inf"))
    assert manifest is not None
    assert len(by_producer(build.counters)) <= producers.MAX_TRACKED + 1
    summary = build_summary({"id": "r1"}, build.counters, manifest)
    assert len(summary["producers"]) == MAX_PRODUCERS + 1
    keys = list(summary["producers"])
    assert keys[0] == "p119" and keys[-1] == OTHER
    assert sum(p["counts"]["claims"] for p in summary["producers"].values()) == sum(
        10 + i for i in range(120)
    )
    assert not any(k.startswith(producers.PREFIX) for k in summary["counts"])
