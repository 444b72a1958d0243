"""`groundswell read FILE [-o TEXT] [--layout LAYOUT] [--pages 1-3]`: a PDF, HTML, XML or text
file turned into the NFC text that verification and admission read.

It takes ``groundgate read``'s arguments and writes the same bytes: the text in UTF-8 with no
final newline (to stdout, or to ``-o``), the layout of a PDF as one line of JSON (``--layout``),
warnings on stderr, exit status 2 when the file cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from groundswell.shared.cli.app import main
from groundswell.shared.read import parse_pages, read_path


class ReadFailed(click.ClickException):
    """The file cannot be read (exit 2, as groundgate)."""

    exit_code = 2

    def show(self, file: object = None) -> None:
        click.echo(f"groundswell: {self.format_message()}", err=True)


def _page_ranges(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            parse_pages(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def _named_options(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in values:
        name, equals, value = item.partition("=")
        if not (equals and name and value):
            raise click.BadParameter(f"{item!r} is not NAME=VALUE")
        options[name] = value
    return options


@main.command("read")
@click.argument("file")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the text here.")
@click.option(
    "--layout",
    type=click.Path(dir_okay=False),
    help="Also write the page and word boxes as JSON (PDF only).",
)
@click.option(
    "--pages",
    callback=_page_ranges,
    metavar="RANGES",
    help="PDF pages to read, e.g. 1-12,15 (other formats are read whole).",
)
@click.option(
    "--option",
    "options",
    multiple=True,
    callback=_named_options,
    metavar="NAME=VALUE",
    help="A named, versioned reader option (repeatable): xml_breaks=uslm-1 (USLM titles, "
    "margin notes and page markers on their own lines, numbers and headings set apart); "
    "pdf_tables=cells-1 (a currency sign stays with its amount and a footnote mark with its "
    "label, so number-table rows keep their tabs). Without options the text is groundgate's.",
)
def read_command(
    file: str,
    output: str | None,
    layout: str | None,
    pages: str | None,
    options: dict[str, str],
) -> None:
    """Turn a PDF, HTML, XML or text file into NFC text (the format comes from the file name's
    ending, in any case: .pdf, .html/.htm/.xhtml, .xml, .txt/.text/.md/.markdown)."""
    if file == "-":
        raise ReadFailed("read needs a file: its name's ending tells its format")
    try:
        reading = read_path(file, pages=pages, **options)
    except (ValueError, OSError, ImportError) as exc:  # ReadError is a ValueError
        raise ReadFailed(str(exc)) from exc
    for warning in reading.warnings:
        click.echo(f"groundswell: warning: {warning}", err=True)
    if layout:
        if reading.layout is None:
            raise ReadFailed("--layout needs a PDF")
        Path(layout).write_text(json.dumps(reading.layout) + "\n", encoding="utf-8")
    data = reading.text.encode("utf-8")
    if output:
        Path(output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
