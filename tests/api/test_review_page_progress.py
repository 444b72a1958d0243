"""The review page's queue and task views on a finished run of the sample corpus, in process
(FastAPI's TestClient over a real Redis): each queue row shows its candidate values, both
pages count the run's and the filter's answered, open and disputed tasks, an answer saved
is confirmed on the next page, and its undo is a new answer that supersedes it."""

from __future__ import annotations

import html
import json
import re

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.shared.review.store import RunReview
from groundswell.shared.settings import Settings, hash_api_key
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

RITA = "gs_rita_reviews_and_runs"


@pytest.fixture
def site(service_settings):
    settings = Settings(
        **{
            **service_settings,
            "api_key_hashes": f"rita:runs+review:{hash_api_key(RITA)}",
            "session_secret": "a-test-session-secret",
        }
    )
    service, record = drive_run(settings)
    client = TestClient(create_app(settings), follow_redirects=False)
    assert client.post("/review/sign-in", data={"key": RITA}).status_code == 303
    return client, record.id, RunReview(service, record)


def _counts(page: str, part: str) -> tuple[int, int, int]:
    found = re.search(
        rf'id="progress-{part}">[^<]*<b class="answered">(\d+)</b> answered, '
        r'<b class="open">(\d+)</b> open, <b class="disputed">(\d+)</b> disputed',
        page,
    )
    assert found, page
    return tuple(int(n) for n in found.groups())


def _answer(client: TestClient, csrf: str, task: str, body: dict):
    return client.post(
        f"/v1/review/tasks/{task}/answers", json=body, headers={"X-CSRF-Token": csrf}
    )


def test_the_queue_shows_values_and_progress_and_an_answer_can_be_undone(site):
    client, run_id, review = site
    rows = [row for _, row in review.store.rows(review.manifest())]
    page = client.get("/review", params={"run": run_id})
    assert page.status_code == 200
    text = page.text
    assert _counts(text, "run") == (0, len(rows), 0) and 'id="progress-filter"' not in text
    # Each row shows its task's candidate values (the numbering of the keys that choose them).
    for row in rows[:5]:
        task = review.store.task(row["task"])["task"]
        cells = text[text.index(row["task"]) :].split("</tr>")[0]
        for choice in task["choices"]:
            assert f"<b>{html.escape(str(choice['value']))}</b>" in cells, cells
    csrf = re.search(r'data-csrf="([^"]+)"', text).group(1)

    # A filter counts its own tasks beside the run's.
    field = rows[0]["field"]
    in_field = [r for r in rows if r["field"] == field]
    first = in_field[0]["task"]
    assert _answer(client, csrf, first, {"verdict": "not_in_document"}).status_code == 201
    page = client.get("/review", params={"run": run_id, "field": field}).text
    assert _counts(page, "run") == (1, len(rows) - 1, 0)
    assert _counts(page, "filter") == (1, len(in_field) - 1, 0)

    # The next page confirms the answer, and offers its undo: "unsure", a new answer.
    shown = client.get(f"/review/tasks/{rows[-1]['task']}", params={"saved": first}).text
    assert 'id="saved"' in shown and "not in the document" in shown
    assert _counts(shown, "run") == (1, len(rows) - 1, 0)
    undo = html.unescape(re.search(r'id="undo"[^>]*data-answer="([^"]+)"', shown).group(1))
    assert undo == '{"verdict": "unsure"}'
    # A second answer's undo gives the first again.
    assert _answer(client, csrf, first, {"verdict": "unsure"}).status_code == 201
    shown = client.get(f"/review/tasks/{first}", params={"saved": first}).text
    undo = html.unescape(re.search(r'id="undo"[^>]*data-answer="([^"]+)"', shown).group(1))
    assert '"verdict": "not_in_document"' in undo and '"reviewer"' not in undo
    assert _answer(client, csrf, first, json.loads(undo)).status_code == 201
    mine = client.get(f"/v1/review/tasks/{first}/answers", params={"reviewer": "rita"})
    assert [a["verdict"] for a in mine.json()["items"]] == [
        "not_in_document",
        "unsure",
        "not_in_document",
    ]
    # Without an answer of the reviewer there is nothing to confirm.
    other = client.get(f"/review/tasks/{first}", params={"saved": rows[-1]["task"]}).text
    assert 'id="saved"' not in other
