"""A diff between a run without repair and one under a policy that repairs: the claims whose
repair action moved, and the repair rates side by side."""

from __future__ import annotations

from groundswell.shared.receipts import open_receipt
from groundswell.shared.results.diff import moved_items, rate_rows
from groundswell.shared.summary import rates
from tests.shared.runs.test_units import SAMPLE_DOC, _sample_runner


def test_moved_claims_name_the_repair_action_and_rates_compare_repairs(tmp_path):
    repair = {"repair_mode": "substitute"}
    runs = [_sample_runner(tmp_path / name, r) for name, r in (("a", None), ("b", repair))]
    units = [runner.unit("verify", SAMPLE_DOC) for runner, _, _ in runs]
    rows = [
        {
            "doc_id": SAMPLE_DOC,
            "kind": "verify",
            "receipt": u.receipt_key,
            "receipt_sha256": u.receipt_sha256,
        }
        for u in units
    ]
    stores = {u.receipt_key: output for u, (_, _, output) in zip(units, runs, strict=True)}
    moved = list(
        moved_items(iter(rows[:1]), iter(rows[1:]), lambda k: open_receipt(stores[k].get(k), k))
    )
    # The certificates are the same; every claim the cascade saw moved by its repair action.
    assert moved and all(m["change"] == "repair" and m["a"].get("repair") is None for m in moved)
    by_id = {m["id"]: m["b"]["repair"] for m in moved}
    assert by_id["q07"] == "substituted" and by_id["q08"] == "rejected"
    table = {
        r["rate"]: r
        for r in rate_rows({"rates": rates(units[0].counts)}, {"rates": rates(units[1].counts)})
    }
    assert table["claims kept by repair"]["a"] is None and table["claims kept by repair"]["b"] > 0
    assert "wrong repair rate" in table
    # Two runs without repair compare as before: no repair rows, no repair keys.
    plain = rate_rows({"rates": rates(units[0].counts)}, {"rates": rates(units[0].counts)})
    assert not any("repair" in r["rate"] for r in plain)
