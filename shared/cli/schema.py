"""`groundswell schema`: groundgate's ``schema`` and ``schema check`` commands.

``schema SCHEMA`` writes the JSON Schema for an extractor's structured output (the same bytes
groundgate writes); ``schema check SCHEMA`` prints each setting of the schema that makes a check
fail every time, or pass for the wrong key or field, and exits 1 when there is one.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from groundswell.shared.admit import PacketError
from groundswell.shared.admit.extractor import (
    check_reference_ids,
    extractor_schema,
    schema_findings,
)
from groundswell.shared.cli.admit import InputError, pack_option, read_json, references_option
from groundswell.shared.cli.app import main


@main.command("schema")
@click.argument("schema_or_check", metavar="[check] SCHEMA")
@click.argument("checked", required=False, metavar="")
@references_option
@pack_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the JSON Schema here.")
def schema_command(
    schema_or_check: str,
    checked: str | None,
    references: str | None,
    packs: tuple[str, ...],
    output: str | None,
) -> None:
    """The JSON Schema for an extractor's output under SCHEMA, or `schema check SCHEMA`.

    \b
    groundswell schema SCHEMA [--references F] [--pack FILE]... [-o OUT]
        the JSON Schema for a model's structured output: one candidate shape per
        field (its unit and keys as constants), evidence items that quote
    groundswell schema check SCHEMA [--pack FILE]...
        each setting that makes a check fail every time, or pass for the wrong key
        or field; exit 1 on a finding, 0 on none, 2 on an invalid schema

    groundgate's `schema` and `schema check`, with the same arguments and output.
    """
    pack_objs = [read_json(p) for p in packs]
    if checked is not None:
        if schema_or_check != "check":
            raise click.UsageError(f"got unexpected extra argument ({checked})")
        if references or output:
            raise click.UsageError("schema check takes SCHEMA and --pack only")
        try:
            findings = schema_findings(read_json(checked), pack_objs)
        except PacketError as exc:
            raise InputError(f"invalid schema: {exc}") from exc
        for finding in findings:
            click.echo(finding)
        raise SystemExit(1 if findings else 0)
    try:
        ids = check_reference_ids(read_json(references)) if references else None
        result = extractor_schema(read_json(schema_or_check), ids, pack_objs)
    except PacketError as exc:
        raise InputError(str(exc)) from exc
    text = json.dumps(result, ensure_ascii=False, indent=2) + "\n"
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
