"""`groundswell` commands: admit (one document, a packet, or folders) and check-receipt.

Both take groundgate's arguments: ``groundgate admit`` (also its batch options ``--docs
--candidates --schema --out``) is ``groundswell admit``, and ``groundgate verify RECEIPT DOC
SCHEMA CANDIDATES`` is ``groundswell check-receipt``. A receipt is written as groundgate writes
it (two-space indent, UTF-8, a final newline), so the files are byte-identical.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from groundswell.shared.admit import PacketError, admit_packet, admitter_for
from groundswell.shared.cli.app import main
from groundswell.shared.guarded.rederive import check_receipt
from groundswell.shared.words import counted


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


def _read_bytes(path: str | Path) -> bytes:
    """A file's bytes; '-' is standard input."""
    try:
        return sys.stdin.buffer.read() if str(path) == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {exc}") from exc


def _decode(data: bytes, path: str | Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{'standard input' if str(path) == '-' else path}: {exc}") from exc


def read_text(path: str | Path) -> str:
    """A document, byte for byte (no newline translation), as UTF-8; '-' is standard input."""
    return _decode(_read_bytes(path), path)


def _dump(receipt: dict[str, Any]) -> str:
    """A receipt as groundgate writes it (file and stdout alike)."""
    return json.dumps(receipt, ensure_ascii=False, indent=2) + "\n"


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


references_option = click.option(
    "--references",
    type=click.Path(exists=True, dir_okay=False),
    help="References JSON list (their ids are the refs a quote may name).",
)
pack_option = click.option(
    "--pack",
    "packs",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A vocabulary or kind pack JSON that the schema names (repeatable).",
)
policy_file_option = click.option(
    "--policy", type=click.Path(exists=True, dir_okay=False), help="Policy JSON."
)
_input_options = [
    references_option,
    click.option("--document-source", help="The URL the document came from."),
    pack_option,
]


def _with_inputs(f: Any) -> Any:
    for option in reversed(_input_options):
        f = option(f)
    return f


def _admit_policies(values: tuple[str, ...]) -> tuple[str | None, Any]:
    """admit's ``--policy`` values: groundgate's admission policy FILE (a value that names a
    file, or is no policy reference) and a policy version NAME[@N] (the configured registry's,
    else a built-in), at most one of each; an unknown reference is an input error (exit 2)."""
    from groundswell.shared.policies import POLICY_REF, PolicyError, local_policy

    refs = [v for v in values if POLICY_REF.match(v) and not Path(v).exists()]
    files = [v for v in values if v not in refs]
    if len(refs) > 1 or len(files) > 1:
        raise click.UsageError("--policy: at most one policy FILE and one NAME[@N]")
    for path in files:
        if not Path(path).is_file():
            raise click.BadParameter(f"{path!r} is no policy file", param_hint="'--policy'")
    if not refs:
        return (files or [None])[0], None
    try:
        version = local_policy(refs[0])
        _ = version.guard_settings  # a guard that does not validate is refused here
    except PolicyError as exc:
        raise InputError(f"--policy {refs[0]}: {exc}") from None
    return (files or [None])[0], version


@main.command("admit")
@click.argument("document", required=False, type=click.Path(exists=True, allow_dash=True))
@click.argument("schema", required=False, type=click.Path(exists=True, dir_okay=False))
@click.argument("candidates", required=False, type=click.Path(exists=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="Write the receipt here (folders: the receipts folder).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON on stdout.")
@click.option("--document-id", help="The document id recorded in the receipt.")
@click.option(
    "--judgments",
    type=click.Path(exists=True),
    help="Recorded judgments JSON list; in batch mode a folder of <doc>.json.",
)
@click.option(
    "--packet",
    type=click.Path(allow_dash=True, dir_okay=False),
    help="A conformance-vector-shaped packet (FILE or - for stdin); the receipt goes to stdout.",
)
@click.option(
    "--docs", type=click.Path(exists=True, file_okay=False), help="Batch: a folder of <doc>.txt."
)
@click.option(
    "--candidates",
    "batch_candidates",
    type=click.Path(exists=True, file_okay=False),
    help="Batch: a folder of <doc>.json candidate arrays.",
)
@click.option(
    "--schema",
    "batch_schema",
    type=click.Path(exists=True, dir_okay=False),
    help="Batch: the schema JSON.",
)
@click.option(
    "--out", type=click.Path(file_okay=False), help="Batch: the folder for receipts and summary."
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    metavar="NAME[@N]|FILE",
    help="A policy version to decide under (built-in, e.g. guarded, or NAME@N from the "
    "registry): its admission over the packet's own policy, with its guards on top; and/or "
    "groundgate's admission policy JSON FILE (the packet's own). Default: the packet's own.",
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
    docs: str | None,
    batch_candidates: str | None,
    batch_schema: str | None,
    out: str | None,
    policies: tuple[str, ...],
    references: str | None,
    document_source: str | None,
    packs: tuple[str, ...],
) -> None:
    """Admit, flag or reject each candidate fact of DOCUMENT (groundgate SPEC v0.11).

    Takes groundgate admit's arguments and options, and writes the same receipt bytes.

    \b
    groundswell admit DOC SCHEMA CANDIDATES [-o RECEIPT] [--json]
        DOC may be - (standard input). The receipt goes to RECEIPT, or to stdout
        when stdout is not a terminal (as groundgate); on a terminal, a table of
        decisions (--json prints the receipt there too)
    groundswell admit --packet FILE|-      the receipt on stdout; exit 2 if invalid
    groundswell admit --docs D --candidates C --schema S --out R
    groundswell admit DOCS/ SCHEMA CANDIDATES/ -o RECEIPTS/
        batch: each D/<name>.txt with C/<name>.json (and --judgments J/<name>.json);
        receipts and summary.json in R, the totals of outcomes and codes on stdout

    With --policy NAME[@N] (e.g. --policy guarded), each form decides under that policy
    version: the packet's own admission policy (or the version's), with the version's
    guards on top; without it, the receipt is groundgate's.
    """
    policy, version = _admit_policies(policies)
    if packet is not None:
        if document or schema or candidates:
            raise click.UsageError("--packet takes no other inputs")
        text = sys.stdin.read() if packet == "-" else read_text(packet)
        try:
            receipt = admit_packet(parse_json(text, packet), version)
        except PacketError as exc:
            raise InputError(f"invalid packet: {exc}") from exc
        click.echo(_dump(receipt), nl=False)
        return
    batch = (docs, batch_candidates, batch_schema, out)
    if any(batch):
        if not all(batch):
            raise click.UsageError("batch admit requires --docs, --candidates, --schema and --out")
        if document or schema or candidates or output or document_id:
            raise click.UsageError(
                "batch admit cannot use positional inputs, --output or --document-id"
            )
        document, schema, candidates, output = docs, batch_schema, batch_candidates, out
    if not (document and schema and candidates):
        raise click.UsageError("give DOCUMENT SCHEMA CANDIDATES, --docs ..., or --packet")
    if any(batch) or Path(document).is_dir() or Path(candidates).is_dir():
        if not (Path(document).is_dir() and Path(candidates).is_dir() and output):
            raise click.UsageError("the batch form is: admit DOCS/ SCHEMA CANDIDATES/ -o RECEIPTS/")
        _batch(
            Path(document),
            Path(candidates),
            Path(schema),
            Path(output),
            (policy, version),
            references,
            document_source,
            packs,
            judgments,
        )
        return
    try:
        receipt = admitter_for(
            version,
            read_text(document),
            read_json(schema),
            policy=read_json(policy) if policy else None,
            document_id=document_id,
            document_source=document_source,
            references=read_json(references) if references else None,
            packs=_packs(packs),
        ).admit(read_json(candidates), read_json(judgments) if judgments else None)
    except PacketError as exc:
        raise InputError(f"invalid packet: {exc}") from exc
    if output:
        Path(output).write_text(_dump(receipt), encoding="utf-8")
    terminal = sys.stdout.isatty()
    if as_json or not (output or terminal):
        click.echo(_dump(receipt), nl=False)
    elif terminal:
        _print_decisions(receipt)


def _batch(
    docs: Path,
    cands: Path,
    schema_path: Path,
    out: Path,
    policies: tuple[str | None, Any],
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
    taken = [cands.resolve()] + ([Path(judgments_dir).resolve()] if judgments_dir else [])
    if out.resolve() in taken:
        raise InputError("--out must not be the candidates or judgments folder")
    for stem in stems:
        if not (cands / f"{stem}.json").is_file():
            raise InputError(f"{cands / (stem + '.json')}: missing (write [] for none)")
        if judgments_dir and not (Path(judgments_dir) / f"{stem}.json").is_file():
            raise InputError(
                f"{Path(judgments_dir) / (stem + '.json')}: missing (write [] for a document "
                "with no judgments)"
            )
    schema = read_json(schema_path)
    policy, version = policies
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
                judgments = read_json(Path(judgments_dir) / f"{path.stem}.json")
            try:
                receipts[path.stem] = admitter_for(
                    version,
                    read_text(path),
                    schema,
                    policy=policy_obj,
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
    (out / "summary.json").write_text(
        json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    totals = summary["totals"]
    click.echo(f"{counted(len(receipts), 'document')}, receipts in {out}", err=True)
    # The totals exactly as groundgate prints them, for whatever reads them.
    click.echo("| Outcome | Total |\n|---|---:|")
    for outcome, n in totals["outcomes"].items():
        click.echo(f"| {outcome} | {n} |")
    click.echo("\n| Code | Total |\n|---|---:|")
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


def _stored_receipt(data: Any, raw: bytes, where: str) -> tuple[dict[str, Any], dict | None]:
    """The SPEC receipt in RECEIPT, and the unit receipt of a run that wraps it (else None).

    A run stores each document's admission as a unit receipt (``receipts/admit/...``): the
    groundgate receipt under ``receipt``, with the digests of the input files, the policy
    part's fingerprint and, for a document that is not NFC, how it was normalized."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: a receipt is a JSON object, not a {type(data).__name__}")
    if "groundgate" in data or "kind" not in data:
        return data, None
    from groundswell.shared.receipts import ReceiptError, open_receipt

    if data.get("kind") != "admit":
        raise InputError(
            f"{where}: a {data.get('kind')!r} unit receipt of a run; check-receipt checks "
            "admission receipts"
        )
    if "failure" in data:
        failure = data["failure"]
        message = failure.get("message") if isinstance(failure, dict) else failure
        raise InputError(f"{where}: the run recorded a failure, not a receipt: {message}")
    try:
        unit = open_receipt(raw, where)
    except ReceiptError as exc:
        click.echo(f"mismatch: {exc}", err=True)
        raise SystemExit(1) from None
    if not isinstance(unit.get("receipt"), dict):
        raise InputError(f"{where}: a unit receipt with no admission receipt in it")
    return unit["receipt"], unit


def receipt_packs(
    receipt: dict[str, Any], schema: Any, given: list[Any], folder: str | None
) -> tuple[list[Any], list[str]]:
    """The packs a receipt names that are neither built in nor given, taken from ``folder``
    (``--pack-dir``) by id, version and the digest computed from the file; and a problem for
    each one that is nowhere. Only regular ``*.json`` files are read, and one that is not a
    valid pack is passed over. A pack found is kept when the schema reads it (names it, or
    a kind pack it names needs it), as groundgate's verify does."""
    from groundswell.shared.admit.packs import BASE_ID, BUILT_IN, check_pack, pack_digest

    def identity(pack: Any) -> tuple[Any, Any, str] | None:
        try:
            checked = check_pack(pack)
        except PacketError:
            return None
        return checked["id"], checked["version"], pack_digest(checked["type"], checked)

    missing = {
        (e.get("id"), e.get("version"), e.get("sha256"))
        for e in receipt.get("packs") or []
        if isinstance(e, dict) and e.get("id") not in (*BUILT_IN, BASE_ID)
    } - {identity(p) for p in given}
    found: list[Any] = []
    files = sorted(Path(folder).glob("*.json")) if folder and missing else []
    for path in files:
        if path.is_symlink() or not path.is_file():
            continue
        try:
            pack = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            continue
        if identity(pack) in missing:
            missing.discard(identity(pack))
            found.append(pack)
    where = (
        "not built in, not given and not in the pack folder"
        if folder
        else ("not built in or given")
    )
    problems = [
        f"pack {pid!r} {version} with the digest {sha} is {where}"
        for pid, version, sha in sorted(missing, key=str)
    ]
    named = schema.get("packs") if isinstance(schema, dict) else None
    reads = {(e.get("id"), e.get("version")) for e in named or [] if isinstance(e, dict)}
    for pack in (p for p in [*given, *found] if isinstance(p, dict) and p.get("type") == "kind"):
        if (pack.get("id"), pack.get("version")) in reads:
            needs = [n for n in pack.get("needs") or [] if isinstance(n, dict)]
            reads |= {(n.get("id"), n.get("version")) for n in needs}
    return [p for p in found if (p["id"], p["version"]) in reads], problems


def receipt_options(f: Any) -> Any:
    """The inputs of a receipt's re-derivation besides the four files (groundgate's verify
    and report): --judgments, --policy, --references, --document-source, --pack, --pack-dir."""
    f = click.option(
        "--pack-dir",
        type=click.Path(exists=True, file_okay=False),
        help="A folder of pack files: each pack the receipt names is taken by its digest.",
    )(f)
    f = policy_file_option(_with_inputs(f))
    return click.option(
        "--judgments", type=click.Path(exists=True), help="Recorded judgments JSON list."
    )(f)


@main.command("check-receipt")
@click.argument("receipt", type=click.Path(exists=True, dir_okay=False))
@click.argument("document", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.argument("schema", type=click.Path(exists=True, dir_okay=False))
@click.argument("candidates", type=click.Path(exists=True, dir_okay=False))
@receipt_options
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
    pack_dir: str | None,
) -> None:
    """Re-derive RECEIPT from its inputs and compare: groundgate's `verify`.

    `groundgate verify RECEIPT DOC SCHEMA CANDIDATES` is this command, with the same
    arguments and options. DOC may be - (standard input). RECEIPT may also be a receipt as a
    run stores it (receipts/admit/...): its own digest is checked and the admission receipt
    inside is re-derived, on the NFC form of the document when the run normalized it.

    Exit status: 0 the receipt re-derives, 1 it does not (each difference on stderr), 2 an
    input is invalid.
    """
    verified_receipt(
        receipt,
        document,
        schema,
        candidates,
        judgments=judgments,
        policy=policy,
        references=references,
        document_source=document_source,
        packs=packs,
        pack_dir=pack_dir,
    )
    click.echo("receipt verified")


def verified_receipt(
    receipt: str,
    document: str,
    schema: str,
    candidates: str,
    *,
    judgments: str | None = None,
    policy: str | None = None,
    references: str | None = None,
    document_source: str | None = None,
    packs: tuple[str, ...] = (),
    pack_dir: str | None = None,
) -> tuple[dict[str, Any], str]:
    """check-receipt's check: the SPEC receipt and the text it re-derives on (the document
    as the run read it, for a receipt stored by a run). Exit 1 with each difference on
    stderr; an invalid input raises InputError."""
    raw = _read_bytes(receipt)
    spec_receipt, unit = _stored_receipt(parse_json(_decode(raw, receipt), receipt), raw, receipt)
    doc_bytes = _read_bytes(document)
    text = _decode(doc_bytes, document)
    cand_bytes = _read_bytes(candidates)
    cands = parse_json(_decode(cand_bytes, candidates), candidates)
    schema_obj = read_json(schema)
    pack_objs = [read_json(p) for p in packs]
    extra, problems = receipt_packs(spec_receipt, schema_obj, pack_objs, pack_dir)
    pack_objs += extra
    if unit is not None:
        text, cands, notes = _as_the_run_read(
            unit, (document, doc_bytes), text, (candidates, cand_bytes), schema
        )
        problems += notes
    if not problems:
        try:
            problems = check_receipt(
                spec_receipt,
                text,
                schema_obj,
                cands,
                read_json(policy) if policy else None,
                document_source=document_source,
                references=read_json(references) if references else None,
                judgments=read_json(judgments) if judgments else None,
                packs=pack_objs or None,
                raise_invalid=True,
            )
        except PacketError as exc:
            raise InputError(f"invalid packet: {exc}") from exc
    if problems:
        if unit is not None and "policy_sha256 differs" in problems:
            fingerprint = (unit.get("policy") or {}).get("admit_fingerprint")
            problems.append(
                f"the run admitted under a policy whose admission part has the fingerprint "
                f"{fingerprint}: give that part (groundswell policy show NAME@N) as --policy"
            )
        for p in problems:
            click.echo(f"mismatch: {p}", err=True)
        raise SystemExit(1)
    return spec_receipt, text


def _as_the_run_read(
    unit: dict[str, Any],
    doc: tuple[str, bytes],
    text: str,
    cands: tuple[str, bytes],
    schema: str,
) -> tuple[str, list[Any], list[str]]:
    """The document and candidates as a run admitted them (the candidates it could read, the
    document's NFC form when it normalized it), and which input files are not the run's."""
    from groundswell.shared.admit.normalize import nfc_packet
    from groundswell.shared.corpus import InputFileError, parse_candidates
    from groundswell.shared.receipts import content_sha256

    document, doc_bytes = doc
    candidates, cand_bytes = cands
    notes = [
        f"{name} {'(standard input)' if path == '-' else path} is not the one the run "
        f"admitted (sha256 {content_sha256(data)}, the run's {unit.get(key)})"
        for name, path, data, key in (
            ("document", document, doc_bytes, "document_sha256"),
            ("candidates", candidates, cand_bytes, "candidates_sha256"),
            ("schema", schema, _read_bytes(schema), "schema_sha256"),
        )
        if unit.get(key) is not None and content_sha256(data) != unit.get(key)
    ]
    try:
        kept, _ = parse_candidates(cand_bytes, candidates)
    except InputFileError as exc:
        raise InputError(str(exc)) from exc
    packet = nfc_packet(text, kept)
    return packet.text, packet.candidates, notes
