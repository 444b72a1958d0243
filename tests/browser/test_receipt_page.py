"""The single-receipt review page (``groundswell report RECEIPT DOC SCHEMA CANDIDATES``) in a
real headless Chromium: candidates as cards beside the whole document, filtered by outcome
and switched to a dark mode without any script (the page's CSP allows none), each code
explained in words. A screenshot goes to ``.artifacts/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundswell.shared.admit import admit_packet
from tests.shared.test_report_review import _report, _vector, _write

pytestmark = pytest.mark.integration


def test_the_receipt_page_filters_its_cards_by_outcome(chromium, artifacts, tmp_path: Path):
    vector = _vector("19e-references")
    receipt = admit_packet(vector)
    args = _write(tmp_path, vector, receipt)
    out = tmp_path / "review.html"
    assert _report(*args, "-o", str(out)).exit_code == 0
    outcomes = [d["outcome"] for d in receipt["decisions"]]
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(out.as_uri())
    cards = page.locator("article.card")
    assert cards.count() == len(outcomes)
    # Two panes: the cards and, beside them, the whole document with its highlights.
    assert (
        page.locator(".cardpane").bounding_box()["x"] < page.locator(".docpane").bounding_box()["x"]
    )
    assert page.locator(".docpane mark").count() >= 1
    assert page.locator(".card dl.codes dd").count() >= 1  # codes in words
    for outcome in set(outcomes):
        page.click(f'label[for="show-{outcome}"]')
        shown = [c for c in cards.all() if c.is_visible()]
        assert len(shown) == outcomes.count(outcome)
        assert all(f"out-{outcome}" in c.get_attribute("class") for c in shown)
    page.click('label[for="show-all"]')
    assert len([c for c in cards.all() if c.is_visible()]) == len(outcomes)
    light = page.locator(".view").evaluate("e => getComputedStyle(e).backgroundColor")
    page.click('label[for="dark"]')
    dark = page.locator(".view").evaluate("e => getComputedStyle(e).backgroundColor")
    assert light != dark and dark == "rgb(21, 24, 30)"
    page.screenshot(path=artifacts / "receipt-page-dark.png", full_page=True)
    assert not problems, problems
    context.close()
