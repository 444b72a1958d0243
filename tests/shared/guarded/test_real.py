"""Issue 29's proof on real extractor output (bench/real/afr: four models' replies over twelve
agency statements, labelled by a person): on the development documents and on every hold-out,
guarded admits every right value that groundgate 0.11.0 admits, and lets through no more wrong
values than it does."""

from __future__ import annotations

from bench.escapes import real_evaluation


def test_guarded_loses_no_right_value_groundgate_admits_on_real_extractions() -> None:
    real = real_evaluation(["default", "guarded"])
    assert real["packets"] == 47
    assert list(real["splits"]) == ["dev", "holdout", "holdout_2", "holdout_3", "holdout_4"]
    for split, part in real["splits"].items():
        rows = {r["family"]: r for r in part["rows"]}
        (oracle,) = [name for name in rows if name.startswith("groundgate ")]
        gg, default, guarded = rows[oracle], rows["default"], rows["guarded"]
        assert default == {**gg, "family": "default"}, split  # default is groundgate's
        assert guarded["right"] >= 35, (split, guarded)
        assert guarded["right_admitted"] >= gg["right_admitted"], (split, guarded, gg)
        assert guarded["escapes"] <= gg["escapes"], (split, guarded, gg)
        assert guarded["right_rejected"] <= gg["right_rejected"], split
        assert not [line for line in part["lost"] if line.startswith("guarded:")], part["lost"]
