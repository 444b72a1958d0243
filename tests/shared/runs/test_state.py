"""The exactly-once completion step and the redelivery cap, on a real Redis."""

from __future__ import annotations

import pytest

from shared.policies import PolicyRegistry
from shared.runs.models import RunRecord
from shared.runs.service import RunService
from shared.runs.state import RunStore, redis_client
from shared.settings import Settings
from shared.storage import open_store

pytestmark = pytest.mark.integration


@pytest.fixture
def runs(service_settings) -> RunStore:
    return RunStore(redis_client(str(service_settings["broker_url"])))


def _record(run_id: str = "r1") -> RunRecord:
    return RunRecord(
        id=run_id,
        corpus="/c",
        output="/o",
        policy={"ref": "default@1"},
        engines={},
        created_at="now",
    )


def test_a_unit_counts_once_however_often_it_is_recorded(runs):
    runs.create(_record())
    assert runs.add_planned("r1", ["verify/a", "verify/b"]) == ["verify/a", "verify/b"]
    assert runs.add_planned("r1", ["verify/a", "admit/a"]) == ["admit/a"]  # a set: no re-enqueue
    first = runs.record(
        "r1", "verify/a", {"status": "computed"}, {"claims": 3, "claims.accepted": 2}
    )
    again = runs.record(
        "r1", "verify/a", {"status": "computed"}, {"claims": 3, "claims.accepted": 2}
    )
    assert first.fresh and not again.fresh
    assert runs.counters("r1") == {
        "claims": 3,
        "claims.accepted": 2,
        "units.verify.planned": 2,  # planned counts per kind, once per unit too
        "units.admit.planned": 1,
    }
    assert (again.done, again.planned) == (1, 3)
    unplanned = runs.record("r1", "verify/zzz", {}, {"claims": 100})
    assert not unplanned.fresh and runs.counters("r1")["claims"] == 3
    runs.finish_planning("r1")
    runs.record("r1", "verify/b", {"status": "failed"}, {"units.verify.failed": 1})
    last = runs.record("r1", "admit/a", {"status": "cached"}, {"candidates": 1})
    assert last.run_complete
    assert runs.progress("r1").failed == 1


def test_idempotency_key_returns_the_first_run(runs):
    first = runs.create(_record("r1"), "k" * 64)
    second = runs.create(_record("r2"), "k" * 64)
    assert first.id == second.id == "r1"
    assert runs.get("r2") is None


def test_a_unit_that_keeps_dying_is_given_up_after_the_cap(runs, service_settings, tmp_path):
    settings = Settings(**{**service_settings, "max_redeliveries": 2})
    sent: list[tuple[str, list]] = []
    service = RunService(settings, runs, lambda kind, args: sent.append((kind, args)))
    record = _record("r9").model_copy(update={"corpus": str(tmp_path), "output": str(tmp_path)})
    PolicyRegistry(open_store(str(tmp_path))).ensure_builtins()
    runs.create(record)
    runs.add_planned("r9", ["verify/doc"])
    runs.finish_planning("r9")
    for _ in range(3):  # three deliveries that "crashed" before recording
        runs.attempt("r9", "verify/doc")
    (result,) = service.execute("verify", "r9", ["doc"])
    assert result.status == "failed" and "gave up after 3 deliveries" in result.errors[0].message
    assert sent == [("finalize", ["r9"])]
    assert runs.progress("r9").failed == 1
