"""The review gauges' refresh: the runs answered since are taken a few at a time, and a run
that fails to be measured does not lose the others taken with it."""

from __future__ import annotations

from types import SimpleNamespace

from groundswell.shared.review import gauges, store

RESULT = {
    "policy_ref": "default@1",
    "load": {
        "unanswered": 1,
        "answered": 2,
        "disputed": 0,
        "reviewers": 2,
        "open_median_age_seconds": 60.0,
    },
    "measures": {"kinds": {}},
}


class _Runs:
    def __init__(self, due: list[str]) -> None:
        self.r = object()  # Redis is there: numbers are kept
        self.due = due
        self.kept: dict[str, dict] = {}

    def take_reviewed(self, most: int) -> list[str]:
        taken, self.due = self.due[:most], self.due[most:]
        return taken

    def set_review_latest(self, corpus, ref, run_id, numbers) -> None:
        self.kept[run_id] = numbers


def test_a_run_that_fails_to_be_measured_leaves_the_others_refreshed(monkeypatch):
    class Review:
        def __init__(self, service, run) -> None:
            self.run = run

        def measures(self) -> dict:
            if self.run.id == "r2":
                raise KeyError("review/tasks/r2/manifest.json")  # a storage object gone
            return RESULT

    monkeypatch.setattr(store, "RunReview", Review)
    runs = _Runs(["r1", "r2", "r3"])
    service = SimpleNamespace(
        runs=runs, get_or_none=lambda run_id: SimpleNamespace(id=run_id, corpus="c")
    )
    assert gauges.refresh(service) == 2
    assert sorted(runs.kept) == ["r1", "r3"] and runs.due == []
    assert runs.kept["r3"]["tasks"] == {"unanswered": 1, "answered": 2, "disputed": 0}
