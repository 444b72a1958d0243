"""`groundswell gate RUN [FILE]`: a finished run's summary against a gate's thresholds.

Exit codes, as data-quality gates in CI use them: 0 pass, 1 warn, 2 fail, 3 the gate could
not be checked (a bad gate file, a run that is unknown or unfinished, no gate configured).
"""

from __future__ import annotations

import sys

import click

from groundswell.shared.cli.app import main

EXIT_ERROR = 3


def _error(message: str) -> None:
    click.echo(f"groundswell: {message}", err=True)
    sys.exit(EXIT_ERROR)


def load_gate_or_exit(path: str, code: int = EXIT_ERROR):
    """The gate in ``path``; a bad file is one line naming file:line: field, exit ``code``."""
    from groundswell.shared.gates.models import GateError, load_gate

    try:
        return load_gate(path)
    except GateError as exc:
        click.echo(f"groundswell: {exc}", err=True)
        sys.exit(code)


def report_gate(result, as_json: bool) -> None:
    """Print the checks (stdout with --json, else a line a check) and exit with the verdict."""
    from groundswell.shared.gates.service import render

    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        click.echo(render(result))
    sys.exit(result.exit_code)


@main.command()
@click.argument("run_id")
@click.argument("gate_file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def gate(run_id: str, gate_file: str | None, as_json: bool) -> None:
    """Check a finished run against a gate (FILE, else GROUNDSWELL_GATE_FILE; docs/gates.md).

    Prints each check with its value and bound. With an API configured and no FILE, the
    API's gate (GET /v1/runs/RUN/gate); else the run in the local store.

    \b
    Exit codes: 0 pass, 1 warn, 2 fail, 3 the gate could not be checked.
    """
    from groundswell.shared.cli.runs import _api_call, _settings, api_configured

    settings = _settings()
    if gate_file is None and api_configured(settings):
        from groundswell.shared.gates.models import GateResult

        data = _api_call(lambda c: c.gate(run_id))
        report_gate(GateResult.model_validate(data), as_json)
    path = gate_file or settings.gate_file
    if path is None:
        _error("no gate: name a gate file, or set GROUNDSWELL_GATE_FILE")
    spec = load_gate_or_exit(str(path))
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.gates.service import gate_of_run
    from groundswell.shared.results.models import RunNotReady

    service, _ = _registry_service()
    try:
        result = gate_of_run(service, run_id, spec)
    except RunNotReady as exc:
        _error(str(exc))
    report_gate(result, as_json)


def gate_after_run(summary: dict, spec, settings) -> int:
    """``run --wait --gate FILE``: the gate's verdict on the run just waited for, printed to
    stderr; a run that did not finish with a summary to gate counts as a fail."""
    from groundswell.shared.gates.service import gate_of_run, render
    from groundswell.shared.results.models import RunNotReady
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import StorageOnly

    # The run is over and its summary written: storage is enough (a private stack's Redis
    # is already stopped).
    service = RunService(settings, StorageOnly(), lambda kind, args: None)
    try:
        result = gate_of_run(service, str(summary.get("run_id")), spec)
    except RunNotReady as exc:
        click.echo(f"groundswell: gate fail: {exc}", err=True)
        return 2
    click.echo(render(result), err=True)
    return result.exit_code
