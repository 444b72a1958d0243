"""A corpus's page in a real headless Chromium, signed in by the review session: from a run
report's corpus link to the corpus's charts (grounding rate, escape rate, review load by run
and by policy version: inline SVG under the report's strict CSP, no script), and from a
bar to its run's report. A screenshot goes to ``.artifacts/``."""

from __future__ import annotations

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.settings import Settings, hash_api_key
from tests.conftest import running_api
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

RITA = "gs_rita_reads_the_corpus"


@pytest.fixture
def corpus_site(service_settings, tmp_path):
    values = {
        **service_settings,
        "api_key_hashes": f"rita:runs+review:{hash_api_key(RITA)}",
        "session_secret": "browser-corpus-secret",
        "allowed_corpora": str(SAMPLE_CORPUS),
    }
    settings = Settings(**values)
    runs = [drive_run(settings, policy=p)[1] for p in ("strict", "default")]
    with running_api(values, tmp_path) as url:
        yield url, [r.id for r in runs]


def test_the_corpus_page_from_a_run_report(chromium, artifacts, corpus_site):
    url, (strict, default) = corpus_site
    context = chromium.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on(
        "console",
        lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.goto(f"{url}/review/sign-in")
    page.fill("#key", RITA)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.goto(f"{url}/v1/runs/{default}/report")  # signed in by the session's cookie
    assert page.locator("#chart-outcomes").is_visible()  # the run report's own charts
    with page.expect_navigation():
        page.click("#corpus-link")
    assert page.url.startswith(f"{url}/v1/corpora/report?corpus=")
    for measure in ("grounding_rate", "escape_rate", "review_rate"):
        runs = page.locator(f"#chart-{measure}-runs g.bar")
        assert [g.get_attribute("data-label") for g in runs.all()] == [strict, default]
        bar = page.locator(f"#chart-{measure}-runs rect.ch-bar").first.bounding_box()
        assert bar and bar["width"] > 0  # drawn, not just present
        policies = page.locator(f"#chart-{measure}-policies g.bar")
        labels = {g.get_attribute("data-label") for g in policies.all()}
        assert labels == {"strict@1", "default@1"}
    # The two policy versions' bars have two colours.
    fills = {
        page.locator(f'#chart-grounding_rate-runs g.bar[data-label="{run}"] rect').evaluate(
            "r => getComputedStyle(r).fill"
        )
        for run in (strict, default)
    }
    assert len(fills) == 2, fills
    page.screenshot(path=artifacts / "corpus-page.png", full_page=True)
    with page.expect_navigation():
        page.locator(f'#chart-grounding_rate-runs g.bar[data-label="{strict}"] a').click()
    assert page.url == f"{url}/v1/runs/{strict}/report"
    assert not problems, problems
    context.close()
