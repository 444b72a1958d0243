"""`groundswell ledger export` and `groundswell ledger audit`: the ledger out, as a graph with
its provenance, and to a judge, as batches of claims whose spans it tries to refute.

The options and outputs follow xrad 0.4.0's (``xrad export FORMAT --out``, ``xrad audit
--emit/--ingest --size --limit``), with ``-o`` as xrad's documentation shows it, ``--format``
as well as the argument, a deterministic ``--sample N --seed S``, and strict verdicts.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click

from groundswell.shared.cli.ledger import _open, db_option, json_option, ledger


@contextmanager
def _atomic(path: Path):
    """A text file written in full or not at all (a partial file is removed)."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as fh:
            yield fh
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _csv_paths(out: str | None) -> tuple[Path, Path]:
    base = Path(out or "graph")
    return base.with_suffix(".nodes.csv"), base.with_suffix(".edges.csv")


@ledger.command("export")
@click.argument("fmt", metavar="[FORMAT]", required=False)
@click.option(
    "--format", "fmt_option", default=None, help="jsonld | graphml | cypher | csv (or FORMAT)."
)
@db_option
@click.option(
    "-o",
    "--out",
    default=None,
    metavar="PATH",
    help="Write here instead of stdout; for csv a base name: PATH.nodes.csv and PATH.edges.csv "
    "(default graph).",
)
@click.option(
    "--page-size",
    default=1000,
    show_default=True,
    type=click.IntRange(1),
    help="Claims read from the store per query.",
)
def export_cmd(
    fmt: str | None, fmt_option: str | None, db: str | None, out: str | None, page_size: int
) -> None:
    """Export the ledger as FORMAT (jsonld, graphml, cypher or csv): every claim with its
    modality, asserter, polarity and hedge markers, its source document and each evidence
    span (offsets, quote, text, tier), its verdict, and its run, receipt and policy version
    when it came from a run. Streams: memory does not grow with the ledger."""
    from groundswell.shared.ledger.export import FORMATS, WRITERS, LedgerReader, write_csv

    if fmt and fmt_option and fmt != fmt_option:
        raise click.UsageError(f"two formats: {fmt} and --format {fmt_option}")
    chosen = fmt or fmt_option
    if chosen is None:
        raise click.UsageError("which format? jsonld, graphml, cypher or csv")
    if chosen not in FORMATS:
        raise click.ClickException(f"unknown format {chosen} — jsonld, graphml, cypher, csv")
    store = _open(db)
    try:
        reader = LedgerReader(store, page_size)
        if chosen == "csv":
            nodes, edges = _csv_paths(out)
            with _atomic(nodes) as fn, _atomic(edges) as fe:
                written = write_csv(reader, fn, fe)
            where = f"{nodes} and {edges}"
        elif out:
            with _atomic(Path(out)) as fh:
                written = WRITERS[chosen](reader, fh)
            where = out
        else:
            WRITERS[chosen](reader, sys.stdout)
            return
    finally:
        store.close()
    click.echo(
        f"wrote {where} ({written.claims:,} claims, {written.entities:,} entities)", err=True
    )


@ledger.command("audit")
@db_option
@click.option("--emit", type=click.Path(dir_okay=False), help="Write the audit batches here.")
@click.option(
    "--ingest",
    type=click.Path(exists=True, dir_okay=False),
    help="Read the judge's verdicts back from here.",
)
@click.option(
    "--size", default=40, show_default=True, type=click.IntRange(1), help="Claims per batch."
)
@click.option(
    "--limit", type=click.IntRange(1), default=None, help="Only the first N unjudged claims."
)
@click.option(
    "--sample",
    type=click.IntRange(1),
    default=None,
    help="A deterministic sample of N unjudged claims (the same N for the same --seed).",
)
@click.option("--seed", default="0", show_default=True, help="The sample's seed.")
@click.option(
    "--widen",
    "widen_from",
    metavar="CORPUS",
    default=None,
    help="With --emit: offer each claim whose span does not name its subject (or a reported "
    "claim's asserter) the smallest wider span of its document in CORPUS that does, beside "
    "the cited one (never in the prompt), and keep it with the claim as a suggestion.",
)
@json_option
def audit_cmd(
    db: str | None,
    emit: str | None,
    ingest: str | None,
    size: int,
    limit: int | None,
    sample: int | None,
    seed: str,
    widen_from: str | None,
    as_json: bool,
) -> None:
    """Check adversarially whether each cited span establishes its claim: --emit writes the
    unjudged claims as prompts in batches for a judge that sees only the span; --ingest reads
    its verdicts ({"verdicts": [{claim_id, supported, reason}]}) back."""
    from groundswell.shared.ledger import audit as au

    if emit and ingest:
        raise click.UsageError("--emit or --ingest, not both")
    if limit is not None and sample is not None:
        raise click.UsageError("--limit or --sample, not both")
    store = _open(db)
    try:
        if ingest:
            _ingest(store, Path(ingest), as_json)
            return
        waiting = au.count_pending(store)
        todo = min(
            waiting, limit if limit is not None else sample if sample is not None else waiting
        )
        if not todo:
            click.echo("every claim has been judged")
            return
        if not emit:
            batches = -(-todo // size)
            if as_json:
                click.echo(json.dumps({"pending": todo, "batches": batches, "size": size}))
                return
            click.echo(f"{todo:,} claims await a verdict ({batches:,} batches of {size})")
            click.echo("--emit FILE to write them for a judge")
            return
        items = au.pending(store, limit=limit, sample=sample, seed=seed)
        offered: dict[str, dict] = {}
        if widen_from is not None:
            items = _offered(au.widened(items, widen_from), offered)
        chosen = {"size": sample, "seed": seed} if sample is not None else None
        with _atomic(Path(emit)) as fh:
            emitted = au.write_batches(items, fh, size=size, sample=chosen)
        if offered:
            au.keep_suggestions(store, offered)
    finally:
        store.close()
    click.echo(f"{emitted.claims:,} unjudged claims · {emitted.batches:,} batches -> {emit}")
    if widen_from is not None:
        click.echo(
            f"{len(offered):,} widened quotes offered (batches[].claims[].widened), kept with "
            "their claims as suggestions (extra.suggested_quote); no evidence was changed"
        )
    click.echo(
        "each batch is a prompt; the schema is in the file. "
        "Return {verdicts:[{claim_id, supported, reason}]}"
    )


def _offered(items, offered: dict):
    """``items`` as they pass, each widened one noted in ``offered`` (claim id -> span)."""
    for item in items:
        if item.widened is not None:
            offered[item.claim_id] = item.widened
        yield item


def _ingest(store, path: Path, as_json: bool) -> None:
    from groundswell.shared.ledger import audit as au

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise click.ClickException(f"{path}: not JSON: {exc}") from None
    try:
        verdicts = au.read_verdicts(data)
    except au.VerdictError as exc:
        click.echo(f"{len(exc.problems)} problems — nothing written", err=True)
        for problem in exc.problems[:50]:
            click.echo(f"  {problem}", err=True)
        sys.exit(1)
    stats = au.record(store, verdicts)
    rate = au.refutation_rate(store)
    if as_json:
        click.echo(json.dumps({**stats, "rate": rate}, indent=2))
        return
    click.echo(
        f"{stats['supported']} supported · {stats['refuted']} refuted"
        + (f" · {stats['unmatched']} matched no claim" if stats["unmatched"] else "")
    )
    if rate["judged"]:
        click.echo(f"\n  {rate['refuted']}/{rate['judged']} refuted = {100 * rate['rate']:.1f}%")
        if rate["worst_relations"]:
            click.echo(
                "  worst relations: "
                + ", ".join(f"{w['relation']} ({w['n']})" for w in rate["worst_relations"][:5])
            )
