"""Schedules and their beat entries on a real Redis (issue 25): one transaction for both, and
what beat cannot run is refused before anything is stored."""

from __future__ import annotations

import pytest
from redbeat import RedBeatSchedulerEntry

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.schedules import PREFIX, ScheduleSpec
from groundswell.workers.schedules import ScheduleRefused, add_schedule, remove_schedule

pytestmark = pytest.mark.integration


def _beat_keys(pipeline) -> list[bytes]:
    return sorted(pipeline.service.runs.r.scan_iter("gs:redbeat:schedule-*"))


def test_a_schedule_beat_cannot_run_is_refused_before_anything_is_stored(pipeline):
    service, app = pipeline.service, pipeline.app
    spec = ScheduleSpec(corpus=str(SAMPLE_CORPUS), every_seconds=3600)
    # What the model refuses can still reach add_schedule from code: it checks again.
    for every in (float("inf"), float("nan"), 1e308, -5.0, 0.0, 10.0**12):
        bad = ScheduleSpec.model_construct(**{**spec.model_dump(), "every_seconds": every})
        with pytest.raises(ScheduleRefused, match=r"every_seconds|beat cannot run it"):
            add_schedule(service, app, bad)
    neither = ScheduleSpec.model_construct(**{**spec.model_dump(), "every_seconds": None})
    with pytest.raises(ScheduleRefused, match="exactly one of every_seconds"):
        add_schedule(service, app, neither)
    assert service.runs.r.hlen(PREFIX + "s") == 0 and _beat_keys(pipeline) == []

    # A good one: the record and an entry redbeat itself loads, then both removed together.
    added = add_schedule(service, app, spec)
    entry = RedBeatSchedulerEntry.from_key(f"gs:redbeat:schedule-{added.id}", app=app)
    assert entry.args == [added.id, "tick"] and entry.schedule.run_every.total_seconds() == 3600
    score = service.runs.r.zscore(app.redbeat_conf.schedule_key, entry.key)
    assert score is not None and score > 0
    cron = add_schedule(
        service, app, spec.model_copy(update={"every_seconds": None, "cron": "0 3 * * 1"})
    )
    assert RedBeatSchedulerEntry.from_key(
        f"gs:redbeat:schedule-{cron.id}", app=app
    ).schedule.hour == {3}
    assert remove_schedule(service, app, added.id) and remove_schedule(service, app, cron.id)
    assert service.runs.r.hlen(PREFIX + "s") == 0 and _beat_keys(pipeline) == []
    assert service.runs.r.zcard(app.redbeat_conf.schedule_key) == 0
    assert not remove_schedule(service, app, added.id)
