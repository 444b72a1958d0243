"""`groundswell calibrate` against `gtrex calibrate` (gtrex 1.1.0, in process, a dev-only
oracle): the same arguments give the same exit status and the same report, field for field,
except what names the tool or the policy (schema, version, bound_to, binding, whose
fingerprints are groundswell's own) and prose (guarantees, notes, error texts, which are in
our own words). Invalid input names the file and line in both.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

import gtrex.cli
import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.repair import get_repair_policy
from groundswell.shared.repair.calibration import load_calibration

IDENTITY = ("schema", "gtrex_version", "groundswell_version", "bound_to")
PROSE = ("schema", "guarantee", "notes", "binding")


def rows(seed: int, n: int, *, faithful_share: float = 0.8, repeated: bool = False) -> str:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        faithful = rng.random() < faithful_share
        score = min(1.0, max(0.0, rng.gauss(0.88 if faithful else 0.6, 0.08)))
        group = f"doc{i % 10}" if repeated else f"doc{i}"
        lines.append(json.dumps({"score": score, "faithful": faithful, "group": group}))
    return "\n".join(lines) + "\n"


def run_gtrex(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = gtrex.cli.main(["calibrate", *args])
        except SystemExit as stop:
            # gtrex's expected errors exit with their message (status 1); argparse's with 2.
            if isinstance(stop.code, str):
                print(stop.code, file=err)
                status = 1
            else:
                status = stop.code or 0
    return status, out.getvalue(), err.getvalue()


def run_ours(args: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["calibrate", *args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def same_report(mine: dict[str, Any], other: dict[str, Any]) -> None:
    assert mine["schema"] == "groundswell/calibration-report/1"
    assert {k for k in mine if k not in IDENTITY} == {k for k in other if k not in IDENTITY}
    for key, value in mine.items():
        if key in IDENTITY:
            continue
        if key in ("risk", "coverage"):
            assert {k: v for k, v in value.items() if k not in PROSE} == {
                k: v for k, v in other[key].items() if k not in PROSE
            }
            assert len(value["notes"]) == len(other[key]["notes"])
        elif key == "errors":
            assert value.keys() == other[key].keys()
        else:
            assert value == other[key], key


def both(tmp_path: Path, text: str, *flags: str) -> tuple[tuple[int, str, str], ...]:
    """Run both tools on the same input; when both write a report, compare them."""
    source = tmp_path / "labelled.jsonl"
    source.write_text(text, encoding="utf-8")
    mine_out, other_out = tmp_path / "mine.json", tmp_path / "gtrex.json"
    for stale in (mine_out, other_out):
        stale.unlink(missing_ok=True)
    mine = run_ours([str(source), "-o", str(mine_out), *flags])
    other = run_gtrex([str(source), "-o", str(other_out), *flags])
    assert mine[0] == other[0], (mine, other)
    assert mine_out.exists() == other_out.exists()
    if mine_out.exists():
        same_report(json.loads(mine_out.read_text()), json.loads(other_out.read_text()))
    return mine, other


@pytest.mark.parametrize(
    ("text", "flags", "status"),
    [
        (rows(1, 300), ["--compare", "0.65"], 0),
        (rows(2, 300), ["--alpha", "0.1", "--delta", "0.1", "--coverage-alpha", "0.2"], 0),
        (rows(3, 120), ["--method", "risk"], 0),
        (rows(4, 30), ["--method", "coverage", "--compare", "0"], 0),
        (rows(5, 5), [], 1),  # neither can certify
        (rows(6, 40, faithful_share=0.0), [], 1),  # risk fails; no coverage requested
        (rows(7, 5, faithful_share=1.0), ["--method", "coverage"], 1),
        (rows(8, 300, repeated=True), [], 1),
        (rows(8, 300, repeated=True), ["--allow-repeated-groups"], 0),
        (rows(9, 300), ["--policy", "strict", "--repair-mode", "annotate"], 0),
        (rows(10, 200), ["--salvage", "longest_grounded", "--ellipsis", "fragments"], 0),
    ],
)
def test_same_report_and_status(tmp_path: Path, text: str, flags: list[str], status: int) -> None:
    mine, other = both(tmp_path, text, *flags)
    assert mine[0] == other[0] == status


def test_summary_goes_where_gtrex_puts_it(tmp_path: Path) -> None:
    source = tmp_path / "labelled.jsonl"
    source.write_text(rows(11, 300))
    status, out, err = run_ours([str(source), "-o", "-"])
    assert status == 0
    report = json.loads(out)  # stdout carries only the report
    assert report["status"] == {"risk": "ok", "coverage": "ok"}
    assert "Risk-controlled threshold" in err
    status, out, _ = run_ours([str(source)])
    assert status == 0 and "Risk-controlled threshold" in out and "Coverage threshold" in out
    # Standard input.
    status, out, _ = run_ours(["-", "-o", "-"], stdin=rows(11, 300))
    assert status == 0 and json.loads(out) == report


def test_report_is_bound_to_the_policy_and_loads(tmp_path: Path) -> None:
    source = tmp_path / "labelled.jsonl"
    source.write_text(rows(12, 300))
    out = tmp_path / "report.json"
    assert run_ours([str(source), "-o", str(out), "--policy", "strict"])[0] == 0
    report = json.loads(out.read_text())
    strict = get_repair_policy("strict")
    assert report["bound_to"] == strict.identities()
    assert report["risk"]["binding"] == strict.binding()
    calibration = load_calibration(out)
    calibration.check_binding(strict.identities())
    with pytest.raises(ValueError, match="pre-threshold configuration"):
        calibration.check_binding(get_repair_policy("default").identities())


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"score": 1.2, "faithful": true}', "'score'"),
        ('{"faithful": true}', "'score'"),
        ('{"score": true, "faithful": true}', "'score'"),
        ('{"score": "0.5", "faithful": true}', "'score'"),
        ('{"score": NaN, "faithful": true}', "'score'"),
        ('{"score": 0.5, "faithful": 1}', "'faithful'"),
        ('{"score": 0.5}', "'faithful'"),
        ('{"score": 0.5, "faithful": true, "group": 2.5}', "'group'"),
        ("[1, 2]", "object"),
        ("{oops", "invalid JSON"),
    ],
)
def test_invalid_rows(tmp_path: Path, line: str, problem: str) -> None:
    text = '{"score": 0.9, "faithful": true}\n\n' + line + "\n"
    mine, other = both(tmp_path, text)
    where = f"{tmp_path / 'labelled.jsonl'}:3: "
    assert mine[0] == 1
    assert where in mine[2] and problem in mine[2]
    assert where in other[2] and problem in other[2]


def test_no_examples_and_byte_order_mark(tmp_path: Path) -> None:
    mine, _ = both(tmp_path, "\n  \n")
    assert mine[0] == 1 and "no calibration examples" in mine[2]
    # A byte order mark on line 1 is not an error.
    mine, _ = both(tmp_path, "\ufeff" + rows(13, 200))
    assert mine[0] == 0


@pytest.mark.parametrize(
    "flags",
    [
        ["--alpha", "0"],
        ["--alpha", "1"],
        ["--delta", "nan"],
        ["--coverage-alpha", "x"],
        ["--compare", "1.5"],
        ["--method", "all"],
        ["--no-such-flag"],
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, flags: list[str]) -> None:
    mine, _ = both(tmp_path, rows(14, 100), *flags)
    assert mine[0] == 2


def test_missing_argument_and_file(tmp_path: Path) -> None:
    assert run_ours([])[0] == run_gtrex([])[0] == 2
    missing = str(tmp_path / "missing.jsonl")
    mine, other = run_ours([missing]), run_gtrex([missing])
    assert mine[0] == other[0] == 1
    assert f"{missing}: cannot read" in mine[2]


def test_repair_deploys_the_report_under_its_own_policy_only(tmp_path: Path) -> None:
    source = tmp_path / "labelled.jsonl"
    source.write_text(rows(15, 300))
    report = tmp_path / "report.json"
    assert run_ours([str(source), "-o", str(report)])[0] == 0
    threshold = json.loads(report.read_text())["risk"]["threshold"]
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps({"claim": "Revenue rose five percent", "source": "Revenue rose 5 percent."})
        + "\n"
    )
    repaired = tmp_path / "repaired.jsonl"
    done = CliRunner().invoke(
        main, ["repair", str(claims), "--calibration", str(report), "-o", str(repaired)]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(repaired.read_text())["groundswell"]["threshold"] == threshold
    done = CliRunner().invoke(
        main, ["repair", str(claims), "--calibration", str(report), "--policy", "strict"]
    )
    assert done.exit_code == 1 and f"{report}: " in done.stderr
    # gtrex's own report parses, and is refused for its gtrex fingerprints.
    other = tmp_path / "gtrex.json"
    assert run_gtrex([str(source), "-o", str(other)])[0] == 0
    done = CliRunner().invoke(main, ["repair", str(claims), "--calibration", str(other)])
    assert done.exit_code == 1 and "made by gtrex 1.1.0" in done.stderr
