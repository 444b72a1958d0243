"""Issue 14's targets on a part of the labelled set of bench/escapes.py (the bench runs all of
it), as issue 29 left them: against default (groundgate's admission) far fewer escapes, more
right values admitted, fewer to review and none more rejected; on the development documents and
on the hold-out. Since guard revision 3 the guards flag only what the document contradicts (a
cell quoted alone is never ambiguous), so the escapes left on these 100 documents (1.1% and
2.2%) are mostly values of fields whose schema names no column, in rows of several values;
issue 14's 1% is not held there (see the README)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import escapes
from groundswell.shared.guarded import GUARD_FLAGS

DOCS = 100


def test_guarded_meets_the_targets_against_default(tmp_path: Path, capsys) -> None:
    out = tmp_path / "escapes.json"
    argv = ["--policy", "default", "--policy", "guarded", "--oracle", "0", "--no-real"]
    assert escapes.main([*argv, "--limit-docs", str(DOCS), "--json", str(out)]) == 0
    report = json.loads(out.read_text())["policies"]
    for split in ("dev", "holdout"):
        default = report["default"][split][-1]
        guarded = report["guarded"][split][-1]
        assert default["family"] == guarded["family"] == "total"
        assert guarded["wrong"] > 300 and guarded["right"] > 100, (split, guarded)
        assert guarded["escapes_pct"] <= 2.5, (split, guarded)
        assert default["escapes_pct"] > 3 * guarded["escapes_pct"] + 1, (split, default)
        assert guarded["right_admitted"] >= default["right_admitted"], split
        assert guarded["right_review"] < default["right_review"], split
        assert guarded["right_rejected"] <= default["right_rejected"], split
    # a right value default admits goes to review only with a guard's finding on it
    lost = json.loads(out.read_text())["lost"]
    for codes in (c for part, by in lost.items() if part.startswith("guarded/") for c in by):
        assert set(codes.split("+")) & set(GUARD_FLAGS), codes
    printed = capsys.readouterr().out
    assert "**guarded, hold-out**" in printed and "Escapes under guarded" in printed
