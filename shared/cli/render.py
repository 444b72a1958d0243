"""Summary tables for the terminal (rich), shared by run, demo and summary."""

from __future__ import annotations

from typing import Any

from rich.columns import Columns
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table

from groundswell.shared.summary import (
    OUTCOMES,
    REPAIR_ACTIONS,
    TIERS,
    VERDICTS,
    code_counts,
    repair_stage_counts,
)
from groundswell.shared.words import counted


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _counts_table(title: str, rows: list[tuple[str, Any]], *extra: str) -> Table:
    table = Table(
        title=title, title_justify="left", show_header=bool(extra), box=None, pad_edge=False
    )
    table.add_column("", style="bold")
    table.add_column("", justify="right")
    for name in extra:
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(*[str(x) for x in row])
    return table


def summary_renderable(summary: dict[str, Any], where: str | None = None) -> Panel:
    counts = summary.get("counts", {})
    rates = summary.get("rates", {})
    policy = summary.get("policy") or {}
    parts: list[Any] = []

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("run", str(summary.get("run_id") or "(in process)"))
    head.add_row("state", str(summary.get("state", "–")))
    head.add_row("corpus", str(summary.get("corpus")))
    head.add_row(
        "policy",
        f"{policy.get('ref')}  verify {policy.get('verify_fingerprint')}  admit {policy.get('admit_fingerprint')}",
    )
    head.add_row("documents", f"{summary.get('documents', 0)}  ({summary.get('bytes', 0):,} bytes)")
    units = summary.get("units", {})
    head.add_row(
        "units",
        "  ".join(
            f"{kind}: {row.get('computed', 0)} computed, {row.get('cached', 0)} cached, {row.get('failed', 0)} failed"
            for kind, row in units.items()
        ),
    )
    parts.append(head)

    claims = counts.get("claims", 0)
    if claims:
        table = Table(title=f"Claims verified: {claims}", title_justify="left", box=None)
        table.add_column("tier")
        table.add_column("claims", justify="right")
        table.add_column("located through tier", justify="right")
        through = rates.get("claims_located_through_tier", {})
        for tier in (*TIERS, "none"):
            n = counts.get(f"claims.tier.{tier}", 0)
            table.add_row(tier, str(n), _pct(through.get(tier)) if tier != "none" else "")
        verdicts = Table(title="by verdict", title_justify="left", box=None)
        verdicts.add_column("verdict")
        verdicts.add_column("claims", justify="right")
        for verdict in VERDICTS:
            verdicts.add_row(verdict, str(counts.get(f"claims.verdict.{verdict}", 0)))
        verdicts.add_row(
            "[bold]accepted",
            f"[bold]{counts.get('claims.accepted', 0)}  ({_pct(rates.get('claims_accepted'))})",
        )
        parts.append(Columns([table, verdicts], padding=(0, 4)))

    candidates = counts.get("candidates", 0)
    if candidates:
        table = Table(title=f"Candidates decided: {candidates}", title_justify="left", box=None)
        table.add_column("outcome")
        table.add_column("candidates", justify="right")
        table.add_column("share", justify="right")
        for outcome in OUTCOMES:
            table.add_row(
                outcome,
                str(counts.get(f"candidates.outcome.{outcome}", 0)),
                _pct(rates.get("candidates", {}).get(outcome)),
            )
        code_table = Table(title="codes", title_justify="left", box=None)
        code_table.add_column("code")
        code_table.add_column("count", justify="right")
        for code, n in code_counts(counts):
            code_table.add_row(code, str(n))
        parts.append(Columns([table, code_table], padding=(0, 4)))

    repairs = counts.get("repairs", 0)
    if repairs:
        parts.append(_repairs_columns(counts, rates, repairs))

    if counts.get("claims.labelled") or counts.get("candidates.labelled"):
        gold = Table(title="Against gold labels", title_justify="left", box=None)
        gold.add_column("")
        gold.add_column("", justify="right")
        gold.add_row("right values admitted", str(counts.get("candidates.right_admitted", 0)))
        gold.add_row("right values to review", str(counts.get("candidates.right_reviewed", 0)))
        gold.add_row(
            "[red]escapes (wrong values admitted)",
            f"[red]{counts.get('candidates.escapes', 0)}[/]  of {counts.get('candidates.labelled_wrong', 0)} wrong ({_pct(rates.get('candidates_escape_rate'))})",
        )
        gold.add_row("wrong values caught", str(counts.get("candidates.caught", 0)))
        gold.add_row("reviews (needs_verification)", str(counts.get("candidates.reviews", 0)))
        gold.add_row("false rejections", str(counts.get("candidates.false_rejections", 0)))
        gold.add_row(
            "[red]fabricated quotations accepted",
            f"[red]{counts.get('claims.escapes', 0)}[/]  of {counts.get('claims.labelled_fabricated', 0)}",
        )
        gold.add_row("genuine quotations refused", str(counts.get("claims.refused_genuine", 0)))
        if repairs:
            gold.add_row(
                "[red]wrong repairs (kept, labelled not genuine)",
                f"[red]{counts.get('repairs.wrong', 0)}[/]  ({_pct(rates.get('wrong_repair_rate'))}"
                " of labelled repairs)",
            )
        parts.append(gold)

    if summary.get("producers"):
        parts.append(producers_table(summary["producers"]))

    errors = summary.get("errors", [])
    if summary.get("errors_total"):
        table = Table(
            title=f"Input errors: {summary['errors_total']}", title_justify="left", box=None
        )
        table.add_column("where")
        table.add_column("field")
        table.add_column("message")
        shown = errors[:MAX_ERROR_ROWS]
        for error in shown:
            place = error.get("file", "") + (f":{error['line']}" if error.get("line") else "")
            table.add_row(place, error.get("field") or "", error.get("message", ""))
        parts.append(table)
        hidden = summary["errors_total"] - len(shown)
        if hidden > 0:
            parts.append(
                f"... and {hidden} more input errors (the first {len(errors)} are in the "
                "summary's JSON, every one in the run's index rows)"
            )
    ignored_docs = counts.get("ignored.documents_without_units", 0)
    ignored_files = counts.get("ignored.files", 0)
    if ignored_docs or ignored_files:
        parts.append(
            f"[yellow]ignored: {counted(ignored_docs, 'document')} without claims or candidates, "
            f"{counted(ignored_files, 'file')} outside the corpus layout"
        )
    if summary.get("error"):
        parts.append(f"[red]run failed: {summary['error']}")

    index = summary.get("index", {})
    footer = f"index {index.get('manifest')}  merkle root {str(index.get('merkle_root'))[:16]}…"
    if where:
        footer = f"receipts and run files under {where}\n" + footer
    parts.append(footer)
    return Panel(Group(*parts), title="groundswell summary", expand=False)


MAX_ERROR_ROWS = 20


def producers_table(producers: dict[str, Any]) -> Table:
    """The summary's ``producers``: per producer (largest first, ``other`` last) its volume,
    grounding rate, escapes, review load and producer/verifier disagreement."""
    table = Table(title="By producer", title_justify="left", box=None)
    for name in ("producer", "claims", "grounded", "cand.", "review", "rejected"):
        table.add_column(name, justify="left" if name == "producer" else "right")
    table.add_column("escapes (claims / cand.)", justify="right")
    table.add_column("disagree", justify="right")
    for key, entry in producers.items():
        c, r = entry.get("counts", {}), entry.get("rates", {})
        table.add_row(
            key,
            str(c.get("claims", 0)),
            _pct(r.get("grounding_rate")),
            str(c.get("candidates", 0)),
            _pct(r.get("review_rate")),
            _pct(r.get("rejected_rate")),
            f"{_pct(r.get('claims_escape_rate'))} / {_pct(r.get('candidates_escape_rate'))}",
            _pct(r.get("disagreement_rate")),
        )
    return table


def _repairs_columns(counts: dict[str, Any], rates: dict[str, Any], repairs: int) -> Columns:
    """The repair cascade's actions, and each action by the stage that decided it."""
    table = Table(title=f"Claims through repair: {repairs}", title_justify="left", box=None)
    table.add_column("action")
    table.add_column("claims", justify="right")
    table.add_column("share", justify="right")
    for action in REPAIR_ACTIONS:
        n = counts.get(f"repairs.action.{action}", 0)
        table.add_row(action, str(n), _pct((rates.get("repairs") or {}).get(action)))
    stages = Table(title="by stage", title_justify="left", box=None)
    stages.add_column("action")
    stages.add_column("stage")
    stages.add_column("claims", justify="right")
    for action, stage, n in repair_stage_counts(counts):
        stages.add_row(action, stage, str(n))
    return Columns([table, stages], padding=(0, 4))


def print_summary(
    summary: dict[str, Any], where: str | None = None, console: Console | None = None
) -> None:
    (console or Console()).print(summary_renderable(summary, where))
