"""The run report's pictures: server-rendered SVG bar charts (no script, nothing fetched) of
claims by tier and by verdict, candidates by outcome and codes by count, each bar as long as
its count is large."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from groundswell.shared.charts import bar_chart
from groundswell.shared.report.render import render_report


def bars(page: str, chart: str) -> dict[str, float]:
    """Each bar's label and number in a page's chart, in the chart's order."""
    at = page.index(f'id="chart-{chart}"')
    figure = page[at : page.index("</figure>", at)]
    return {
        label: float(value)
        for label, value in re.findall(r'data-label="([^"]+)" data-value="([^"]+)"', figure)
    }


def test_the_report_draws_its_summary_as_bar_charts():
    summary = {
        "run_id": "r1",
        "counts": {
            "claims": 6,
            "claims.tier.exact": 4,
            "claims.tier.case": 1,
            "claims.tier.none": 1,
            "claims.verdict.grounded": 5,
            "claims.verdict.unlocated": 1,
            "candidates": 5,
            "candidates.outcome.admitted": 2,
            "candidates.outcome.needs_verification": 2,
            "candidates.outcome.rejected": 1,
            "candidates.code.QUALIFIED_VALUE": 2,
            "candidates.code.TYPE_INVALID": 1,
        },
        "rates": {},
        "policy": {"ref": "default@1"},
    }
    page = render_report(summary, [], lambda k: None, lambda d: None, lambda d: {}, 10)
    assert bars(page, "tiers")["exact"] == 4 and bars(page, "tiers")["none"] == 1
    assert bars(page, "verdicts") == {
        "grounded": 5,
        "grounded_loose": 0,
        "stitched": 0,
        "unlocated": 1,
        "degenerate": 0,
    }
    assert bars(page, "outcomes") == {"admitted": 2, "sent to review": 2, "rejected": 1}
    assert bars(page, "codes") == {"QUALIFIED_VALUE": 2, "TYPE_INVALID": 1}
    assert "<script" not in page and page.count("<svg") >= 4
    HTMLParser().feed(page)


def test_a_bars_length_follows_its_count():
    chart = bar_chart("x", "X", [("a", 10, "c"), ("b", 5, "c"), ("c", 0, "c")])
    assert [b["w"] for b in chart["bars"]] == [240, 120, 0]
    assert bar_chart("x", "X", [("a", 0, "c")]) is None  # nothing to draw
    many = bar_chart("x", "X", [(str(n), n + 1, "c") for n in range(40)])
    assert len(many["bars"]) == 12
