"""The sample's labelled repairs are what their generator makes from the sample corpus today
(so a change to the aligner's scores shows up here), and they calibrate."""

from __future__ import annotations

import json
from pathlib import Path

from groundswell.shared.repair.calibration import LabelledRepair, calibrate_risk
from tests.shared.repair.sample_labels import SAMPLE, rows

SHIPPED = SAMPLE.parents[1] / "repairs-labelled.jsonl"


def test_sample_labels_are_current() -> None:
    shipped = [json.loads(line) for line in SHIPPED.read_text(encoding="utf-8").splitlines()]
    assert shipped == list(rows())
    assert {r["faithful"] for r in shipped} == {True, False}


def test_sample_labels_calibrate() -> None:
    data = [LabelledRepair(**json.loads(line)) for line in Path(SHIPPED).read_text().splitlines()]
    calibration = calibrate_risk(data, alpha=0.1, delta=0.05)
    assert calibration.guarantee_status == "conditional"
    assert 0.5 < calibration.threshold <= 1.0
