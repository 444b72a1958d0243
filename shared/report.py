"""An HTML report of a run: the summary, then each document's claims and candidates with
their spans highlighted in the source, the ones that need a person first.

Self-contained (inline CSS, no scripts), so it can be mailed or attached to a ticket.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from groundswell.shared.summary import OUTCOMES, TIERS, VERDICTS

CONTEXT = 90  # characters of source shown around a span

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#1d2330}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d8dce4}
h3{font-size:1rem;margin:1.5rem 0 .4rem} .meta{color:#5b6475} code{font-size:12px}
table{border-collapse:collapse;margin:.4rem 0 1rem} td,th{padding:3px 10px;text-align:left;vertical-align:top}
th{background:#f1f3f7} tr+tr td{border-top:1px solid #eceef3} .num{text-align:right}
.grid{display:flex;gap:2.5rem;flex-wrap:wrap}
.snip{font-family:ui-monospace,monospace;font-size:12.5px;white-space:pre-wrap;color:#4a5160}
mark{padding:0 1px;border-radius:2px;color:#111}
.v-grounded{background:#c9f0cf} .v-grounded_loose{background:#fde6a7} .v-stitched{background:#cfe0fb}
.v-unlocated,.v-degenerate{background:#e4e7ee}
.o-admitted{background:#c9f0cf} .o-needs_verification{background:#fde6a7} .o-rejected{background:#f8c9c9}
.tag{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;background:#eef0f4}
.bad{background:#d93025;color:#fff} .good{background:#1e8e3e;color:#fff}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _snippet(text: str, start: int | None, end: int | None, css: str) -> str:
    if start is None or end is None or not 0 <= start <= end <= len(text):
        return '<span class="snip">(not located in the source)</span>'
    lo, hi = max(0, start - CONTEXT), min(len(text), end + CONTEXT)
    before = ("…" if lo else "") + text[lo:start]
    after = text[end:hi] + ("…" if hi < len(text) else "")
    return (
        f'<span class="snip">{_e(before)}<mark class="{css}">{_e(text[start:end])}</mark>'
        f"{_e(after)}</span>"
    )


def _byte_to_char(text: str) -> Callable[[int], int]:
    data = text.encode("utf-8")
    return lambda b: len(data[:b].decode("utf-8", "ignore"))


def _summary_html(summary: dict[str, Any]) -> str:
    counts, rates = summary.get("counts", {}), summary.get("rates", {})
    through = rates.get("claims_located_through_tier", {})
    tiers = "".join(
        f"<tr><td>{t}</td><td class=num>{counts.get(f'claims.tier.{t}', 0)}</td>"
        f"<td class=num>{_pct(through.get(t))}</td></tr>"
        for t in TIERS
    )
    tiers += (
        f"<tr><td>none</td><td class=num>{counts.get('claims.tier.none', 0)}</td><td></td></tr>"
    )
    verdicts = "".join(
        f"<tr><td><mark class='v-{v}'>{v}</mark></td><td class=num>{counts.get(f'claims.verdict.{v}', 0)}</td></tr>"
        for v in VERDICTS
    )
    outcomes = "".join(
        f"<tr><td><mark class='o-{o}'>{o}</mark></td><td class=num>{counts.get(f'candidates.outcome.{o}', 0)}</td>"
        f"<td class=num>{_pct(rates.get('candidates', {}).get(o))}</td></tr>"
        for o in OUTCOMES
    )
    codes = sorted(
        ((k.split(".", 2)[2], v) for k, v in counts.items() if k.startswith("candidates.code.")),
        key=lambda kv: (-kv[1], kv[0]),
    )
    code_rows = "".join(
        f"<tr><td><code>{_e(c)}</code></td><td class=num>{n}</td></tr>" for c, n in codes
    )
    gold = ""
    if counts.get("candidates.labelled") or counts.get("claims.labelled"):
        rows = [
            ("right values admitted", counts.get("candidates.right_admitted", 0)),
            ("escapes: wrong values admitted", counts.get("candidates.escapes", 0)),
            ("wrong values caught", counts.get("candidates.caught", 0)),
            ("sent to review", counts.get("candidates.reviews", 0)),
            ("false rejections", counts.get("candidates.false_rejections", 0)),
            ("fabricated quotations accepted", counts.get("claims.escapes", 0)),
            ("genuine quotations refused", counts.get("claims.refused_genuine", 0)),
        ]
        gold = (
            "<div><h3>Against gold labels</h3><table>"
            + "".join(f"<tr><td>{name}</td><td class=num>{n}</td></tr>" for name, n in rows)
            + "</table></div>"
        )
    return (
        "<div class=grid>"
        f"<div><h3>Claims by tier ({counts.get('claims', 0)})</h3><table><tr><th>tier</th><th>claims</th>"
        f"<th>located through</th></tr>{tiers}</table></div>"
        f"<div><h3>Verdicts</h3><table>{verdicts}<tr><td><b>accepted</b></td>"
        f"<td class=num><b>{_pct(rates.get('claims_accepted'))}</b></td></tr></table></div>"
        f"<div><h3>Candidates ({counts.get('candidates', 0)})</h3><table>{outcomes}</table></div>"
        f"<div><h3>Codes</h3><table>{code_rows}</table></div>{gold}</div>"
    )


def _label_tag(label: bool | None, ok: bool) -> str:
    if label is None:
        return ""
    if (label and ok) or (not label and not ok):
        return '<span class="tag good">as labelled</span>'
    return (
        '<span class="tag bad">escape</span>'
        if not label
        else '<span class="tag">refused, labelled right</span>'
    )


def _document_html(
    doc_id: str, text: str | None, units: dict[str, dict[str, Any]], labels: dict
) -> str:
    parts = [f'<h3 id="{_e(doc_id)}">{_e(doc_id)}</h3>']
    for unit in units.values():
        for error in unit.get("index", {}).get("errors", []):
            where = error.get("file", "") + (f":{error['line']}" if error.get("line") else "")
            parts.append(
                f'<p><span class="tag bad">error</span> <code>{_e(where)}</code> {_e(error.get("message"))}</p>'
            )
    verify = units.get("verify", {}).get("receipt")
    if verify and text is not None and verify.get("records"):
        rows = []
        gold = labels.get("claims", {})
        for row in verify["records"]:
            record, cert = row["record"], row["certificate"]
            verdict = cert.get("verdict")
            label = gold.get(str(record.get("id"))) if record.get("id") is not None else None
            rows.append(
                f"<tr><td><code>{_e(record.get('id', row.get('line')))}</code></td>"
                f"<td><mark class='v-{_e(verdict)}'>{_e(verdict)}</mark><br><small>{_e(cert.get('tier') or '')}</small></td>"
                f"<td>{_e(record.get('claim'))}<br>{_snippet(text, cert.get('start'), cert.get('end'), 'v-' + str(verdict))}</td>"
                f"<td>{_label_tag(label, bool(cert.get('grounded')))}</td></tr>"
            )
        parts.append(
            "<table><tr><th>claim</th><th>verdict</th><th>quotation and source</th><th></th></tr>"
            + "".join(rows)
            + "</table>"
        )
    admit = units.get("admit", {}).get("receipt")
    if admit and text is not None and admit.get("receipt"):
        to_char = _byte_to_char(text)
        rows = []
        gold = labels.get("candidates", {})
        for decision in admit["receipt"].get("decisions", []):
            outcome = decision.get("outcome")
            span = decision.get("evidence") or {}
            start = (
                to_char(span["start"])
                if "start" in span and decision.get("source") == "document"
                else None
            )
            end = to_char(span["end"]) if start is not None else None
            cid = decision.get("candidate_id")
            label = gold.get(str(cid)) if cid is not None else None
            codes = " ".join(f"<code>{_e(c)}</code>" for c in decision.get("codes", []))
            rows.append(
                f"<tr><td><code>{_e(cid)}</code></td><td>{_e(decision.get('field'))}<br>"
                f"<b>{_e(decision.get('value'))}</b> {_e(decision.get('unit') or '')}</td>"
                f"<td><mark class='o-{_e(outcome)}'>{_e(outcome)}</mark><br>{codes}</td>"
                f"<td>{_snippet(text, start, end, 'o-' + str(outcome))}</td>"
                f"<td>{_label_tag(label, outcome == 'admitted')}</td></tr>"
            )
        parts.append(
            "<table><tr><th>candidate</th><th>field and value</th><th>outcome</th><th>evidence</th><th></th></tr>"
            + "".join(rows)
            + "</table>"
        )
    return "\n".join(parts)


def _interest(units: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """Documents a person should see first: failures, then review and rejections."""
    failed = sum(1 for u in units.values() if u.get("index", {}).get("status") == "failed")
    flagged = 0
    admit = units.get("admit", {}).get("receipt") or {}
    for decision in (admit.get("receipt") or {}).get("decisions", []):
        flagged += decision.get("outcome") != "admitted"
    return (-failed, -flagged)


def render_report(
    summary: dict[str, Any],
    index: list[dict[str, Any]],
    load_receipt: Callable[[str], dict[str, Any] | None],
    load_document: Callable[[str], str | None],
    load_labels: Callable[[str], dict[str, Any]],
    max_documents: int = 50,
    total_documents: int | None = None,
) -> str:
    """``index`` holds the rows of the documents to show (a run's reader picks them from
    its highlights); ``total_documents`` is how many the run has, for the note on the rest."""
    by_doc: dict[str, dict[str, dict[str, Any]]] = {}
    for row in index:
        by_doc.setdefault(row["doc_id"], {})[row["kind"]] = {"index": row}
    for units in by_doc.values():
        for unit in units.values():
            key = unit["index"].get("receipt")
            unit["receipt"] = load_receipt(key) if key else None
    order = sorted(by_doc, key=lambda d: (_interest(by_doc[d]), d))
    shown = order[:max_documents]
    sections = [_document_html(d, load_document(d), by_doc[d], load_labels(d)) for d in shown]
    total = max(total_documents or 0, len(order))
    policy = summary.get("policy") or {}
    more = (
        f"<p class=meta>{total - len(shown)} more documents not shown (--documents).</p>"
        if total > len(shown)
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>groundswell run {_e(summary.get("run_id"))}</title>
<style>{_CSS}</style></head><body>
<h1>groundswell run {_e(summary.get("run_id") or "(in process)")}</h1>
<p class=meta>{_e(summary.get("state", ""))} · corpus <code>{_e(summary.get("corpus"))}</code> ·
policy <b>{_e(policy.get("ref"))}</b> (verify <code>{_e(policy.get("verify_fingerprint"))}</code>,
admit <code>{_e(policy.get("admit_fingerprint"))}</code>) · {summary.get("documents", 0)} documents ·
finished {_e(summary.get("finished_at") or "–")} · Merkle root <code>{_e(str(summary.get("index", {}).get("merkle_root"))[:16])}</code></p>
<h2>Summary</h2>
{_summary_html(summary)}
<h2>Documents</h2>
<p class=meta>Documents with failures and with candidates that need a person come first.</p>
{"".join(sections)}
{more}
</body></html>
"""
