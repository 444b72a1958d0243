"""`groundswell import FORMAT SRC --to CORPUS`: a producer's files written as the native layout.

SRC is a file or a folder of them (``.jsonl`` a record a line, ``.json`` one record or an
array); CORPUS a folder or ``s3://bucket/prefix``. A malformed record is reported with its
file, line and field and the others are imported; the exit code is 1 when one was.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from groundswell.shared.cli.app import main
from groundswell.shared.formats import FORMATS

_SUFFIXES = (".jsonl", ".ndjson", ".json")


def _sources(src: Path) -> list[Path]:
    if src.is_file():
        return [src]
    return sorted(p for p in src.rglob("*") if p.is_file() and p.suffix.lower() in _SUFFIXES)


@main.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(sorted(FORMATS)))
@click.argument("src", type=click.Path(exists=True, path_type=Path))
@click.option("--to", "corpus", required=True, help="The corpus to write: a folder or s3://...")
@click.option(
    "--schema",
    "schema_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The admission schema, written as the corpus's schema.json.",
)
@click.option(
    "--mapping",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="For `mapped`: the YAML mapping of the records' JSON paths.",
)
@click.option("--model", help="The model that produced the records (kept as their producer).")
@click.option("--producer-version", help="The producer's version (LangExtract 1.7.1, ...).")
@click.option("--prompt-version", help="The prompt's version.")
@click.option("--schema-version", help="The extraction schema's version.")
@click.option("--no-check", is_flag=True, help="Do not verify claims to count disagreements.")
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
def import_command(
    fmt: str,
    src: Path,
    corpus: str,
    schema_path: Path | None,
    mapping: Path | None,
    model: str | None,
    producer_version: str | None,
    prompt_version: str | None,
    schema_version: str | None,
    no_check: bool,
    as_json: bool,
) -> None:
    """Write a producer's files (LangExtract, citations, document AI, mapped JSON) as a corpus.

    \b
    FORMAT: langextract | anthropic | bedrock | azure-di | documentai | mapped
    Each record becomes documents/<id>.txt, claims/<id>.jsonl and (for typed facts)
    candidates/<id>.json; --schema is written as schema.json. The report counts where the
    producer's own alignment and the verifier disagree.
    """
    from groundswell.shared.corpus import InputFileError
    from groundswell.shared.formats.importer import import_files
    from groundswell.shared.formats.models import Producer
    from groundswell.shared.storage import open_store

    options: dict = {}
    if fmt == "mapped":
        if mapping is None:
            raise click.UsageError("the mapped format needs --mapping FILE")
        from groundswell.shared.formats.mapped import load_mapping

        try:
            options["mapping"] = load_mapping(mapping.read_bytes(), str(mapping))
        except InputFileError as exc:
            click.echo(f"groundswell: {exc}", err=True)
            sys.exit(2)
        options["base"] = src if src.is_dir() else src.parent
    producer = Producer(
        format=fmt,
        producer_version=producer_version,
        model=model,
        prompt_version=prompt_version,
        schema_version=schema_version,
    ).as_dict()
    paths = _sources(src)
    if not paths:
        click.echo(f"groundswell: no .jsonl or .json files in {src}", err=True)
        sys.exit(2)
    store = open_store(corpus)
    sizes = sum(p.stat().st_size for p in paths)
    show = sys.stderr.isatty() and not as_json
    bar = (
        click.progressbar(length=sizes, label="importing", file=sys.stderr)
        if show
        else contextlib.nullcontext()
    )
    with bar as progress:

        def lines(path: Path):
            # A line at a time: a JSONL file of any size is imported with flat memory.
            with path.open("rb") as fh:
                for line in fh:
                    if progress is not None:
                        progress.update(len(line))
                    yield line

        def files():
            for p in paths:
                yield str(p), lambda p=p: lines(p)

        try:
            report = import_files(
                fmt,
                files(),
                store,
                producer=producer,
                schema=schema_path.read_bytes() if schema_path else None,
                options=options,
                check=not no_check,
            )
        except InputFileError as exc:
            click.echo(f"groundswell: {exc}", err=True)
            sys.exit(2)
    if as_json:
        click.echo(json.dumps(report.as_dict(), ensure_ascii=False, indent=1))
    else:
        for error in report.errors:
            click.echo(f"groundswell: {error}", err=True)
        d = report.disagreements()
        click.echo(
            f"imported {report.documents:,} documents ({report.claims:,} claims, "
            f"{report.candidates:,} candidates) into {corpus}; {len(report.errors):,} records "
            "refused"
        )
        click.echo(
            "producer/verifier disagreements: "
            f"{d['exact_not_verified']:,} exact spans not verified at exact/whitespace, "
            f"{d['unaligned_located']:,} unaligned quotations located, "
            f"{d['lesser_short']:,} lesser spans short of their quotation"
        )
        pages = report.as_dict()["pages"]
        if pages:
            click.echo(
                "quotations cited by page: "
                + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in pages.items())
            )
    sys.exit(1 if report.errors else 0)
