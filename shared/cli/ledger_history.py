"""`groundswell ledger history DOC FIELD [KEY]`: a fact's values across runs and policy
versions, as runs with ``--ledger`` loaded them (:mod:`groundswell.shared.ledger.history`)."""

from __future__ import annotations

import json

import click

from groundswell.shared.cli.ledger import _read, db_option, json_option, ledger


@ledger.command("history")
@click.argument("doc_id")
@click.argument("field")
@click.argument("key", required=False)
@db_option
@json_option
def history_cmd(doc_id: str, field: str, key: str | None, db: str | None, as_json: bool) -> None:
    """The values of DOC_ID's FIELD (of KEY) across runs and policy versions, oldest first."""
    from groundswell.shared.ledger.history import fact_history

    rows = _read(db, lambda store: fact_history(store, doc_id, field, key))
    if as_json:
        click.echo(json.dumps({"items": rows}, ensure_ascii=False))
        return
    if not rows:
        click.echo(f"no fact of {doc_id} {field}{' ' + key if key else ''} in the ledger")
        raise SystemExit(1)
    for r in rows:
        value = json.dumps(r["value"], ensure_ascii=False)
        unit = f" {r['unit']}" if r["unit"] else ""
        where = f"  [{r['span']['start']}, {r['span']['end']})" if r["span"] else ""
        keyed = f"[{r['key']}]" if r["key"] else ""
        click.echo(
            f"{r['policy_version']}  run {r['run_id']}  {field}{keyed} = {value}{unit}{where}"
            f"  receipt {r['receipt_digest'][:12]}"
        )
