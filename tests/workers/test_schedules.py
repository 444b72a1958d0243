"""Schedules and their beat entries on a real Redis (issue 25): one transaction for both, and
what beat cannot run is refused before anything is stored."""

from __future__ import annotations

import json

import pytest
from redbeat import RedBeatSchedulerEntry
from redbeat.schedulers import ensure_conf

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.schedules import PREFIX, ScheduleSpec
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


def test_beat_and_the_fired_task_skip_what_they_cannot_read(pipeline):
    """A beat entry beat cannot decode and a schedule record that is not one: beat keeps
    ticking (the readable schedule fires, again and again), and the fired task of the bad
    record starts nothing."""
    from tests.api.test_schedules import OLD_BAD_RECORD
    from tests.conftest import wait_until

    service, app, r = pipeline.service, pipeline.app, pipeline.service.runs.r
    # As the old code left it: a record without interval or cron, and beside it a beat
    # entry of another version whose definition is not JSON (both due at once).
    r.hset(PREFIX + "s", OLD_BAD_RECORD["id"], json.dumps(OLD_BAD_RECORD))
    garbage = "gs:redbeat:schedule-s-garbage"
    r.hset(garbage, "definition", b"\xff{not json")
    r.zadd(ensure_conf(app).schedule_key, {garbage: 1})
    assert service.fire_schedule(OLD_BAD_RECORD["id"]) is None
    assert service.runs.r.hget(PREFIX + "s", OLD_BAD_RECORD["id"]) is not None  # kept

    good = add_schedule(service, app, ScheduleSpec(corpus=str(SAMPLE_CORPUS), every_seconds=1))
    pipeline.start_worker("w1")
    beat = pipeline.start_beat("beat")
    wait_until(
        lambda: (service.schedules.get(good.id).runs or 0) >= 2,
        timeout=180,
        what="the readable schedule to fire twice beside the unreadable ones",
    )
    assert beat.poll() is None, "beat stopped"
    log = (pipeline.log_dir / "beat.log").read_text()
    assert "gs:redbeat:schedule-s-garbage" in log and "unreadable" in log


def _fires(outcome: str) -> float:
    from groundswell.shared.metrics import SCHEDULE_FIRES

    return SCHEDULE_FIRES.labels(outcome)._value.get()


def test_a_fired_schedule_is_checked_against_the_allow_list_of_now(
    service_settings, output_bucket, tmp_path
):
    """A schedule made through the API while its corpus was allowed, fired after the
    allow-list changed: refused, with last_error, counted, and no run; an operator's own
    schedule (the CLI, like `groundswell run`) is not the API's to refuse."""
    from tests.conftest import Pipeline

    elsewhere = tmp_path / "allowed-now"
    elsewhere.mkdir()
    values = {
        **service_settings,
        "storage_url": f"s3://{output_bucket}/out",
        "allowed_corpora": str(elsewhere),
    }
    pipeline = Pipeline(values, tmp_path)
    service, app = pipeline.service, pipeline.app
    spec = ScheduleSpec(corpus=str(SAMPLE_CORPUS), every_seconds=3600)
    made_by_key = add_schedule(service, app, spec, created_by="alice")
    assert made_by_key.created_by == "alice" and made_by_key.origin == "api"
    refused_before = _fires("refused")
    assert service.fire_schedule(made_by_key.id, "publish:default@2") is None
    after = service.schedules.get(made_by_key.id)
    assert after.runs == 0 and after.last_run_id is None
    assert "GROUNDSWELL_ALLOWED_CORPORA" in after.last_error
    assert _fires("refused") == refused_before + 1
    assert service.list_runs(0, 10)[1] == 0

    operators = add_schedule(service, app, spec)
    assert operators.created_by is None and operators.origin == "cli"
    started_before = _fires("started")
    record = service.fire_schedule(operators.id, "publish:default@2")
    assert record is not None and record.schedule == operators.id
    assert service.schedules.get(operators.id).last_error is None
    assert _fires("started") == started_before + 1
