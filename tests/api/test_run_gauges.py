"""The gauges the API reads from Redis at scrape time: a stuck run, and the latest finished run
of each corpus under each policy version."""

from __future__ import annotations

import shutil
import time

import pytest

from groundswell.api.routes.metrics import QueueCollector
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.metrics import corpus_label
from groundswell.shared.runs.models import RunSpec
from tests.conftest import Pipeline

pytestmark = pytest.mark.integration


def gauges(pipeline: Pipeline) -> dict[str, list]:
    collector = QueueCollector(lambda: pipeline.service, lambda: pipeline.app)
    return {family.name: family.samples for family in collector.collect()}


def test_a_run_without_progress_stays_idle_however_often_reconcile_nudges_it(
    service_settings, tmp_path
):
    pipeline = Pipeline(service_settings, tmp_path)  # no worker: the run never progresses
    record, _ = pipeline.service.submit(RunSpec(corpus=str(SAMPLE_CORPUS)))
    (idle,) = gauges(pipeline)["groundswell_run_idle_seconds"]
    assert idle.value < 5
    # Twenty minutes go by (the run's clock is moved back rather than the test waiting).
    key = f"gs:run:{record.id}"
    pipeline.service.runs.r.hset(key, "updated_at", time.time() - 1200)
    for _ in range(3):  # reconcile sees a stalled run and sends its plan step again
        assert pipeline.service.reconcile()["plans"] <= 1
    (idle,) = gauges(pipeline)["groundswell_run_idle_seconds"]
    assert idle.value >= 1200  # sending the step again is not progress
    assert pipeline.service.reconcile()["plans"] == 0  # nudged: not again this interval


def test_policy_gauges_carry_the_corpus(pipeline, tmp_path):
    other = tmp_path / "other-corpus"
    shutil.copytree(SAMPLE_CORPUS, other)
    (other / "claims" / "velmora-label.jsonl").unlink()  # another grounding rate
    pipeline.start_worker("w1")
    for corpus in (str(SAMPLE_CORPUS), str(other)):
        record, _ = pipeline.service.submit(RunSpec(corpus=corpus, policy="default"))
        pipeline.wait(record.id)
    samples = gauges(pipeline)["groundswell_policy_grounding_rate"]
    rates = {s.labels["corpus"]: s.value for s in samples if s.labels["policy"] == "default"}
    assert set(rates) == {corpus_label(str(SAMPLE_CORPUS)), corpus_label(str(other))}
    assert len(set(rates.values())) == 2
