"""Policy, schedule, reprocessing and diff commands (on the configured storage and broker)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from groundswell.shared.cli.app import main
from groundswell.shared.cli.runs import (
    _check_corpus,
    _emit,
    _fail,
    _require_broker,
    _service,
    _settings,
    describe,
    ledger_option,
)
from groundswell.shared.words import counted


def _registry_service():
    """The service for commands that read policies and finished runs: with Redis when one
    is configured, else from storage alone (policies, run records, summaries, indexes)."""
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import StorageOnly
    from groundswell.shared.settings import NotConfigured

    settings = _settings()
    try:
        _ = settings.state_redis_url
    except NotConfigured:

        def no_broker(kind: str, args: list) -> None:
            _fail("this needs GROUNDSWELL_BROKER_URL: no broker is configured", 2)

        return RunService(settings, StorageOnly(), no_broker), None
    return _service(settings)


@main.group()
def policy() -> None:
    """Named policies with immutable numbered versions (the registry in object storage)."""


@policy.command("list")
@click.option("--json", "as_json", is_flag=True)
def policy_list(as_json: bool) -> None:
    """Every policy and its versions."""
    service, _ = _registry_service()
    rows = [
        {"name": name, "versions": versions, **latest.identity()}
        for name, versions, latest in service.policies.listing()
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        click.echo(
            f"{row['name']:<16} versions {','.join(map(str, row['versions'])):<10} latest {row['ref']:<14} "
            f"verify {row['verify_fingerprint']}  admit {row['admit_fingerprint']}"
        )


@policy.command("show")
@click.argument("ref")
def policy_show(ref: str) -> None:
    """One version as JSON (NAME, NAME@N or NAME@latest)."""
    from groundswell.shared.policies import PolicyError

    service, _ = _registry_service()
    try:
        click.echo(json.dumps(service.policies.resolve(ref).as_dict(), indent=2))
    except PolicyError as exc:
        _fail(str(exc), 2)


@policy.command("explain")
@click.argument("ref")
def policy_explain(ref: str) -> None:
    """A version's two parts with every assumption and both fingerprints."""
    from groundswell.shared.policies import PolicyError

    service, _ = _registry_service()
    try:
        version = service.policies.resolve(ref)
    except PolicyError as exc:
        _fail(str(exc), 2)
    from groundswell.shared.verify import explain

    click.echo(f"{version.ref}: {version.description}")
    click.echo("\nverification")
    click.echo(explain(version.verify_policy))
    _explain_repair(version)
    click.echo(f"\nadmission     fingerprint {version.admit_fingerprint}")
    settings = version.admit or {}
    if not settings:
        click.echo("  groundgate's default admission policy (SPEC §2.4)")
    for key, value in sorted(settings.items()):
        click.echo(f"  {key:<20} {json.dumps(value)}")
    _explain_guard(version)


def _explain_guard(version: Any) -> None:
    """The guard part of ``explain``: every guard setting in force, and each code the guards
    raise with what it means (flags send a value to review; reliefs take a groundgate flag off)."""
    from groundswell.shared.guarded import GUARD_FLAGS, GUARD_INFO, GUARD_REVISION

    guard = version.guard_settings
    if guard is None:
        click.echo("\nguard         off (groundgate's decisions, unguarded)")
        return
    click.echo(f"\nguard         revision {GUARD_REVISION}")
    click.echo("  over the packet's own admission policy, or the part above when it has none")
    for key, value in guard.as_dict().items():
        shown = ", ".join(value) if isinstance(value, list) else json.dumps(value).strip('"')
        click.echo(f"  {key:<20} {shown}")
    for title, codes in (
        ("flags (the value goes to review)", GUARD_FLAGS),
        ("reliefs (information: a groundgate flag the document settles is taken off)", GUARD_INFO),
    ):
        click.echo(f"  {title}")
        for code, meaning in codes.items():
            click.echo(f"    {code:<20} {meaning}")


def _read_json(file: str) -> Any:
    """A JSON document from FILE ('-': standard input); exit 2 naming the line when invalid."""
    text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{file}:{exc.lineno}: invalid JSON: {exc.msg}", 2)


def _explain_repair(version: Any) -> None:
    """The repair part of ``explain``: every setting in force, the threshold and its source."""
    repair = version.repair
    if repair is None:
        click.echo("\nrepair        off (claims are verified as given, never repaired)")
        return
    click.echo(f"\nrepair        fingerprint {repair.identity['fingerprint']}")
    for line in repair.policy.settings.lines():
        click.echo(line)
    source = {
        "calibration": f"calibration {repair.calibration} (its guarantee holds for this policy)",
        "policy": "policy (repair_threshold; not calibrated)",
        "default": "default (never calibrated: store a calibration and name it, or set "
        "repair_threshold)",
    }[repair.threshold_source]
    click.echo(f"  threshold source     {source}")


@policy.command("calibration")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
def policy_calibration(file: str) -> None:
    """Store a repair-threshold calibration (`groundswell calibrate`'s report or its risk part)
    in the registry; print its sha256, which a policy's verify.repair.calibration names."""
    from groundswell.shared.policies import PolicyError

    document = _read_json(file)
    service, _ = _registry_service()
    try:
        click.echo(service.policies.put_calibration(document))
    except PolicyError as exc:
        _fail(f"{file}: {exc}", 2)


@policy.command("publish")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--version", type=int, default=None, help="Pin the version number (default: next).")
def policy_publish(file: str, version: int | None) -> None:
    """Publish a version from a JSON FILE ({"name", "extends"?, "verify"?, "admit"?, "description"?}).

    Schedules that follow NAME@latest start a run under the new version.
    """
    from groundswell.shared.policies import PolicyConflict, PolicyError

    document = _read_json(file)
    service, _ = _registry_service()
    try:
        published, created = service.publish_policy(document, version)
    except PolicyConflict as exc:
        _fail(str(exc), 3)
    except PolicyError as exc:
        _fail(f"{file}: {exc}", 2)
    state = "published" if created else "unchanged (already published)"
    click.echo(
        f"{published.ref} {state}: verify {published.verify_fingerprint}, admit {published.admit_fingerprint}"
    )


@main.group()
def schedule() -> None:
    """Re-run a corpus under a policy on an interval or cron expression (beat fires them)."""


@schedule.command("add")
@click.argument("corpus")
@click.option(
    "--policy", "-p", default="default@latest", show_default=True, help="NAME@N or NAME@latest."
)
@click.option("--every", default=None, help="Interval: 3600, 30s, 15m, 1h, 1d.")
@click.option("--cron", default=None, help='5-field cron expression (UTC), e.g. "0 2 * * *".')
@click.option(
    "--only", type=click.Choice(["missing", "failed", "all"]), default="missing", show_default=True
)
@ledger_option
def schedule_add(
    corpus: str, policy: str, every: str | None, cron: str | None, only: str, ledger: bool
) -> None:
    """Add a schedule; print its id. With --ledger every run it starts loads its ledger."""
    from pydantic import ValidationError

    from groundswell.shared.policies import PolicyError
    from groundswell.shared.runs.schedules import ScheduleSpec, TooManySchedules, parse_every
    from groundswell.workers.schedules import ScheduleRefused, add_schedule

    try:
        spec = ScheduleSpec(
            corpus=_check_corpus(corpus),
            policy=policy,
            cron=cron,
            every_seconds=parse_every(every) if every else None,
            only=only,
            ledger=ledger,
        )
    except (ValidationError, ValueError) as exc:
        _fail(describe(exc), 2)
    _require_broker(_settings(), "schedule add")
    service, app = _registry_service()
    try:
        service.policies.resolve(spec.policy)
    except PolicyError as exc:
        _fail(str(exc), 2)
    try:
        click.echo(add_schedule(service, app, spec).id)
    except (ScheduleRefused, TooManySchedules) as exc:
        _fail(str(exc), 2)


@schedule.command("list")
@click.option("--json", "as_json", is_flag=True)
def schedule_list(as_json: bool) -> None:
    """The schedules (they live in Redis, with beat's entries)."""
    _require_broker(_settings(), "schedule list")
    service, _ = _registry_service()
    listing = service.schedules.list()
    for bad in listing.unreadable:
        click.echo(
            f"groundswell: schedule {bad.id} is unreadable ({bad.error}): skipped; "
            f"groundswell schedule remove {bad.id} removes it",
            err=True,
        )
    if as_json:
        click.echo(listing.model_dump_json(indent=2))
        return
    if not listing.items:
        click.echo("no schedules (groundswell schedule add CORPUS --every SECONDS adds one)")
    for s in listing.items:
        when = f"every {s.every_seconds:g}s" if s.every_seconds else f"cron {s.cron}"
        click.echo(
            f"{s.id}  {s.corpus}  {s.policy}  {when}  only {s.only}{'  ledger' if s.ledger else ''}"
            f"  runs {s.runs}  last {s.last_run_id or '-'}"
            + (f"  by {s.created_by}" if s.created_by else "")
            + (f"  error: {s.last_error}" if s.last_error else "")
        )


@schedule.command("remove")
@click.argument("schedule_id")
def schedule_remove(schedule_id: str) -> None:
    from groundswell.workers.schedules import remove_schedule

    _require_broker(_settings(), "schedule remove")
    service, app = _registry_service()
    if not remove_schedule(service, app, schedule_id):
        _fail(f"no schedule {schedule_id}", 2)
    click.echo(f"removed {schedule_id}")


@main.command()
@click.argument("corpus")
@click.option("--policy", "-p", required=True, help="NAME, NAME@N or NAME@latest.")
@click.option(
    "--only", type=click.Choice(["missing", "failed", "all"]), default="missing", show_default=True
)
@click.option(
    "--dry-run", is_flag=True, help="Report what would be computed and why; compute nothing."
)
@click.option("--embedded", is_flag=True, help="Start a private Redis and workers for this run.")
@click.option("--workers", default=2, show_default=True, help="Embedded worker processes.")
@click.option("--json", "as_json", is_flag=True)
@ledger_option
def reprocess(
    corpus: str,
    policy: str,
    only: str,
    dry_run: bool,
    embedded: bool,
    workers: int,
    as_json: bool,
    ledger: bool,
) -> None:
    """Re-run CORPUS under a policy version: missing work, failed units, or everything.

    Like `run`: the configured broker's workers, or a private stack when no broker is
    configured (or --embedded). With --ledger the run loads its ledger: under a new policy
    version, its facts beside the earlier versions' (`groundswell ledger history`)."""
    from groundswell.shared.cli.runs import _exit_for, check_policy, run_embedded
    from groundswell.shared.runs.models import RunSpec

    settings = _settings()
    check_policy(settings, policy)
    spec = RunSpec(
        corpus=_check_corpus(corpus), policy=policy, only=only, dry_run=dry_run, ledger=ledger
    )
    if embedded or not settings.broker_url:
        summary = run_embedded(spec, workers, 1, sys.stderr.isatty())
    else:
        from groundswell.shared.cli.runs import _submit_and_wait, _workers_answer

        _, app = _service(settings)
        if not _workers_answer(app):
            _fail(
                f"no workers answer on {settings.broker_url}: start `groundswell worker` there, "
                "or use --embedded",
                2,
            )
        summary = _submit_and_wait(settings, spec, sys.stderr.isatty())
    if as_json or not dry_run:
        _emit(summary, as_json, summary.get("output"))
        _exit_for(summary)
        return
    _print_plan(summary)


def _print_plan(summary: dict[str, Any]) -> None:
    units = summary.get("units", {})
    reasons = summary.get("reasons", {})
    for kind in ("verify", "admit"):
        row = units.get(kind, {})
        click.echo(
            f"{kind:<7} would compute {row.get('would_compute', 0):>6}  would reuse {row.get('would_reuse', 0):>6}"
            f"  failed {row.get('failed', 0)}"
        )
        for reason, n in sorted(reasons.get(kind, {}).items()):
            click.echo(f"          {n:>6}  {reason}")


def _shown(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return "–" if value is None else str(value)


@main.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--limit", default=50, show_default=True, help="Moved items to list.")
@click.option(
    "--extractions",
    is_flag=True,
    help="RUN_A and RUN_B are corpora (two producers' extractions of the same documents): "
    "which fields and values they disagree on.",
)
@click.option("--json", "as_json", is_flag=True)
def diff(run_a: str, run_b: str, limit: int, extractions: bool, as_json: bool) -> None:
    """What changed from RUN_A to RUN_B: rates side by side and what moved.

    With --extractions, RUN_A and RUN_B are two corpora (folders or s3://...), such as two
    models' extractions imported with `groundswell import`: each field and key's values are
    compared document by document."""
    if extractions:
        _diff_extractions(run_a, run_b, limit, as_json)
        return
    from groundswell.shared.results.models import RunsNotComparable
    from groundswell.shared.results.service import RunResults
    from groundswell.shared.runs.models import RunNotFinished, RunNotFound

    service, _ = _registry_service()
    try:
        result = RunResults(service).diff(run_a, run_b, 0, limit)
    except RunNotFound as exc:
        _fail(f"no run {exc}", 2)
    except (RunNotFinished, RunsNotComparable) as exc:
        _fail(str(exc), 2)
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return
    pa, pb = result["policy_a"] or {}, result["policy_b"] or {}
    click.echo(f"{run_a} ({_shown(pa, 'ref')})  →  {run_b} ({_shown(pb, 'ref')})")
    click.echo(f"{'rate':<34} {'A':>8} {'B':>8} {'change':>9}")
    for row in result["rates"]:
        click.echo(_rate_line(row["rate"], row, 34))
    if result.get("producers"):
        click.echo(f"\n{'by producer':<34} {'A':>8} {'B':>8} {'change':>9}")
        last = None
        for row in result["producers"]:
            if row["producer"] != last:
                click.echo(row["producer"])
                last = row["producer"]
            click.echo("  " + _rate_line(row["rate"], row, 32))
    if result.get("labelled"):
        click.echo(f"\n{'labelled candidates':<34} {'A':>8} {'B':>8} {'change':>9}")
        for row in result["labelled"]:
            click.echo(f"{row['count']:<34} {row['a']:>8} {row['b']:>8} {row['change']:>+9}")
    click.echo(
        f"\n{counted(result['moved_total'], 'item')} moved in "
        f"{counted(result['documents_moved'], 'document')}"
    )
    for item in result["moved"]:
        a, b = item["a"] or {}, item["b"] or {}
        # an item absent from one run (or a claim without a tier) shows "–", not Python's None
        what = (
            f"{_shown(a, 'verdict')}/{_shown(a, 'tier')} → {_shown(b, 'verdict')}/{_shown(b, 'tier')}"
            if item["kind"] == "claim"
            else f"{_shown(a, 'outcome')} → {_shown(b, 'outcome')}"
        )
        if item["kind"] == "claim" and (a.get("repair") or b.get("repair")):
            what += f"; repair {a.get('repair') or '–'} → {b.get('repair') or '–'}"
        click.echo(f"  {item['doc_id']}  {item['kind']} {item['id']}: {what}")
    hidden = result["moved_total"] - len(result["moved"])
    if hidden > 0:
        click.echo(f"  ... and {hidden} more (--limit N to list more, --json for everything shown)")


def _rate_line(name: str, row: dict[str, Any], width: int) -> str:
    """A rate of run A and run B and the change in points, as a diff table's line."""
    pp = row["change_pp"]
    fmt = lambda v: "–" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    change = "" if pp is None else f"{pp:+.1f} pp"
    return f"{name:<{width}} {fmt(row['a']):>8} {fmt(row['b']):>8} {change:>9}"


def _diff_extractions(corpus_a: str, corpus_b: str, limit: int, as_json: bool) -> None:
    from groundswell.shared.formats.compare import compare
    from groundswell.shared.storage import open_store

    result = compare(open_store(corpus_a), open_store(corpus_b), limit)
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
        return

    for side, corpus in (("a", corpus_a), ("b", corpus_b)):
        # Each producer by the key a run's summary counts it under (groundswell diff RUN_A RUN_B).
        who = ", ".join(result[f"producer_keys_{side}"]) or "producer not recorded"
        click.echo(f"{side.upper()}: {corpus} ({who})")
    click.echo(
        f"{counted(result['documents'], 'document')} in both "
        f"({result['documents_only_a']} only in A, {result['documents_only_b']} only in B)"
    )
    click.echo(f"{'field':<30} {'agree':>7} {'differ':>7} {'only A':>7} {'only B':>7}")
    for name, row in result["fields"].items():
        click.echo(
            f"{name:<30} {row['agree']:>7} {row['differ']:>7} {row['only_a']:>7} {row['only_b']:>7}"
        )
    for d in result["differences"]:
        key = f" [{d['key']}]" if d["key"] else ""
        shown = lambda v: ", ".join(v) or "–"  # noqa: E731
        click.echo(f"  {d['doc_id']}  {d['field']}{key}: {shown(d['a'])} | {shown(d['b'])}")
    hidden = result["differences_total"] - len(result["differences"])
    if hidden > 0:
        click.echo(f"  ... and {hidden} more (--limit N to list more, --json for everything shown)")
