"""`groundswell ledger`: the claims ledger (import, state, vocab, migrate).

The options and outputs follow xrad 0.4.0's where xrad has the command (``--db``,
``--source-text``; ``N claims stored · M discarded, quote not in the source``; the state's
three audit numbers; the
vocabulary as prompt text). ``--db`` takes a URL (``postgresql://...``, ``sqlite:///...``)
or a path (a SQLite file); unset, the ``ledger_url`` setting, whose default is an embedded
SQLite file in the per-user data folder.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from groundswell.shared.cli.app import main

db_option = click.option(
    "--db",
    "db",
    default=None,
    metavar="URL_OR_PATH",
    help="The ledger: postgresql://..., sqlite:///PATH or a path (default: GROUNDSWELL_LEDGER_URL, "
    "else ledger.sqlite3 in the per-user data folder).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")


def _open(db: str | None):
    from groundswell.shared.ledger.store import Ledger

    try:
        return Ledger.open(db)
    except Exception as exc:  # a bad URL, a server that does not answer: say which
        raise click.ClickException(f"cannot open the ledger {db or '(default)'}: {exc}") from exc


def _read(db: str | None, query):
    """``query(ledger)`` on the ledger at ``db``, closed after."""
    store = _open(db)
    try:
        return query(store)
    finally:
        store.close()


def _echo_json(value) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _vocabulary(path: str | None):
    from groundswell.shared.ledger.vocab import VocabularyError, read_vocabulary

    if path is None:
        return None
    try:
        return read_vocabulary(path)
    except VocabularyError as exc:
        raise click.ClickException(str(exc)) from None


def summary_line(report) -> str:
    """xrad's line (``N claims stored · M discarded, quote not in the source``), and how many
    lines were refused for any other reason."""
    from groundswell.shared.ledger.importer import QUOTE_NOT_FOUND

    missing = sum(r.code == QUOTE_NOT_FOUND for r in report.refusals)
    other = len(report.refusals) - missing
    return (
        f"{report.stored} claims stored"
        + (f" · {missing} discarded, quote not in the source" if missing else "")
        + (f" · {other} refused" if other else "")
    )


@main.group()
def ledger() -> None:
    """The claims ledger: claims with their modality, asserter and located evidence."""


@ledger.command("migrate")
@db_option
def migrate_cmd(db: str | None) -> None:
    """Bring the ledger's schema to the newest revision (opening a ledger does it too)."""
    from groundswell.shared.ledger.store import Ledger

    try:
        store = Ledger.open(db, migrate=False)
        before, after = store.migrate()
        pending = store.pending_builds()
        built = store.finish_builds() if pending else 0
        validated = store.validate_keys()
    except Exception as exc:
        raise click.ClickException(f"cannot migrate the ledger {db or '(default)'}: {exc}") from exc
    store.close()
    if before != after:
        click.echo(f"ledger migrated from {before or 'empty'} to revision {after}")
    elif not built and not validated:
        click.echo(f"ledger at revision {after} (nothing to do)")
    if built:
        click.echo(f"made again what an unfinished bulk load left: {', '.join(pending)}")
    if validated:
        click.echo(f"validated the keys bulk loads left unchecked: {', '.join(validated)}")


@ledger.command("import")
@click.argument("target", metavar="CORPUS_OR_FILE")
@db_option
@click.option(
    "--source-text",
    type=click.Path(dir_okay=False),
    default=None,
    help="The document every quote of one FILE is verified against (a corpus's relations/ "
    "files use its documents/).",
)
@click.option(
    "--vocab",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The relation vocabulary (xrad YAML); default: the corpus's vocabulary.yaml, if any.",
)
@click.option(
    "--refusals",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write each refused line as a JSON record to this file.",
)
@click.option("--show", default=20, show_default=True, help="Refusals printed (0: none).")
@click.option(
    "--bulk",
    is_flag=True,
    help="For a large import on PostgreSQL: indexes and keys dropped for it and made again at "
    "its end (the tables are locked until its data commits).",
)
@json_option
def import_cmd(
    target: str,
    db: str | None,
    source_text: str | None,
    vocab: str | None,
    refusals: str | None,
    show: int,
    bulk: bool,
    as_json: bool,
) -> None:
    """Load claims from CORPUS_OR_FILE (a corpus's relations/<doc_id>.jsonl, or one such file),
    refusing any whose quote is not in its document or that breaks the vocabulary."""
    from groundswell.shared.ledger.importer import CannotImport, import_into

    vocabulary = _vocabulary(vocab)
    store = _open(db)
    bar = None

    def progress(done: int, total: int) -> None:  # a bar on a terminal, for many files
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="importing", file=sys.stderr)
            bar.__enter__()
        bar.update(1)

    try:
        report = import_into(
            store,
            target,
            source_text=source_text,
            vocab=vocabulary,
            progress=progress if sys.stderr.isatty() else None,
            bulk=bulk,
        )
    except CannotImport as exc:
        raise click.UsageError(str(exc)) from None
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        store.close()
    if refusals:
        Path(refusals).write_text(
            "".join(json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in report.refusals),
            encoding="utf-8",
        )
    if as_json:
        _echo_json(report.as_dict())
        return
    refused = len(report.refusals)
    click.echo(summary_line(report))
    if report.tiers:
        click.echo("  located: " + ", ".join(f"{n} {t}" for t, n in sorted(report.tiers.items())))
    for refusal in report.refusals[: max(show, 0)]:
        click.echo(f"  {refusal}", err=True)
    if refused > show > 0:
        click.echo(f"  ... and {refused - show} more (--refusals FILE for all)", err=True)
    if report.warnings:
        click.echo(
            f"  warned: {len(report.warnings)} (stored; a reported claim's quote does not name "
            "its asserter)"
        )
    for warning in report.warnings[: max(show, 0)]:
        click.echo(f"  warning: {warning}", err=True)
    if len(report.warnings) > show > 0:
        click.echo(f"  ... and {len(report.warnings) - show} more warnings (--json)", err=True)


@ledger.command("state")
@db_option
@json_option
def state_cmd(db: str | None, as_json: bool) -> None:
    """How much the ledger holds, and how much of it has been audited."""
    state = _read(db, lambda store: store.state())
    if as_json:
        _echo_json(state)
        return
    click.echo(f"{state['claims']:,} claims")
    click.echo(f"  {state['supported']:,} supported by their own span")
    click.echo(f"  {state['refuted']:,} refuted — the span does not establish the claim")
    click.echo(f"  {state['unaudited']:,} not yet judged — which is not the same as fine")
    if state["modality"]:
        click.echo("modality: " + ", ".join(f"{n:,} {m}" for m, n in state["modality"].items()))
    if state["tier"]:
        from groundswell.shared.ledger.models import EVIDENCE_TIERS

        # Tightest first, as the ladder goes (the locator's three, then verification's two).
        order = {t: i for i, t in enumerate(EVIDENCE_TIERS)}
        tiers = sorted(state["tier"].items(), key=lambda item: (order.get(item[0], 99), item[0]))
        click.echo("located: " + ", ".join(f"{n:,} {t}" for t, n in tiers))
    click.echo(
        f"{state['documents']:,} documents · {state['entities']:,} entities · "
        f"{state['evidence']:,} evidence spans"
    )
    for name, n in state["vocabularies"].items():
        click.echo(f"vocabulary {name}: {n} relations")
    click.echo(f"schema revision {state['revision']} ({state['backend']})")
    if state["builds_pending"]:
        click.echo(
            f"{state['builds_pending']} indexes and keys of a bulk load still to make: queries "
            "answer alike, slower (groundswell ledger migrate makes them)"
        )


@ledger.command("vocab")
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--check", is_flag=True, help="Only check FILE; exit 1 when it is not usable.")
@db_option
@json_option
def vocab_cmd(file: str | None, check: bool, db: str | None, as_json: bool) -> None:
    """Print FILE (a vocabulary) as prompt text, as `xrad vocab` does; --check only checks it.
    Without FILE, list the vocabularies stored in the ledger."""
    if file is None:
        if check:
            raise click.UsageError("--check needs a FILE")
        vocabs = _read(db, lambda store: store.vocabularies())
        if as_json:
            _echo_json(vocabs)
            return
        if not vocabs:
            click.echo("no vocabulary stored — import claims with --vocab, or a corpus with one")
        for v in vocabs:
            click.echo(f"{v['name']}  {len(v['relations'])} relations  {v['digest'][:19]}")
            for name, spec in v["relations"].items():
                sig = f"{'|'.join(spec['subject']) or 'any'} -> {'|'.join(spec['object']) or 'any'}"
                click.echo(f"  {name}  ({sig})")
        return
    from groundswell.shared.ledger.vocab import VocabularyError, read_vocabulary

    try:
        vocabulary = read_vocabulary(file)
    except VocabularyError as exc:
        if check:
            click.echo(f"{exc}", err=True)
            sys.exit(1)
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({**vocabulary.as_dict(), "digest": vocabulary.digest}, indent=2))
    elif check:
        click.echo(
            f"{file}: vocabulary {vocabulary.name}: {len(vocabulary.relations)} relations, "
            f"{len(vocabulary.entity_types)} entity types — usable"
        )
    else:
        click.echo(vocabulary.prompt_fragment())


# -- queries: disagreements, path, search, resolve ------------------------------------------

limit_help = "Rows per page; the footer gives the --cursor of the next page."
cursor_option = click.option(
    "--cursor", default=None, metavar="CURSOR", help="Continue from a previous page."
)


def _shown_option(flag: str, dest: str, what: str):
    """An option bounding what an objects or facts row shows; unset, ``queries`` decides."""
    return click.option(
        flag,
        dest,
        default=None,
        type=click.IntRange(1, 1000),
        help=f"objects and facts: {what}; all are counted.",
    )


def _next_page(page, command: str) -> None:
    if page.next_cursor:
        click.echo(f"more: groundswell ledger {command} --cursor {page.next_cursor}")


def _side(claim: dict) -> str:
    where = f"{claim['document_id']}[{claim['start']}:{claim['end']}]"
    denied = ", denied" if claim["polarity"] == "denied" else ""
    return f"{claim['asserter']} ({claim['modality']}{denied}) {where}"


@ledger.command("disagreements")
@db_option
@click.option(
    "--kind",
    type=click.Choice(["contradiction", "objects", "facts"]),
    default="contradiction",
    show_default=True,
    help="contradiction: one triple affirmed and denied or rejected (xrad's); objects: "
    "different objects for one subject and relation; facts: admitted facts with different "
    "values for one entity, field and key.",
)
@click.option(
    "--subject",
    default=None,
    help="Only about this entity (a label, any case, or an entity id; for facts: the entity "
    "the document describes).",
)
@click.option("--relation", default=None, help="Only this relation (for facts: this field).")
@click.option(
    "--resolved", is_flag=True, help="Entities that `resolve` grouped are one (not for facts)."
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10000))
@_shown_option("--sides", "max_sides", "the sides a row shows, the best supported (20)")
@_shown_option("--claims", "max_claims", "the claims each side shows (10)")
@cursor_option
@json_option
def disagreements_cmd(
    db, kind, subject, relation, resolved, limit, max_sides, max_claims, cursor, as_json
) -> None:
    """Where sources contradict each other, kept side by side."""
    from groundswell.shared.ledger.queries import MAX_CLAIMS, MAX_SIDES, BadCursor, disagreements

    try:
        page = _read(
            db,
            lambda s: disagreements(
                s,
                kind,
                subject=subject,
                relation=relation,
                resolved=resolved,
                cursor=cursor,
                limit=limit,
                max_sides=max_sides or MAX_SIDES,
                max_claims=max_claims or MAX_CLAIMS,
            ),
        )
    except BadCursor as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        _echo_json(page.as_dict())
        return
    if not page.items:
        click.echo("no disagreements" + (" on this page" if cursor else ""))
        return
    for row in page.items:
        if kind == "contradiction":
            a, b = row["sides"]
            click.echo(f"{row['subject']}  {row['relation']}  {row['object']}")
            click.echo(f"    {_side(a)}\n  vs {_side(b)}")
            continue
        what = row["relation"] if kind == "objects" else f"{row['field']}[{row['key']}]"
        click.echo(f"{row['subject']}  {what}")
        for side in row["sides"]:
            value = side["object"] if kind == "objects" else json.dumps(side["value"])
            unit = f" {side['unit']}" if side.get("unit") else ""
            click.echo(f"  = {value}{unit}")
            for claim in side["claims"]:
                click.echo(f"      {_side(claim)}")
            if side["claims_total"] > len(side["claims"]):
                click.echo(f"      ... {side['claims_total'] - len(side['claims'])} more claims")
        if row["sides_total"] > len(row["sides"]):
            click.echo(f"  ... {row['sides_total'] - len(row['sides'])} more sides")
    click.echo("a graph of edges cannot hold these — one would have overwritten the other")
    again = [("--kind", kind), ("--subject", subject), ("--relation", relation)]
    again += [("--limit", str(limit))] if limit != 20 else []
    again += [("--sides", str(max_sides))] if max_sides else []
    again += [("--claims", str(max_claims))] if max_claims else []
    words = [f"{flag} {shlex.quote(v)}" for flag, v in again if v and v != "contradiction"]
    _next_page(page, " ".join(["disagreements", *words, *(["--resolved"] * resolved)]))


@ledger.command("path")
@click.argument("start")
@click.argument("goal")
@db_option
@click.option(
    "--modality",
    multiple=True,
    help="Walk only claims of this modality (repeatable). Without it, every claim that "
    "affirms is walked (not denials or rejections). A denial is never walked.",
)
@click.option("--relation", "relations", multiple=True, help="Walk only this relation.")
@click.option("--max-hops", default=8, show_default=True, type=click.IntRange(1, 32))
@click.option(
    "--budget",
    type=click.IntRange(1),
    default=None,
    help="Claims the search may read before it stops (default: GROUNDSWELL_LEDGER_PATH_BUDGET).",
)
@json_option
def path_cmd(start, goal, db, modality, relations, max_hops, budget, as_json) -> None:
    """The chain of claims linking two entities, with modality on every hop (exit 1 when
    there is none, or when the search stopped at its budget)."""
    from groundswell.shared.ledger.folding import search_words
    from groundswell.shared.ledger.path import path
    from groundswell.shared.ledger.search import excerpt

    result = _read(
        db,
        lambda s: path(
            s,
            start,
            goal,
            modality=modality,
            relations=relations,
            max_hops=max_hops,
            budget=budget,
        ),
    )
    if as_json:
        _echo_json(result.as_dict())
        if not result.found:
            sys.exit(1)
        return
    if result.stopped:
        click.echo(f"{start} to {goal}: {result.reason}")
        sys.exit(1)
    if not result.found:
        click.echo(f"no chain from {start} to {goal}: {result.reason}")
        sys.exit(1)
    if not result.hops:
        click.echo(f"{start} and {goal} are the same entity")
        return
    for n, hop in enumerate(result.hops, start=1):
        mark = {True: "✓", False: "✗", None: " "}[hop["verified"]]
        arrow = (
            f"{hop['from']} --{hop['relation']}--> {hop['to']}"
            if hop["direction"] == "forward"
            else f"{hop['from']} <--{hop['relation']}-- {hop['to']}"
        )
        kind = "" if hop["modality"] == "assertion" else f" ({hop['modality']})"
        click.echo(f"  {n}. {mark} {arrow}{kind}")
        click.echo(f"       {hop['asserter']}  {hop['document_id']}[{hop['start']}:{hop['end']}]")
        ends = search_words(f"{hop['from']} {hop['to']}")
        click.echo(f"       {excerpt(hop['quote'], ends)}")
    summary = result.as_dict()
    click.echo(
        f"\n  {summary['length']} hops · {summary['asserted']} asserted · "
        f"{summary['reported_or_hedged']} reported or hedged"
    )
    if not modality:
        click.echo("  --modality assertion asks whether it survives without the hearsay")


@ledger.command("search")
@click.argument("query")
@db_option
@click.option("--limit", default=15, show_default=True, type=click.IntRange(1, 10000))
@cursor_option
@json_option
def search_cmd(query, db, limit, cursor, as_json) -> None:
    """Full-text over the evidence quotes, stemmed, best first."""
    from groundswell.shared.ledger.queries import BadCursor
    from groundswell.shared.ledger.search import excerpt, search, terms

    try:
        page = _read(db, lambda s: search(s, query, cursor=cursor, limit=limit))
    except (BadCursor, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        _echo_json(page.as_dict())
        return
    for hit in page.items:
        click.echo(f"  {hit['relation']} {hit['modality']} · {hit['asserter']}")
        click.echo(f"   {excerpt(hit['quote'], terms(query))}")
        click.echo(f"   {hit['document_id']}[{hit['start']}:{hit['end']}]  {hit['claim_id']}")
    click.echo(f"{len(page.items)} results.")
    _next_page(page, f"search {json.dumps(query)}")


@ledger.command("resolve")
@db_option
@click.option("--show", default=10, show_default=True, help="How many held questions to print.")
@click.option("--dry-run", is_flag=True, help="Say what resolving would do; write nothing.")
@json_option
def resolve_cmd(db, show, dry_run, as_json) -> None:
    """Group entities that name the same thing, and report the merges it refused."""
    from groundswell.shared.ledger.resolve import resolve
    from groundswell.shared.ledger.review import questions

    result = _read(db, lambda s: resolve(s, write=not dry_run))
    if as_json:
        _echo_json(result.as_dict(show=None))
        return
    if not result.entities:
        click.echo("no entities stored — import claims first")
        sys.exit(1)
    click.echo(f"{result.entities} entities -> {len(result.groups)} groups")
    merged = [g for g in result.groups if len(g.members) > 1]
    for group in merged[:show]:
        others = sorted({m[1] for m in group.members})
        click.echo(f"  {group.label}  <- {', '.join(others)}")
    if result.applied:
        a = result.applied
        click.echo(
            f"decisions: {a['accept']} accepted · {a['reject']} rejected · {a['defer']} deferred"
        )
    if not result.held:
        return
    asked = questions(result.held)  # one per question id, as review lists them
    click.echo(f"\n{len(asked)} merges refused, ranked by what the answer moves:")
    for held in asked[:show]:
        deferred = "  (deferred)" if held.status == "deferred" else ""
        click.echo(f"  {held.weight:4d}  {held.label} into {held.into!r}{deferred}")
        click.echo(f"        {held.reason}")
    click.echo("answer them: groundswell ledger review --emit FILE --by WHO")
