"""`groundswell ledger review`: the merges `resolve` held, weightiest first, and answering them
(:mod:`groundswell.shared.ledger.review`).

The options and outputs follow xrad 0.4.0's ``xrad review`` (``--emit``, ``--apply``, ``--by``,
``--top``; ``N merges refused · M already decided``, ``N questions -> FILE``, ``N problems —
nothing written``, ``N decisions recorded (...)``), with the files named by the options
(``--emit FILE``, ``--apply FILE``) instead of ``--file``, each problem as
``FILE:LINE:FIELD: message``, and answers that take effect at the next ``resolve``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import click

from groundswell.shared.cli.ledger import _echo_json, _open, _read, db_option, json_option, ledger
from groundswell.shared.cli.ledger_export import _atomic

HINT = (
    "weight = claims the answer moves. Answer them: groundswell ledger review --emit FILE --by WHO"
)


@ledger.command("review")
@db_option
@click.option(
    "--emit",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write the questions (the --top weightiest) here as a decisions file to fill in.",
)
@click.option(
    "--by", metavar="WHO", help="Who is answering (with --emit): a decision needs an asserter."
)
@click.option(
    "--apply",
    "apply_file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Read the answers in FILE back: every problem is listed, and nothing is written if "
    "there is one.",
)
@click.option(
    "--top", default=20, show_default=True, type=click.IntRange(1), help="Questions shown."
)
@json_option
def review_cmd(
    db: str | None,
    emit: str | None,
    by: str | None,
    apply_file: str | None,
    top: int,
    as_json: bool,
) -> None:
    """The merges `resolve` refused to make, weightiest first, and how to answer them:
    --emit FILE --by WHO writes them as a file (verdict accept | reject | defer, and a
    reason), --apply FILE reads the answers back; the next `resolve` obeys them."""
    if emit and apply_file:
        raise click.UsageError("--emit or --apply, not both")
    if emit and not (by or "").strip():
        raise click.UsageError("--by is required — a decision needs an asserter, like every "
                               "other claim here")  # fmt: skip
    if by and not emit:
        raise click.UsageError("--by goes with --emit (an answer names its own `by`)")
    if apply_file:
        _apply(db, Path(apply_file), as_json)
    elif emit:
        _emit(db, Path(emit), by or "", top, as_json)
    else:
        _list(db, top, as_json)


def _list(db: str | None, top: int, as_json: bool) -> None:
    from groundswell.shared.ledger import review as rv

    def read(store):
        return rv.listed(store, limit=top), rv.queue(store)

    page, counts = _read(db, read)
    if as_json:
        _echo_json({"items": page.items, **counts})
        return
    waiting = counts["open"] + counts["deferred"]
    decided = f" · {counts['decided']} already decided" if counts["decided"] else ""
    if not waiting:
        click.echo("nothing queued" + decided)
        return
    deferred = f" ({counts['deferred']} deferred)" if counts["deferred"] else ""
    click.echo(f"{waiting} merges refused{deferred}{decided}\n")
    for q in page.items:
        click.echo(f"  {q['weight']:4d}  {q['label']} into {q['into']!r}  {q['id']}")
        click.echo(f"        {q['reason']}")
        for other in q["also"]:
            click.echo(f"        also held against {other['into']!r}: {other['reason']}")
        if q["earlier"]:
            e = q["earlier"]
            state = "deferred" if q["status"] == "deferred" else "open again (its target moved)"
            click.echo(
                f"        {state}: {e['verdict']} by {e['by']} on {e['date']}: {e['reason']}"
            )
    if waiting > len(page.items):
        click.echo(f"  ... and {waiting - len(page.items)} more (--top N)")
    click.echo(HINT)


def _emit(db: str | None, path: Path, by: str, top: int, as_json: bool) -> None:
    from groundswell.shared.ledger import review as rv

    page = _read(db, lambda store: rv.listed(store, limit=top))
    with _atomic(path) as fh:
        fh.writelines(rv.template(page.items, by=by.strip(), today=dt.date.today()))
    if as_json:
        _echo_json({"questions": len(page.items), "file": str(path)})
        return
    click.echo(f"{len(page.items)} questions -> {path}")
    click.echo(
        "fill in `verdict` (accept | reject | defer) and `reason`, then: "
        f"groundswell ledger review --apply {path}"
    )


def _apply(db: str | None, path: Path, as_json: bool) -> None:
    from groundswell.shared.ledger import review as rv

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{path}: not UTF-8: {exc}") from None
    store = _open(db)
    try:
        try:
            answers = rv.load(store, *rv.read_lines(lines))
        except rv.DecisionsError as exc:
            if as_json:
                _echo_json({"problems": [p.as_dict() for p in exc.problems]})
            else:
                click.echo(f"{len(exc.problems)} problems — nothing written", err=True)
                for problem in exc.problems:
                    click.echo(f"  {problem.located(str(path))}", err=True)
            sys.exit(1)
        if not answers:
            click.echo("every verdict is blank — nothing written", err=True)
            sys.exit(1)
        stats = rv.save(store, answers, str(path))
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps({"recorded": len(answers), **stats}))
        return
    click.echo(
        f"{len(answers)} decisions recorded ({stats['new']} new, {stats['changed']} changed, "
        f"{stats['unchanged']} unchanged)"
    )
    click.echo("run `groundswell ledger resolve` for them to take effect")
