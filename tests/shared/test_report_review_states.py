"""The run report's candidates after review (a run of the sample corpus driven in process over
a real Redis): what was proposed (an invalid value's too: "24.6%" is shown as proposed, not as
its unit alone), the outcome and the label's comparison in the summary's words (a value sent
to review is never "refused"), and each decision's review state with its task's link:
unanswered, answered, disputed, then resolved once the run's answers are resolved."""

from __future__ import annotations

import re

import pytest

from groundswell.shared.report.service import report
from groundswell.shared.review.store import RunReview
from tests.shared.test_review_store import answer, drive_run, settings  # noqa: F401

pytestmark = pytest.mark.integration


def test_the_report_shows_proposed_values_outcomes_and_review_states(settings):  # noqa: F811
    service, record = drive_run(settings)
    review = RunReview(service, record)
    rows = [row for _, row in review.store.rows(review.manifest())]
    page = report(service, record)
    candidates = re.findall(r'<tr class="candidate">.*?</tr>', page, re.S)
    assert candidates and not [c for c in candidates if "refused" in c]
    assert "right value sent to review" in page and ">sent to review</mark>" in page
    # The invalid value as the model proposed it.
    invalid = page[page.index("<code>c03</code>") :].split("</tr>")[0]
    assert "proposed <code>&#34;24.6%&#34;</code>" in invalid and "no valid value" in invalid
    assert re.search(r'class="tag rs-unanswered review-state">unanswered<', page)

    first = rows[0]
    review.store.add_answer(answer(first["task"], "rita", "not_in_document"))
    review.store.add_answer(answer(first["task"], "sam", "unsure", second=1))
    page = report(service, record)
    assert 'class="tag rs-answered review-state">answered<' in page
    review.store.add_answer(answer(first["task"], "sam", "confirm", decision=0, second=2))
    assert 'class="tag rs-disputed review-state">disputed<' in report(service, record)
    review.resolve()
    page = report(service, record)
    resolved = re.findall(r'class="tag rs-resolved review-state">resolved: ([a-z_ ]+)<', page)
    assert resolved, page
    assert f'href="/review/tasks/{first["task"]}"' in page
