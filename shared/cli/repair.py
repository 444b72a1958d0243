"""`groundswell repair`: the near-miss cascade over JSON Lines claims, with gtrex's arguments.

Input is the contract of `verify` (a string ``claim`` and exactly one of ``source`` /
``source_path``). Each output record carries in ``claim`` the text it keeps (in substitute
mode the source's own characters; a rejected record keeps the model's), and the result under
``groundswell`` (gtrex's fields: claim_original, action, stage, accepted, grounded, changed,
before, after, alignment, salvage, threshold, threshold_source).

The threshold comes from ``--calibration`` (checked to be made for this policy's scorer and
pre-threshold configuration), else ``--threshold``, else the policy, else the uncalibrated
default 0.65 with a note; the manifest records which.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import click

from groundswell.shared.cli.app import main
from groundswell.shared.cli.verify import (
    RESULT_KEY,
    InvalidInput,
    Sources,
    _write_json,
    _write_output,
    per_source,
    policy_options,
    read_records,
)
from groundswell.shared.repair.calibration import (
    Calibration,
    CalibrationInputError,
    load_calibration,
)
from groundswell.shared.repair.engine import Repairer
from groundswell.shared.repair.gtrex_policy import GtrexPolicy
from groundswell.shared.repair.policy import (
    DEFAULT_REPAIR_THRESHOLD,
    REPAIR_MODES,
    SALVAGE_POLICIES,
    RepairPolicy,
)
from groundswell.shared.repair.report import RepairSummary
from groundswell.shared.text.transforms import TransformError
from groundswell.shared.verify.policy import PolicyError
from groundswell.shared.verify.report import LadderProfile, manifest


def repair_policy_from_options(
    policy: GtrexPolicy, repair_mode: str | None, salvage: str | None
) -> RepairPolicy:
    """The repair policy the flags describe: the loaded policy, then each override."""
    changes: dict[str, Any] = {}
    if repair_mode is not None:
        changes["repair_mode"] = repair_mode
    if salvage is not None:
        changes["salvage_policy"] = salvage
    try:
        return policy.repair_policy.with_changes(**changes)
    except PolicyError as exc:
        raise InvalidInput(f"invalid policy: {exc}") from None


def repair_policy_options(f: Any) -> Any:
    """gtrex's policy and repair flags; the command gets ``policy`` (a :class:`RepairPolicy`)."""

    @functools.wraps(f)
    def command(*args: Any, policy: GtrexPolicy, repair_mode: str | None, salvage: str | None,
                **kwargs: Any) -> Any:  # fmt: skip
        return f(*args, policy=repair_policy_from_options(policy, repair_mode, salvage), **kwargs)

    command = click.option(
        "--salvage",
        type=click.Choice(SALVAGE_POLICIES),
        help="Keep the longest fragment of a spliced quotation that verifies on its own.",
    )(command)
    command = click.option(
        "--repair-mode",
        type=click.Choice(REPAIR_MODES),
        help="off verifies only; substitute stores the source's text; annotate keeps the "
        "model's text and attaches the located span.",
    )(command)
    return policy_options(command)


def _calibrated(path: str, policy: RepairPolicy) -> tuple[RepairPolicy, Calibration]:
    try:
        calibration = load_calibration(path)
        calibration.check_binding(policy.identities())
    except (CalibrationInputError, ValueError) as exc:
        message = str(exc)
        raise InvalidInput(message if message.startswith(path) else f"{path}: {message}") from None
    replaced = policy.repair_threshold
    if replaced is not None and replaced != calibration.threshold:
        click.echo(
            f"note: the policy's repair_threshold {replaced!r} is replaced by the calibrated "
            f"{calibration.threshold!r}",
            err=True,
        )
    if calibration.guarantee_status != "conditional":
        click.echo(
            f"WARNING: calibration {path} is {calibration.guarantee_status}; its threshold "
            "carries no guarantee.",
            err=True,
        )
    return policy.with_threshold(calibration.threshold), calibration


@main.command()
@click.argument("claims", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", "output", default=None, help="Output JSON Lines (default: stdout).")
@click.option("--root", type=click.Path(file_okay=False), help="Resolve relative source_path here.")
@click.option("--manifest", "manifest_path", default=None, help="Write a run manifest (JSON) here.")
@click.option(
    "--replace-existing", is_flag=True, help=f"Overwrite a {RESULT_KEY!r} field already present."
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    help="Substitute when score >= THRESHOLD (default: the policy's, else the uncalibrated "
    f"{DEFAULT_REPAIR_THRESHOLD}).",
)
@click.option(
    "--calibration",
    "calibration_path",
    type=click.Path(dir_okay=False),
    help="A `calibrate` report (or its risk calibration): its threshold is used, after checking "
    "that it was made for this policy's scorer and configuration.",
)
@click.option("--drop-rejected", is_flag=True, help="Leave rejected claims out of the output.")
@repair_policy_options
def repair(
    claims: str,
    output: str | None,
    root: str | None,
    manifest_path: str | None,
    replace_existing: bool,
    threshold: float | None,
    calibration_path: str | None,
    drop_rejected: bool,
    policy: RepairPolicy,
) -> None:
    """Repair the near-miss quotations of CLAIMS (JSON Lines; '-' for stdin).

    A quotation that verifies is kept (in substitute mode, as the source's own characters); a
    near miss is replaced by the source span it aligns to (substitute) or annotated with it
    (annotate) when its score reaches the threshold and the numeric, polarity, span and
    boundary guards pass; anything else is rejected, with the stage that refused it. Takes
    gtrex repair's arguments, policy files and calibrations.
    """
    if calibration_path and threshold is not None:
        raise InvalidInput("pass --threshold or --calibration, not both")
    risk = policy.risk()
    if risk:
        click.echo(f"WARNING: {risk}", err=True)
    source = "threshold_flag" if threshold is not None else "policy"
    if threshold is not None:
        policy = policy.with_threshold(threshold)
    calibration: Calibration | None = None
    if calibration_path:
        source = "calibration"
        policy, calibration = _calibrated(calibration_path, policy)
    in_force = policy.repair_threshold
    if policy.repair_mode == "off":
        source = None
    elif in_force is None:
        in_force, source = DEFAULT_REPAIR_THRESHOLD, "default"
        click.echo(
            f"note: no threshold given; repairing at the default {DEFAULT_REPAIR_THRESHOLD}, "
            "which was never calibrated. Pass --calibration with a `groundswell calibrate` "
            "report, or --threshold.",
            err=True,
        )
    sources = Sources(root)
    records = read_records(claims, sources, replace_existing=replace_existing)
    repairers: dict[str, Repairer] = {}
    # The profile describes the claims as the model gave them: a substituted claim is the
    # document's own text and would always count as exact.
    profile = LadderProfile(policy.verify)
    summary = RepairSummary(policy.fingerprint)
    lines: list[str] = []
    made = per_source(
        records, sources, repairers, "repairing", lambda t: Repairer(t, policy, warn=False)
    )
    for record, repairer in made:
        data = record.data
        try:
            result = repairer.repair(data["claim"])
        except TransformError as exc:
            raise InvalidInput(f"{record.source_key}: {exc}") from None
        profile.add(result.before)
        summary.add(result)
        if drop_rejected and not result.accepted:
            continue
        out = {k: v for k, v in data.items() if k not in ("source", RESULT_KEY)}
        out["claim"] = result.text if result.accepted else data["claim"]
        out[RESULT_KEY] = result.as_dict()
        lines.append(json.dumps(out, ensure_ascii=False) + "\n")
    _write_output(output, lines)
    if manifest_path:
        inputs = {
            "input": claims,
            "documents": len(repairers),
            "documents_sha256": sorted({r.verifier.source_sha256 for r in repairers.values()}),
            "claims": len(records),
            "calibration": calibration_path,
            "repair_threshold": in_force,
            "repair_threshold_source": source,
        }
        doc = manifest(policy.verify, profile, inputs)
        doc["repair_policy"] = policy.as_dict()
        doc["policy_identities"] = policy.identities()
        doc["repairs"] = summary.as_dict()
        doc["calibration"] = calibration.as_dict() if calibration else None
        _write_json(manifest_path, doc)
    rates = profile.rates()
    click.echo(
        f"{100 * rates['policy_accepted_rate']:.2f}% of {profile.total} claims grounded as given "
        f"under policy {policy.verify.ref} (repair {policy.fingerprint}; threshold "
        f"{in_force} from {source})",
        err=True,
    )
    click.echo("\n".join(summary.lines()), err=True)
