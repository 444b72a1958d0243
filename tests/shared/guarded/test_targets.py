"""Issue 14's targets on a part of the labelled set of bench/escapes.py (the bench runs all of
it): under guarded, escapes are at most 1% of the wrong values, and against default (groundgate's
admission) more right values are admitted, fewer go to review and none more are rejected; on the
development documents and on the hold-out."""

from __future__ import annotations

import json
from pathlib import Path

from bench import escapes

DOCS = 100


def test_guarded_meets_the_targets_against_default(tmp_path: Path, capsys) -> None:
    out = tmp_path / "escapes.json"
    argv = ["--policy", "default", "--policy", "guarded", "--oracle", "0"]
    assert escapes.main([*argv, "--limit-docs", str(DOCS), "--json", str(out)]) == 0
    report = json.loads(out.read_text())["policies"]
    for split in ("dev", "holdout"):
        default = report["default"][split][-1]
        guarded = report["guarded"][split][-1]
        assert default["family"] == guarded["family"] == "total"
        assert guarded["wrong"] > 300 and guarded["right"] > 100, (split, guarded)
        assert guarded["escapes_pct"] <= 1.0, (split, guarded)
        assert default["escapes_pct"] > 3 * guarded["escapes_pct"] + 1, (split, default)
        assert guarded["right_admitted"] >= default["right_admitted"], split
        assert guarded["right_review"] < default["right_review"], split
        assert guarded["right_rejected"] <= default["right_rejected"], split
    printed = capsys.readouterr().out
    assert "**guarded, hold-out**" in printed and "Escapes under guarded" in printed
