"""`groundswell calibrate`: the repair threshold from labelled repairs, with its guarantee.

Takes gtrex 1.1.0's ``calibrate`` arguments: JSON Lines ``{"score", "faithful", "group"?}``
('-': standard input), ``--method``, ``--alpha``, ``--delta``, ``--coverage-alpha``,
``--compare``, ``--allow-repeated-groups``, and the policy and repair flags naming the policy
whose scorer produced the scores (the calibration is bound to it). The report
(``groundswell/calibration-report/1``) goes to ``-o``; a summary goes to stdout, or to stderr
when the report is on stdout (``-o -``). Exit status: 0; 1 when the input is invalid (the
message names the file and line) or a requested calibration fails; 2 for a usage error.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from groundswell.shared.cli.app import main
from groundswell.shared.cli.repair import repair_policy_options
from groundswell.shared.cli.verify import InvalidInput, _stdout_bytes
from groundswell.shared.repair.calibration import (
    REPORT_METHODS,
    CalibrationInputError,
    calibration_report,
    read_labelled,
)
from groundswell.shared.repair.policy import RepairPolicy


class _Probability(click.ParamType):
    """A finite number in [0, 1], or strictly between 0 and 1 (a level); NaN is refused,
    which click's FloatRange lets through."""

    def __init__(self, *, open_interval: bool) -> None:
        self.open_interval = open_interval
        self.name = "level" if open_interval else "probability"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if self.open_interval:
            if not (math.isfinite(number) and 0.0 < number < 1.0):
                self.fail(f"{value} is not strictly between 0 and 1", param, ctx)
        elif not (math.isfinite(number) and 0.0 <= number <= 1.0):
            self.fail(f"{value} is not in [0, 1]", param, ctx)
        return number


LEVEL = _Probability(open_interval=True)
PROBABILITY = _Probability(open_interval=False)


def _write_report(output: str, report: dict[str, Any]) -> None:
    text = json.dumps(report, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False)
    if output == "-":
        _stdout_bytes((text + "\n").encode("utf-8"))
        return
    try:
        Path(output).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{output}: cannot write: {exc.strerror or exc}") from None


def _round_up(value: float, digits: int = 4) -> float:
    scale = 10**digits
    return math.ceil(value * scale) / scale


# The report's counts (the rest are rates, p-values and thresholds); JSON may carry them as floats.
_COUNTS = frozenset({"n", "accepted", "violations"})


def _figure(key: str, value: float) -> str:
    """A count as an integer ("321", not "321.0000"), anything else to four places."""
    if isinstance(value, int) or (key in _COUNTS and float(value).is_integer()):
        return str(int(value))
    return f"{value:.4f}"


def _summary(report: dict[str, Any], err: bool) -> None:
    """The human-readable account of a report (on stderr when stdout carries the JSON)."""

    def say(text: str = "") -> None:
        click.echo(text, err=err)

    risk = report.get("risk")
    if risk is not None:
        say("Risk-controlled threshold (Learn-then-Test)")
        say(f"  threshold  {risk['threshold']!r}")
        say(
            "             use it at full precision; rounded, round it up "
            f"({_round_up(risk['threshold'])!r}), never down"
        )
        say(f"  guarantee  {risk['guarantee']}")
        say(f"  status     {risk['guarantee_status']}")
        for note in risk["notes"]:
            say(f"  note       {note}")
        for key, value in sorted(risk["empirical"].items()):
            say(f"    {key:<32} {_figure(key, value)}")
    coverage = report.get("coverage")
    if coverage is not None:
        if risk is not None:
            say()
        say("Coverage threshold (split conformal)")
        say(f"  threshold  {coverage['threshold']!r}")
        say(f"  guarantee  {coverage['guarantee']}")
    compare = report.get("compare")
    if compare is not None:
        say()
        say(f"Hand-picked threshold {compare.get('threshold', '')!r}, measured on the same data:")
        for key, value in sorted(compare.items()):
            say(f"  {key:<32} {_figure(key, value)}")


@main.command("calibrate")
@click.argument("labelled", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "-o", "--output", default=None, help="Write the calibration report (JSON) here; '-': stdout."
)
@click.option(
    "--method",
    type=click.Choice(REPORT_METHODS),
    default="both",
    show_default=True,
    help="Which calibrations to run; 'both' runs coverage only when there are faithful "
    "examples. Exit status 1 when a requested one fails.",
)
@click.option(
    "--alpha",
    type=LEVEL,
    default=0.05,
    show_default=True,
    help="Risk level: the bound on P(score >= threshold and unfaithful).",
)
@click.option(
    "--delta",
    type=LEVEL,
    default=0.05,
    show_default=True,
    help="The probability, over the calibration draw, that the risk bound fails.",
)
@click.option(
    "--coverage-alpha",
    type=LEVEL,
    default=0.10,
    show_default=True,
    help="Coverage: the share of genuine repairs the threshold may refuse.",
)
@click.option(
    "--compare",
    type=PROBABILITY,
    default=None,
    help="Also measure a hand-picked threshold on the same data (no guarantee).",
)
@click.option(
    "--allow-repeated-groups",
    is_flag=True,
    help="Accept several examples per group; the risk calibration is then uncertified.",
)
@repair_policy_options
def calibrate(
    labelled: str,
    output: str | None,
    method: str,
    alpha: float,
    delta: float,
    coverage_alpha: float,
    compare: float | None,
    allow_repeated_groups: bool,
    policy: RepairPolicy,
) -> None:
    """Calibrate the repair threshold from LABELLED (JSON Lines of {score, faithful, group?};
    '-' for stdin).

    The report is bound to the policy chosen with --policy/--policy-file and the repair flags,
    whose scorer must be the one that produced the scores; `repair --calibration` refuses it
    under any other. Takes gtrex calibrate's arguments.
    """
    try:
        examples = read_labelled(labelled)
    except CalibrationInputError as exc:
        raise InvalidInput(str(exc)) from None
    if not examples:
        raise InvalidInput(f"{labelled}: no calibration examples read")
    report, ok = calibration_report(
        examples,
        method=method,
        alpha=alpha,
        delta=delta,
        coverage_alpha=coverage_alpha,
        compare=compare,
        allow_repeated_groups=allow_repeated_groups,
        binding=policy.binding(),
    )
    for name, error in report["errors"].items():
        click.echo(f"groundswell: {name} calibration failed: {error}", err=True)
    risk = report.get("risk")
    if risk is not None and risk["guarantee_status"] != "conditional":
        click.echo(
            "groundswell: WARNING: repeated groups were allowed, so the examples are not "
            "independent and the risk threshold carries no guarantee",
            err=True,
        )
    _summary(report, err=output == "-")
    if output:
        _write_report(output, report)
    if not ok:
        failed = [name for name in report["requested"] if report["status"].get(name) != "ok"]
        click.echo(
            f"groundswell calibrate: {' and '.join(failed)} calibration failed; exit status 1",
            err=True,
        )
        raise SystemExit(1)
