"""`groundswell` commands: admit (one document, a packet, or folders) and check-receipt."""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from groundswell.shared.admit import Admitter, PacketError, admit_packet
from groundswell.shared.admit.rederive import check_receipt
from groundswell.shared.cli.app import main


class InputError(click.ClickException):
    """A file that cannot be read as the input it should be (exit 2, like an invalid packet)."""

    exit_code = 2


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except ValueError as exc:
        raise InputError(f"{where}: not valid JSON: {exc}") from exc


def read_json(path: str | Path) -> Any:
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    return parse_json(text, str(path))


def read_text(path: str | Path) -> str:
    """A document, byte for byte (no newline translation), as UTF-8."""
    try:
        return Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc


def _dump(receipt: dict[str, Any]) -> str:
    return json.dumps(receipt, ensure_ascii=False, indent=1) + "\n"


def _packs(paths: tuple[str, ...]) -> list[Any] | None:
    return [read_json(p) for p in paths] or None


def _print_decisions(receipt: dict[str, Any]) -> None:
    for d in receipt["decisions"]:
        key = f" [{d['key']}]" if d.get("key") is not None else ""
        codes = " ".join(d["codes"])
        click.echo(
            f"{d['outcome']:<19} {d.get('candidate_id')!s:<10} {d['field']!s}{key} "
            f"{d['value']!s} {codes}".rstrip()
        )
    for c in receipt["coverage"]:
        click.echo(f"coverage            {c['field']} {c['code']}")
    s = receipt["summary"]
    click.echo(
        f"admitted {s['admitted']}, needs_verification {s['needs_verification']}, "
        f"rejected {s['rejected']}"
    )


_input_options = [
    click.option("--policy", type=click.Path(exists=True, dir_okay=False), help="Policy JSON."),
    click.option(
        "--references", type=click.Path(exists=True, dir_okay=False), help="References JSON list."
    ),
    click.option("--document-source", help="The URL the document came from."),
    click.option(
        "--pack",
        "packs",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        help="A vocabulary or kind pack JSON that the schema names (repeatable).",
    ),
]


def _with_inputs(f: Any) -> Any:
    for option in reversed(_input_options):
        f = option(f)
    return f


@main.command("admit")
@click.argument("document", required=False, type=click.Path(exists=True))
@click.argument("schema", required=False, type=click.Path(exists=True, dir_okay=False))
@click.argument("candidates", required=False, type=click.Path(exists=True))
@click.option(
    "-o", "--output", type=click.Path(), help="Write the receipt here (batch: the receipts folder)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON on stdout.")
@click.option("--document-id", help="The document id recorded in the receipt.")
@click.option("--judgments", type=click.Path(exists=True), help="Recorded judgments JSON list.")
@click.option(
    "--packet",
    type=click.Path(allow_dash=True, dir_okay=False),
    help="A conformance-vector-shaped packet (FILE or - for stdin); the receipt goes to stdout.",
)
@_with_inputs
def admit_command(
    document: str | None,
    schema: str | None,
    candidates: str | None,
    output: str | None,
    as_json: bool,
    document_id: str | None,
    judgments: str | None,
    packet: str | None,
    policy: str | None,
    references: str | None,
    document_source: str | None,
    packs: tuple[str, ...],
) -> None:
    """Admit, flag or reject each candidate fact of DOCUMENT (groundgate SPEC v0.11).

    \b
    groundswell admit DOC SCHEMA CANDIDATES [-o RECEIPT] [--json]
    groundswell admit --packet FILE|-      the receipt on stdout; exit 2 if invalid
    groundswell admit DOCS/ SCHEMA CANDIDATES/ -o RECEIPTS/
        batch: each DOCS/<name>.txt with CANDIDATES/<name>.json; receipts and
        summary.json in RECEIPTS/, a summary of outcomes and codes on stdout
    """
    if packet is not None:
        if document or schema or candidates:
            raise click.UsageError("--packet takes no other inputs")
        text = sys.stdin.read() if packet == "-" else read_text(packet)
        try:
            receipt = admit_packet(parse_json(text, packet))
        except PacketError as exc:
            raise InputError(f"invalid packet: {exc}") from exc
        click.echo(_dump(receipt), nl=False)
        return
    if not (document and schema and candidates):
        raise click.UsageError("give DOCUMENT SCHEMA CANDIDATES, or --packet")
    if Path(document).is_dir() or Path(candidates).is_dir():
        if not (Path(document).is_dir() and Path(candidates).is_dir() and output):
            raise click.UsageError("the batch form is: admit DOCS/ SCHEMA CANDIDATES/ -o RECEIPTS/")
        _batch(
            Path(document),
            Path(candidates),
            Path(schema),
            Path(output),
            policy,
            references,
            document_source,
            packs,
            judgments,
        )
        return
    try:
        receipt = Admitter(
            read_text(document),
            read_json(schema),
            read_json(policy) if policy else None,
            document_id=document_id,
            document_source=document_source,
            references=read_json(references) if references else None,
            packs=_packs(packs),
        ).admit(read_json(candidates), read_json(judgments) if judgments else None)
    except PacketError as exc:
        raise InputError(f"invalid packet: {exc}") from exc
    if output:
        Path(output).write_text(_dump(receipt), encoding="utf-8")
    if as_json:
        click.echo(_dump(receipt), nl=False)
    elif not output or sys.stdout.isatty():
        _print_decisions(receipt)


def _batch(
    docs: Path,
    cands: Path,
    schema_path: Path,
    out: Path,
    policy: str | None,
    references: str | None,
    document_source: str | None,
    packs: tuple[str, ...],
    judgments_dir: str | None,
) -> None:
    """Every DOC.txt of ``docs`` with ``cands``/DOC.json; receipts are written only when every
    document was admitted, so a refused input leaves no partial output."""
    paths = sorted(p for p in docs.glob("*.txt") if p.is_file())
    if not paths:
        raise InputError(f"{docs}: no *.txt documents")
    stems = [p.stem for p in paths]
    folded = Counter(s.lower() for s in stems)
    if any(n > 1 for n in folded.values()):
        raise InputError("two document names differ only in case")
    if "summary" in stems:
        raise InputError("a document may not be named summary (the summary is summary.json)")
    if out.resolve() in (cands.resolve(), docs.resolve()):
        raise InputError("--out must not be the documents or candidates folder")
    for stem in stems:
        if not (cands / f"{stem}.json").is_file():
            raise InputError(f"{cands / (stem + '.json')}: missing (write [] for none)")
    schema = read_json(schema_path)
    policy_obj = read_json(policy) if policy else None
    refs = read_json(references) if references else None
    pack_objs = _packs(packs)
    receipts: dict[str, dict[str, Any]] = {}
    # A progress bar on a terminal only (on stderr); piped output stays the summary alone.
    bar = (
        click.progressbar(paths, label="admitting", file=sys.stderr)
        if sys.stderr.isatty()
        else contextlib.nullcontext(paths)
    )
    with bar as documents:
        for path in documents:
            judgments = None
            if judgments_dir:
                jpath = Path(judgments_dir) / f"{path.stem}.json"
                judgments = read_json(jpath) if jpath.is_file() else None
            try:
                receipts[path.stem] = Admitter(
                    read_text(path),
                    schema,
                    policy_obj,
                    document_id=path.stem,
                    document_source=document_source,
                    references=refs,
                    packs=pack_objs,
                ).admit(read_json(cands / f"{path.stem}.json"), judgments)
            except PacketError as exc:
                raise InputError(f"{path}: invalid packet: {exc}") from exc
    summary = batch_summary(receipts)
    out.mkdir(parents=True, exist_ok=True)
    for stem, receipt in receipts.items():
        (out / f"{stem}.json").write_text(_dump(receipt), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    totals = summary["totals"]
    click.echo(f"{len(receipts)} documents, receipts in {out}")
    click.echo("| outcome | count |\n|---|---:|")
    for outcome, n in totals["outcomes"].items():
        click.echo(f"| {outcome} | {n} |")
    if totals["codes"]:
        click.echo("\n| code | count |\n|---|---:|")
        for code, n in totals["codes"].items():
            click.echo(f"| {code} | {n} |")


def batch_summary(receipts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Outcomes and codes per document and in total (every code of every decision, plus
    coverage codes)."""
    documents: dict[str, Any] = {}
    total_outcomes: Counter[str] = Counter()
    total_codes: Counter[str] = Counter()
    for stem, receipt in sorted(receipts.items()):
        codes: Counter[str] = Counter()
        for d in receipt["decisions"]:
            codes.update(d["codes"])
        codes.update(c["code"] for c in receipt["coverage"])
        documents[stem] = {
            "outcomes": dict(receipt["summary"]),
            "codes": dict(sorted(codes.items())),
        }
        total_outcomes.update(receipt["summary"])
        total_codes.update(codes)
    outcomes = {k: total_outcomes.get(k, 0) for k in ("admitted", "needs_verification", "rejected")}
    return {
        "documents": documents,
        "totals": {"outcomes": outcomes, "codes": dict(sorted(total_codes.items()))},
    }


@main.command("check-receipt")
@click.argument("receipt", type=click.Path(exists=True, dir_okay=False))
@click.argument("document", type=click.Path(exists=True, dir_okay=False))
@click.argument("schema", type=click.Path(exists=True, dir_okay=False))
@click.argument("candidates", type=click.Path(exists=True, dir_okay=False))
@click.option("--judgments", type=click.Path(exists=True), help="Recorded judgments JSON list.")
@_with_inputs
def check_receipt_command(
    receipt: str,
    document: str,
    schema: str,
    candidates: str,
    judgments: str | None,
    policy: str | None,
    references: str | None,
    document_source: str | None,
    packs: tuple[str, ...],
) -> None:
    """Re-derive RECEIPT from its inputs; exit 1 on any difference."""
    problems = check_receipt(
        read_json(receipt),
        read_text(document),
        read_json(schema),
        read_json(candidates),
        read_json(policy) if policy else None,
        document_source=document_source,
        references=read_json(references) if references else None,
        judgments=read_json(judgments) if judgments else None,
        packs=_packs(packs),
    )
    if problems:
        for p in problems:
            click.echo(f"mismatch: {p}", err=True)
        raise SystemExit(1)
    click.echo("receipt verified")
