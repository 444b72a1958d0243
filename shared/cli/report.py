"""`groundswell report`: the HTML report of a finished run, or the review page of one receipt.

    groundswell report RUN_ID [--documents N] [-o run-RUN_ID.html]
    groundswell report RECEIPT DOC SCHEMA CANDIDATES [--pdf FILE] [--policy ...] [-o report.html]
    groundswell report --corpus CORPUS [-o corpus.html]

The second form is groundgate's ``report``: it checks the receipt with ``check-receipt``
itself (the same options, pack folder and receipts stored by a run) and renders nothing when
it does not re-derive (exit 1). An input that cannot be read, or is not a valid packet, exits
2; so does a layout that is malformed or of another document. RECEIPT may also be a receipt
stored by a run; DOC may be - (standard input).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from groundswell.shared.cli.admit import (
    InputError,
    read_json,
    receipt_options,
    verified_receipt,
)
from groundswell.shared.cli.app import main

_RECEIPT_ONLY = ("judgments", "policy", "references", "document_source", "packs", "pack_dir")
_RECEIPT_ONLY += ("layout", "pdf", "title")


def _write(pieces: Iterable[str], output: str | None) -> None:
    """Write the page as it is rendered: to ``output``, or to standard output."""
    if output is None or output == "-":
        out = sys.stdout.buffer
        for piece in pieces:
            out.write(piece.encode("utf-8"))
        out.flush()
        return
    path = Path(output)
    try:
        with path.open("w", encoding="utf-8") as f:
            for piece in pieces:
                f.write(piece)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def review_receipt(
    receipt: str,
    document: str,
    schema: str,
    candidates: str,
    output: str | None,
    *,
    layout: str | None = None,
    pdf: str | None = None,
    title: str | None = None,
    **inputs: Any,
) -> None:
    """groundgate's ``report``: check the receipt with ``check-receipt`` itself (the same
    inputs, pack folder, stored run receipts, and exits: 1 with each difference, 2 for an
    invalid input), then render its review page. ``inputs`` are check-receipt's options."""
    from groundswell.shared.report.render import iter_review, layout_pages, receipt_page_images

    try:
        spec, text = verified_receipt(receipt, document, schema, candidates, **inputs)
    except SystemExit as exc:
        if exc.code == 1:
            click.echo("groundswell: not rendering a receipt that does not match", err=True)
        raise
    pages = None
    if layout is not None:
        try:
            pages = layout_pages(read_json(layout), spec["document"]["sha256"])
        except ValueError as exc:
            raise InputError(f"{layout}: {exc}") from exc
    images = None
    if pdf is not None:
        pdf_layout, render = _read_pdf(pdf, spec["document"]["sha256"])
        pages = pages or layout_pages(pdf_layout, spec["document"]["sha256"])
        images = receipt_page_images(spec, pdf_layout, render)
    references = read_json(inputs["references"]) if inputs.get("references") else None
    name = title or spec["document"].get("id") or (Path(document).name if document != "-" else None)
    page = iter_review(
        spec,
        text,
        title=name or "receipt review",
        references=references,
        pages=pages,
        images=images,
    )
    _write(page, output)


def _read_pdf(pdf: str, document_sha256: str) -> tuple[dict[str, Any], Any]:
    """The PDF that DOC was read from: its layout (read again, so the page images are of the
    same file: its text must be the receipt's document, else exit 2) and a render of a page
    at GROUNDSWELL_PAGE_IMAGE_DPI."""
    from groundswell.shared.read import ReadError, read_path
    from groundswell.shared.read.render import RenderError, render_page
    from groundswell.shared.settings import get_settings

    try:
        reading = read_path(pdf)
        data = Path(pdf).read_bytes()
    except (OSError, ReadError) as exc:
        raise InputError(f"{pdf}: {exc}") from exc
    if reading.layout is None:
        raise InputError(f"{pdf}: not a PDF (--pdf is the PDF that DOC was read from)")
    if reading.layout.get("document_sha256") != document_sha256:
        raise InputError(
            f"{pdf}: its text is not the receipt's document (it reads to "
            f"{reading.layout.get('document_sha256')}, the receipt's is {document_sha256})"
        )
    dpi = get_settings().page_image_dpi

    def render(page: int) -> bytes:
        try:
            return render_page(data, page, dpi)
        except RenderError as exc:
            raise InputError(f"{pdf}: {exc}") from exc

    return reading.layout, render


@main.command("report")
@click.argument("inputs", nargs=-1, metavar="RUN_ID | RECEIPT DOC SCHEMA CANDIDATES")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="Write the HTML here. Default: run-RUN_ID.html for a run, stdout for a receipt.",
)
@click.option(
    "--documents",
    type=click.IntRange(1, 1000),
    default=50,
    show_default=True,
    help="A run: documents a page (in id order; those that need a person are listed first).",
)
@click.option(
    "--corpus",
    metavar="CORPUS",
    help="Instead of a run: the page of a corpus (its latest runs; grounding rate, escape "
    "rate and review load by run and by policy version, as charts).",
)
@click.option("--verdict", help="A run: only documents with claims of this verdict.")
@click.option("--outcome", help="A run: only documents with candidates of this outcome.")
@click.option("--code", help="A run: only documents with decisions of this code.")
@click.option("--document", "only_document", metavar="DOC_ID", help="A run: only this document.")
@click.option("--after", metavar="DOC_ID", help="A run: the page of documents after DOC_ID.")
@receipt_options
@click.option(
    "--layout",
    type=click.Path(exists=True, dir_okay=False),
    help="Layout JSON from `groundgate read --layout`, to show page numbers.",
)
@click.option(
    "--pdf",
    type=click.Path(exists=True, dir_okay=False),
    help="The PDF that DOC was read from (groundswell read): its cited pages as images, each "
    "value boxed and numbered as its card.",
)
@click.option("--title", help="The page's title (default: the document id, or DOC's name).")
@click.pass_context
def report(
    ctx: click.Context,
    inputs: tuple[str, ...],
    output: str | None,
    documents: int,
    verdict: str | None,
    outcome: str | None,
    code: str | None,
    only_document: str | None,
    after: str | None,
    corpus: str | None,
    **options: Any,
) -> None:
    """Write an HTML report.

    \b
    RUN_ID: a page of the report of a finished run: its contents, summary, codes, the
    documents that need a person most, a page of documents in id order (--documents a page,
    --after the next; filtered by --verdict, --outcome, --code or --document) with each
    claim's and candidate's span highlighted in the source, and the failed units.
    \b
    RECEIPT DOC SCHEMA CANDIDATES: re-derive the admission receipt from its inputs (as
    check-receipt does; exit 1 and no page when it does not match), then write its review
    page: each candidate's outcome, codes and value, with its evidence highlighted in the
    document (and, with --pdf, on images of its pages). DOC may be - for standard input.
    \b
    --corpus CORPUS: the page of a corpus: its latest runs and its rates by run and by
    policy version, as charts.
    """

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)

    if corpus is not None:
        if inputs:
            raise click.UsageError("--corpus is instead of RUN_ID or RECEIPT DOC SCHEMA CANDIDATES")
        _report_corpus(corpus, output)
        return
    if len(inputs) == 4:
        run_only = ("documents", "verdict", "outcome", "code", "only_document", "after")
        for name in run_only:
            if given(name):
                flag = "--document" if name == "only_document" else f"--{name}"
                raise click.UsageError(f"{flag} is for the report of a run (one RUN_ID)")
        review_receipt(*inputs, output, **options)
        return
    if len(inputs) != 1:
        raise click.UsageError(
            "give RUN_ID, or RECEIPT DOC SCHEMA CANDIDATES, or --corpus CORPUS "
            f"(got {len(inputs)} arguments)"
        )
    extra = [f"--{n.replace('_', '-')}" for n in _RECEIPT_ONLY if given(n)]
    if extra:
        raise click.UsageError(f"{', '.join(extra)}: only with RECEIPT DOC SCHEMA CANDIDATES")
    from groundswell.shared.cli.runs import _fail
    from groundswell.shared.report.pages import UnknownFilter, check_filter

    query = {
        "verdict": verdict,
        "outcome": outcome,
        "code": code,
        "document": only_document,
        "after": after,
    }
    try:
        for name, value in query.items():
            check_filter(name, value)
    except UnknownFilter as exc:
        _fail(str(exc), 2)
    _report_run(inputs[0], output, documents, {k: v for k, v in query.items() if v})


def _report_run(run_id: str, output: str | None, documents: int, query: dict[str, str]) -> None:
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.cli.runs import _fail
    from groundswell.shared.report.service import run_report
    from groundswell.shared.runs.models import RunNotFinished, RunNotFound

    service, _ = _registry_service()
    try:
        page = run_report(service, run_id, documents, **query)
    except RunNotFound as exc:
        _fail(f"no run {exc}", 2)
    except RunNotFinished as exc:
        _fail(str(exc), 2)
    if output == "-":
        _write([page], None)
        return
    path = Path(output or f"run-{run_id}.html")
    path.write_text(page, encoding="utf-8")
    click.echo(str(path))


def _report_corpus(corpus: str, output: str | None) -> None:
    from groundswell.shared.cli.policies import _registry_service
    from groundswell.shared.cli.runs import _fail
    from groundswell.shared.report.corpus import CorpusNotFound, corpus_report

    service, _ = _registry_service()
    try:
        page = corpus_report(service, corpus)
    except CorpusNotFound as exc:
        _fail(str(exc), 2)
    if output == "-":
        _write([page], None)
        return
    path = Path(output or "corpus.html")
    path.write_text(page, encoding="utf-8")
    click.echo(str(path))
