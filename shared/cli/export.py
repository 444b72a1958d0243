"""`groundswell export RUN` (Parquet of a run's certificates and decisions) and
`groundswell query "SQL"` (DuckDB over them); docs/export.md."""

from __future__ import annotations

import json
import sys

import click

from groundswell.shared.cli.app import main
from groundswell.shared.cli.runs import _fail


@main.command()
@click.argument("run_id")
@click.option(
    "--to",
    "root",
    default=None,
    help="Export root: a folder or s3://bucket/prefix (default: GROUNDSWELL_EXPORT_URL, else "
    "exports/parquet in the run's output store).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the export's manifest as JSON.")
def export(run_id: str, root: str | None, as_json: bool) -> None:
    """Write a finished run's certificates (a row per claim) and decisions (a row per
    candidate) as Parquet, partitioned by policy version and run."""
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.export.service import export_run
    from groundswell.shared.results.models import RunNotReady

    service, _ = _registry_service()
    try:
        manifest = export_run(service, run_id, root)
    except RunNotReady as exc:
        _fail(str(exc), 2)
    if as_json:
        click.echo(manifest.model_dump_json(indent=2))
        return
    rows = ", ".join(f"{n} {t}" for t, n in manifest.rows.items())
    click.echo(f"run {run_id}: {rows} in {len(manifest.files)} files under {manifest.root}")


@main.command()
@click.argument("sql")
@click.option(
    "--from",
    "root",
    default=None,
    help="Export root to query: a folder or s3://bucket/prefix (default: GROUNDSWELL_EXPORT_URL, "
    "else exports/parquet in the output store).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object a row.")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header row.")
def query(sql: str, root: str | None, as_json: bool, as_csv: bool) -> None:
    """Run SQL (DuckDB) over exported runs: the views `certificates` and `decisions`, with
    the partitions as columns `policy` and `run`."""
    from groundswell.shared.cli.runs import _settings
    from groundswell.shared.export.query import QueryError, run_query
    from groundswell.shared.export.service import EXPORT_PREFIX
    from groundswell.shared.storage import join_url

    settings = _settings()
    root = root or settings.export_url or join_url(settings.storage_url, EXPORT_PREFIX)
    try:
        columns, rows = run_query(root, sql, settings)
    except QueryError as exc:
        _fail(str(exc), 2)
    if as_json:
        for row in rows:
            click.echo(json.dumps(dict(zip(columns, row, strict=True)), default=str))
    elif as_csv:
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(*columns)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        Console(soft_wrap=True).print(table)
        click.echo(f"{len(rows)} row{'' if len(rows) == 1 else 's'}", err=True)
