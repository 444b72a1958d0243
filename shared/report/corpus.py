"""The page of a corpus: its latest runs and, drawn as bar charts, how its grounding rate,
escape rate and review load moved from run to run and from one policy version to the next.

The numbers are the ones the per-policy summaries and the gauges already hold
(``summary.policy_rates``), read from each run's small catalog entry (``catalog/runs/``),
so the page reads one small object per run it lists, never a receipt or an index; a run
whose entry predates the rates is read from its summary instead.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from groundswell.shared.charts import rate_chart
from groundswell.shared.runs.layout import catalog_key, summary_key
from groundswell.shared.summary import policy_rates

if TYPE_CHECKING:
    from groundswell.shared.results.models import RunSource as RunService
    from groundswell.shared.runs.models import RunRecord
    from groundswell.shared.settings import ApiKey

RUNS_SHOWN = 50  # runs of the corpus a page lists by default, newest first
MOST_RUNS = 200
POLICY_COLOURS = 6  # bars of one policy version share a colour (p0 ... p5, then again)
FINISHED = ("succeeded", "partially_failed")
# (rate, chart title, what it counts): summary.policy_rates' names.
MEASURES = (
    ("grounding_rate", "Grounding rate", "share of claims accepted"),
    ("escape_rate", "Escape rate", "share of labelled-wrong candidates admitted"),
    ("review_rate", "Review load", "share of candidates sent to review"),
)
LABEL_UNITS = 190  # a run id (20261203T144500Z-1a2b3c4d5e) fits at the chart's font


class CorpusNotFound(KeyError):
    """No run of the corpus that the caller may see."""

    def __str__(self) -> str:
        return f"no runs of corpus {self.args[0]}"


def corpus_runs(
    service: RunService, corpus: str, most: int = RUNS_SHOWN, key: ApiKey | None = None
) -> list[dict[str, Any]]:
    """The corpus's latest ``most`` runs, newest first, each with its policy, state and, once
    finished (not a dry run), its rates. CorpusNotFound when there is none the key sees (a
    team's key: another team's corpus is as unknown as one never run)."""
    if key is not None and key.limited and not key.sees(corpus):
        raise CorpusNotFound(corpus)
    rows = [_row(service, record) for record in service.corpus_runs(corpus, most)]
    if not rows:
        raise CorpusNotFound(corpus)
    return rows


def _row(service: RunService, record: RunRecord) -> dict[str, Any]:
    rates = None
    if record.state in FINISHED and not record.dry_run:
        rates = _rates(service, record)
    return {
        "id": record.id,
        "policy": str(record.policy.get("ref") or "?"),
        "state": record.state,
        "dry_run": record.dry_run,
        "created_at": record.created_at,
        "finished_at": record.finished_at,
        "rates": rates,
        "report": f"/v1/runs/{quote(record.id)}/report",
        "review": "/review?" + urlencode({"run": record.id}),
    }


def _rates(service: RunService, record: RunRecord) -> dict[str, Any] | None:
    store = service.store(record.output)
    try:
        entry = json.loads(store.get(catalog_key(record.id, record.created_at)))
        if isinstance(entry, dict) and isinstance(entry.get("rates"), dict):
            return entry["rates"]
    except (KeyError, ValueError):
        pass  # an entry written before rates were kept, or lost: the summary has them
    try:
        summary = json.loads(store.get(summary_key(record.id)))
    except (KeyError, ValueError):
        return None
    return policy_rates(summary)


def _policy_order(ref: str) -> tuple[str, int, str]:
    name, _, version = ref.partition("@")
    return (name, int(version) if re.fullmatch(r"\d+", version) else -1, ref)


def corpus_view(corpus: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the corpus page shows: the runs (newest first), the latest finished run of each
    policy version, and a chart of each measure by run (oldest at the top, as time runs)
    and by policy version."""
    policies = sorted({r["policy"] for r in rows}, key=_policy_order)
    colour = {ref: f"p{n % POLICY_COLOURS}" for n, ref in enumerate(policies)}
    finished = [r for r in rows if r["rates"] is not None]
    latest: dict[str, dict[str, Any]] = {}
    for r in finished:  # newest first: the first of a version is its latest
        latest.setdefault(r["policy"], r)
    by_policy = [latest[ref] for ref in policies if ref in latest]
    charts = []
    for rate, title, counts in MEASURES:
        charts.append(
            {
                "measure": rate,
                "title": title,
                "counts": counts,
                "by_run": rate_chart(
                    f"{rate}-runs",
                    f"{title} by run",
                    [(r["id"], r["rates"].get(rate), colour[r["policy"]]) for r in finished][::-1],
                    most=MOST_RUNS,
                    href={r["id"]: r["report"] for r in finished},
                    labels=LABEL_UNITS,
                ),
                "by_policy": rate_chart(
                    f"{rate}-policies",
                    f"{title} by policy version (its latest run)",
                    [(r["policy"], r["rates"].get(rate), colour[r["policy"]]) for r in by_policy],
                    most=MOST_RUNS,
                    href={r["policy"]: r["report"] for r in by_policy},
                ),
            }
        )
    return {
        "corpus": corpus,
        "runs": [{**r, "colour": colour[r["policy"]]} for r in rows],
        "policies": [
            {"ref": ref, "colour": colour[ref], "latest": latest.get(ref)} for ref in policies
        ],
        "charts": charts,
    }


def render_corpus(corpus: str, rows: list[dict[str, Any]]) -> str:
    from groundswell.shared.report.render import template

    return "".join(template("corpus_report.html").generate(**corpus_view(corpus, rows)))


def corpus_report(
    service: RunService, corpus: str, most: int = RUNS_SHOWN, key: ApiKey | None = None
) -> str:
    """The HTML page of a corpus (CorpusNotFound when the key sees no run of it)."""
    corpus = service.known_corpus(corpus)
    return render_corpus(corpus, corpus_runs(service, corpus, most, key))
