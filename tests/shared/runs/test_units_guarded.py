"""The admission unit decides with its run's policy version: ``guarded`` (or a published
version with a guard) writes guarded receipts under a fingerprint of its own, ``default``
writes groundgate's receipts as before; a diff of the two shows what the guard buys."""

from __future__ import annotations

from groundswell.shared.admit import admit
from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.receipts import open_receipt
from groundswell.shared.results.diff import labelled_rows, moved_items, rate_rows
from groundswell.shared.runs.units import UnitRunner
from groundswell.shared.storage import open_store
from groundswell.shared.summary import merge, rates
from tests.shared.runs.guarded_corpus import (
    FIGURES,
    NEIGHBOUR,
    SCHEMA,
    candidates,
    document,
    write_guarded_corpus,
)

DOC = "acme-2024"


def _runners(tmp_path, *refs: str):
    corpus = open_store(str(tmp_path / "corpus"))
    write_guarded_corpus(corpus)
    output = open_store(str(tmp_path / "out"))
    registry = PolicyRegistry(output)
    registry.ensure_builtins()
    return [UnitRunner(corpus, output, registry.resolve(ref)) for ref in refs], output, registry


def _receipt(output, unit) -> dict:
    return open_receipt(output.get(unit.receipt_key), unit.receipt_key)


def test_guarded_units_write_guarded_receipts_under_their_own_fingerprint(tmp_path):
    (default, guarded), output, _ = _runners(tmp_path, "default@1", "guarded@1")
    a, b = default.unit("admit", DOC), guarded.unit("admit", DOC)
    assert (a.status, b.status) == ("computed", "computed")
    assert a.receipt_key != b.receipt_key and a.policy_fingerprint != b.policy_fingerprint
    ra, rb = _receipt(output, a)["receipt"], _receipt(output, b)["receipt"]
    assert "guard" not in ra and all("guard" not in d for d in ra["decisions"])
    assert rb["guard"]["policy"] == "guarded" and rb["guard"]["revision"]
    assert all(isinstance(d["guard"], list) for d in rb["decisions"])

    # default's receipt is groundgate's, byte for byte: the one `admit` gives on the inputs.
    this_year, last_year = FIGURES[DOC]
    plain = admit(document(this_year, last_year), SCHEMA, candidates(DOC, this_year, last_year))
    assert ra["receipt_sha256"] == plain["receipt_sha256"]

    # The neighbouring column's cell: admitted by default (an escape), flagged by the guard.
    outcome = {d["candidate_id"]: (d["outcome"], d["codes"]) for d in rb["decisions"]}
    assert outcome[f"{DOC}:{NEIGHBOUR}"] == ("needs_verification", ["VALUE_NOT_IN_COLUMN"])
    assert a.counts["candidates.escapes"] == 1 and "candidates.escapes" not in b.counts
    assert b.counts["candidates.code.VALUE_NOT_IN_COLUMN"] == 1
    assert b.counts["candidates.wrong_reviewed"] == 1 == a.counts["candidates.wrong_rejected"]
    assert a.counts["candidates.right_admitted"] == 1 == b.counts["candidates.right_admitted"]

    # Found again under each policy; the other policy's receipt is never reused.
    assert (default.unit("admit", DOC).status, guarded.unit("admit", DOC).status) == (
        "cached",
        "cached",
    )


def test_a_published_version_with_a_guard_is_guarded_and_its_settings_move_the_fingerprint(
    tmp_path,
):
    (guarded,), output, registry = _runners(tmp_path, "guarded@1")
    off, _ = registry.publish(
        {
            "name": "lenient",
            "extends": "guarded@1",
            "guard": {"column": "off", "ambiguous": "off"},
        }
    )
    assert off.guard is not None and off.admit_fingerprint != guarded.policy.admit_fingerprint
    runner = UnitRunner(guarded.corpus, output, registry.resolve(off.ref))
    unit = runner.unit("admit", DOC)
    assert unit.receipt_key != guarded.unit("admit", DOC).receipt_key
    receipt = _receipt(output, unit)["receipt"]
    assert receipt["guard"]["settings"]["column"] == "off"
    # With the column (and the ambiguous cell) guard off, the neighbouring cell gets through.
    assert unit.counts["candidates.escapes"] == 1


def test_the_diff_of_default_and_guarded_shows_escapes_and_right_values_side_by_side(tmp_path):
    (default, guarded), output, _ = _runners(tmp_path, "default@1", "guarded@1")
    units = {
        name: [r.unit("admit", d) for d in FIGURES] for name, r in (("a", default), ("b", guarded))
    }
    summaries = {
        name: {"counts": (c := merge(*(u.counts for u in us))), "rates": rates(c)}
        for name, us in units.items()
    }
    rows = {r["count"]: r for r in labelled_rows(summaries["a"], summaries["b"])}
    docs = len(FIGURES)
    assert rows["escapes (wrong values admitted)"] == {
        "count": "escapes (wrong values admitted)",
        "a": docs,
        "b": 0,
        "change": -docs,
    }
    assert rows["right values admitted"]["a"] == rows["right values admitted"]["b"] == docs
    assert rows["right values to review"]["change"] == 0
    assert rows["right values rejected"]["b"] == 0
    assert rows["wrong values to review"]["change"] == docs
    assert rows["reviews (needs_verification)"]["b"] == docs

    table = {r["rate"]: r for r in rate_rows(summaries["a"], summaries["b"])}
    assert table["candidate escape rate"]["a"] == 0.5 and table["candidate escape rate"]["b"] == 0
    assert table["candidate escape rate"]["change_pp"] == -50.0
    assert table["right values admitted"]["a"] == table["right values admitted"]["b"] == 1.0
    assert table["right values to review"]["change_pp"] == 0.0
    assert table["right values rejected"]["b"] == 0.0

    def row(unit) -> dict:
        return {
            "doc_id": unit.doc_id,
            "kind": "admit",
            "receipt": unit.receipt_key,
            "receipt_sha256": unit.receipt_sha256,
        }

    moved = list(
        moved_items(
            iter(row(u) for u in units["a"]),
            iter(row(u) for u in units["b"]),
            lambda key: open_receipt(output.get(key), key),
        )
    )
    assert {m["id"] for m in moved} == {f"{d}:{NEIGHBOUR}" for d in FIGURES}
    assert all(m["a"]["outcome"] == "admitted" for m in moved)
    assert all(m["b"]["codes"] == ["VALUE_NOT_IN_COLUMN"] for m in moved)


def test_without_labels_the_diff_has_no_labelled_counts():
    plain = {"counts": {"candidates": 3, "candidates.outcome.admitted": 3}}
    assert labelled_rows(plain, plain) == []
    one = {"counts": {"candidates.labelled": 1, "candidates.escapes": 1}}
    rows = {r["count"]: r for r in labelled_rows(plain, one)}
    assert rows["escapes (wrong values admitted)"]["change"] == 1
