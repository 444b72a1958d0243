"""The run index: an external sort of segments into pieces, its Merkle root, and its readers."""

from __future__ import annotations

import json
import random
import time
import tracemalloc

import pytest

from groundswell.shared.runs import finalize, index
from groundswell.shared.runs.finalize import IndexBuild
from groundswell.shared.runs.index import RunIndex, leaf, verify_index
from groundswell.shared.runs.layout import batch_id, segment_key
from groundswell.shared.runs.segments import Segment, cover, covering_segments, write_segment
from groundswell.shared.storage import open_store
from groundswell.shared.summary import merkle_root


def _row(doc: str, kind: str, *, failed: bool = False, flagged: int = 0) -> dict:
    row = {
        "unit": f"{kind}/{doc}",
        "doc_id": doc,
        "kind": kind,
        "status": "failed" if failed else "computed",
        "receipt": None if failed else f"receipts/{kind}/{doc}.json",
        "receipt_sha256": None if failed else f"{hash((doc, kind)) & 0xFFFFFFFF:08x}",
        "bytes": None if failed else len(doc) * 10,
        "errors": [{"file": f"claims/{doc}.jsonl", "line": 1, "field": None, "message": "x"}]
        if failed
        else [],
    }
    if kind == "admit":
        row["flagged"] = flagged
    return row


def _rows(n_docs: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    # Ids whose order differs from listing order ("a-1" < "a" in a listing, not as ids).
    docs = [f"doc-{i:05d}" for i in range(n_docs)] + ["a", "a-1", "a.b", "é"]
    rows = []
    for doc in docs:
        rows.append(_row(doc, "verify", failed=rng.random() < 0.05))
        if rng.random() < 0.7:
            rows.append(_row(doc, "admit", flagged=rng.randrange(3)))
    rng.shuffle(rows)  # batches are only roughly in document order
    return rows


def _write_segments(store, run_id: str, rows: list[dict], batch_size: int) -> None:
    for seq, start in enumerate(range(0, len(rows), batch_size)):
        part = rows[start : start + batch_size]
        counters = {"claims": len(part), f"units.{part[0]['kind']}.computed": len(part)}
        write_segment(store, run_id, Segment(batch_id(seq), part[0]["kind"], part, counters))


@pytest.fixture
def tiny(monkeypatch):
    """Buffers so small that every path of the external sort runs: many sorted runs,
    several merge levels, many pieces."""
    monkeypatch.setattr(finalize, "SORT_ROWS", 7)
    monkeypatch.setattr(finalize, "CHUNK_ROWS", 3)
    monkeypatch.setattr(finalize, "FAN_IN", 2)
    monkeypatch.setattr(index, "PIECE_ROWS", 5)


def _build(store, run_id: str, steps_until_done: bool = True) -> tuple[dict, IndexBuild, int]:
    steps = 0
    while True:
        build = IndexBuild(store, run_id)  # a new object each step: state comes from storage
        manifest = build.step(time.monotonic() if steps_until_done else float("inf"))
        steps += 1
        if manifest is not None:
            return manifest, build, steps
        assert steps < 10_000


def test_the_external_sort_in_resumable_steps_equals_a_sort_in_memory(tmp_path, tiny):
    store = open_store(str(tmp_path))
    rows = _rows(60)
    _write_segments(store, "r", rows, batch_size=4)
    manifest, build, steps = _build(store, "r")
    assert steps > 10  # it really was resumed many times

    expected = sorted(rows, key=lambda r: (r["doc_id"], r["kind"]))
    got = list(RunIndex(store, "r").rows())
    assert got == expected
    assert manifest["merkle_root"] == merkle_root(leaf(r) for r in expected)
    assert verify_index(store, "r") == manifest["merkle_root"]
    assert all(p["units"] <= 5 for p in manifest["pieces"]) and len(manifest["pieces"]) > 10
    docs = {r["doc_id"]: r["bytes"] for r in expected if r["bytes"] is not None}
    assert (manifest["documents"], manifest["bytes"]) == (len(docs), sum(docs.values()))
    assert manifest["failed_units"] == sum(r["status"] == "failed" for r in rows)
    assert manifest["errors"][0]["unit"] == next(r["unit"] for r in expected if r["errors"])
    counters = build.counters  # summed from the segments, as finalize reports them
    assert counters["claims"] == len(rows)
    assert sum(v for k, v in counters.items() if k.startswith("units.")) == len(rows)
    # The documents a person should see first: failures, then flagged decisions, then by id.
    attention = {}
    for r in expected:
        failed, flagged = attention.get(r["doc_id"], (0, 0))
        attention[r["doc_id"]] = (
            failed + (r["status"] == "failed"),
            flagged + r.get("flagged", 0),
        )
    best = sorted(attention, key=lambda d: (-attention[d][0], -attention[d][1], d))
    assert [h["doc_id"] for h in RunIndex(store, "r").highlights()] == best


def test_the_root_depends_on_what_was_produced_not_on_batching(tmp_path, tiny):
    store = open_store(str(tmp_path))
    rows = _rows(30, seed=3)
    _write_segments(store, "by-3", rows, 3)
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    _write_segments(store, "by-11", shuffled, 11)
    a, _, _ = _build(store, "by-3")
    b, _, _ = _build(store, "by-11", steps_until_done=False)
    assert a["merkle_root"] == b["merkle_root"]
    changed = [dict(r) for r in rows]
    changed[0]["receipt_sha256"] = "0" * 8
    _write_segments(store, "changed", changed, 3)
    assert _build(store, "changed")[0]["merkle_root"] != a["merkle_root"]


def test_a_split_batch_is_covered_once_by_itself_or_by_its_halves(tmp_path):
    assert cover("7", {"7", "7.0", "7.1"}) == ["7"]  # the parent was recorded
    assert cover("8", {"8.0", "8.1.0", "8.1.1", "8.1"}) == ["8.0", "8.1"]
    assert cover("9", {"9.0", "9.1.0", "9.1.1"}) == ["9.0", "9.1.0", "9.1.1"]
    store = open_store(str(tmp_path))
    for batch in ["0000000007", "0000000007.0", "0000000008.0", "0000000008.1.1", "0000000008.1.0"]:
        store.put(segment_key("r", batch), b"{}")
    groups = list(covering_segments(store, "r", page_size=2))
    assert [(g.top, g.batches) for g in groups] == [
        ("0000000007", ["0000000007"]),
        ("0000000008", ["0000000008.0", "0000000008.1.0", "0000000008.1.1"]),
    ]
    resumed = list(covering_segments(store, "r", start_after=groups[0].last_key))
    assert [g.top for g in resumed] == ["0000000008"]


def test_the_reader_pages_and_finds_with_one_piece_at_a_time(tmp_path, tiny):
    store = open_store(str(tmp_path))
    rows = _rows(40, seed=5)
    _write_segments(store, "r", rows, 6)
    _build(store, "r", steps_until_done=False)
    expected = sorted(rows, key=lambda r: (r["doc_id"], r["kind"]))
    reader = RunIndex(store, "r")
    for limit in (1, 4, 5, 7, 1000):
        seen, after, more = [], None, True
        while more:
            page, more = reader.page(after, limit)
            assert len(page) <= limit
            seen += page
            after = (page[-1]["doc_id"], page[-1]["kind"]) if page else None
        assert seen == expected, limit
    for row in expected:
        assert reader.find(row["kind"], row["doc_id"]) == row
    assert reader.find("verify", "doc-00000x") is None and reader.find("admit", "zzz") is None
    doc = expected[10]["doc_id"]
    assert reader.document(doc) == [r for r in expected if r["doc_id"] == doc]


def test_finalize_memory_stays_flat_as_the_run_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(finalize, "SORT_ROWS", 2000)
    monkeypatch.setattr(finalize, "CHUNK_ROWS", 500)
    monkeypatch.setattr(index, "PIECE_ROWS", 1000)
    store = open_store(str(tmp_path))
    peaks = {}
    for n_docs in (2_000, 20_000):
        rows = [_row(f"d{i:06d}", "verify") for i in range(n_docs)]
        random.Random(n_docs).shuffle(rows)
        _write_segments(store, f"n{n_docs}", rows, 64)
        del rows
        tracemalloc.start()
        manifest, _, _ = _build(store, f"n{n_docs}", steps_until_done=False)
        peaks[n_docs] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert manifest["units"] == n_docs
    # Ten times the rows, about the same memory: a sort buffer, a chunk per input, a piece.
    assert peaks[20_000] < 1.5 * peaks[2_000] + 2_000_000, peaks


def test_a_segment_is_written_once_and_a_second_delivery_adopts_it(tmp_path):
    store = open_store(str(tmp_path))
    first = Segment("0000000001", "verify", [_row("a", "verify")], {"units.verify.computed": 1})
    second = Segment("0000000001", "verify", [_row("a", "verify")], {"units.verify.cached": 1})
    assert write_segment(store, "r", first) is first
    adopted = write_segment(store, "r", second)
    assert adopted.counters == first.counters  # what Redis adds is what storage holds
    body = json.loads(store.get(segment_key("r", "0000000001")))
    assert body["counters"] == {"units.verify.computed": 1}


def test_a_page_or_a_lookup_reads_one_piece_however_large_the_run(tmp_path, tiny):
    store = open_store(str(tmp_path))
    rows = _rows(200, seed=11)
    _write_segments(store, "r", rows, 10)
    manifest, _, _ = _build(store, "r", steps_until_done=False)
    assert len(manifest["pieces"]) > 60
    reads: list[str] = []
    original = store.get

    def counting_get(key: str) -> bytes:
        reads.append(key)
        return original(key)

    store.get = counting_get  # type: ignore[method-assign]
    index._pieces.clear()  # a cold process
    index._manifests.clear()
    middle = sorted(rows, key=lambda r: (r["doc_id"], r["kind"]))[len(rows) // 2]
    reader = RunIndex(store, "r")
    page, more = reader.page((middle["doc_id"], middle["kind"]), 3)
    assert len(page) == 3 and more
    assert reader.find("verify", middle["doc_id"]) is not None
    pieces = [k for k in reads if "/index/0" in k]
    assert len(reads) - len(pieces) == 1  # the manifest
    assert 1 <= len(pieces) <= 2, pieces  # the piece holding the key (and the next one)


def test_batches_planned_in_document_order_sort_into_one_run_per_kind(tmp_path, tiny):
    store = open_store(str(tmp_path))
    docs = [f"d{i:04d}" for i in range(50)]
    seq = 0
    for start in range(0, 50, 5):  # as planned: per step, a verify and an admit batch
        for kind in ("verify", "admit"):
            rows = [_row(d, kind) for d in docs[start : start + 5]]
            write_segment(store, "r", Segment(batch_id(seq), kind, rows, {"claims": 1}))
            seq += 1
    manifest, build, _ = _build(store, "r", steps_until_done=False)
    assert len(build.state["runs"]) == 2  # no merge level: the final merge has two inputs
    assert [r["unit"] for r in RunIndex(store, "r").rows()] == [
        f"{kind}/{d}" for d in docs for kind in ("admit", "verify")
    ]
    assert manifest["units"] == 100


def test_a_leaf_is_the_canonical_json_of_unit_digest_and_failure():
    from groundswell.shared.canonical import canonical_json

    names = [
        "plain",
        'q"uote\\\\',
        "tab\there\nnew",
        "ctl\x01\x1f\x7f",
        "é中😀",
        "\u2028\u2029",
        "",
    ]
    for name in names:
        for digest in (None, "ab" * 32):
            for status in ("computed", "failed"):
                row = {"unit": f"verify/{name}", "receipt_sha256": digest, "status": status}
                expected = canonical_json(
                    {"unit": row["unit"], "receipt_sha256": digest, "failed": status == "failed"}
                )
                assert leaf(row) == expected, row
    lone = {"unit": "verify/\udc80", "receipt_sha256": None, "status": "computed"}
    assert leaf(lone) == canonical_json(
        {"unit": "verify/\udc80", "receipt_sha256": None, "failed": False}
    )
