"""Answers a reviewer needs beyond one value (in process: FastAPI's TestClient over a real
Redis, a run of the sample corpus whose outlook field takes a range): a range correction
("approximately 6%–7%") stored as groundgate's answer format, a correction whose value item
quotes the document's words, and "not in the document" with a note kept beside the answer
and shown on the task page."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.review.store import RunReview
from groundswell.shared.settings import Settings, hash_api_key
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

RITA = "gs_rita_reviews_ranges"
FIELD = "revenue_growth_outlook_pct"


def ranged_corpus(tmp_path) -> Path:
    """The sample corpus, its outlook field taking a range."""
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    schema = json.loads((corpus / "schema.json").read_text())
    schema["fields"][FIELD]["comparator"] = "range"
    (corpus / "schema.json").write_text(json.dumps(schema))
    return corpus


@pytest.fixture
def site(service_settings, tmp_path):
    corpus = ranged_corpus(tmp_path)
    settings = Settings(
        **{
            **service_settings,
            "api_key_hashes": f"rita:runs+review:{hash_api_key(RITA)}",
            "session_secret": "a-test-session-secret",
        }
    )
    service, record = drive_run(settings, corpus=str(corpus))
    client = TestClient(create_app(settings), follow_redirects=False)
    assert client.post("/review/sign-in", data={"key": RITA}).status_code == 303
    review = RunReview(service, record)
    row = next(r for _, r in review.store.rows(review.manifest()) if r["field"] == FIELD)
    return client, row


def test_a_range_correction_and_a_note(site):
    client, row = site
    page = client.get(f"/review/tasks/{row['task']}").text
    # The field takes a range: the correction form offers one, quoting the document.
    assert 'id="correct-qualifier" data-comparator="range"' in page and 'id="correct-to"' in page
    assert re.search(r'id="correct-quote"[^>]*value="[^"]*6', page)
    csrf = re.search(r'data-csrf="([^"]+)"', page).group(1)
    headers = {"X-CSRF-Token": csrf}
    candidate = {
        "id": "review-range",
        "field": FIELD,
        "value": "6",
        "unit": "%",
        "evidence": {"source": "document", "role": "value", "text": "6%–7%"},
    }
    body = {"verdict": "correct", "candidate": candidate, "codes_kept": []}
    saved = client.post(f"/v1/review/tasks/{row['task']}/answers", json=body, headers=headers)
    assert saved.status_code == 201, saved.text
    answer = saved.json()["answer"]
    assert answer["format"] == "answer@1" and answer["verdict"] == "correct"
    assert answer["candidate"] == {**candidate, "proposer": "person:rita"}
    assert set(answer) == {
        "format", "task", "reviewer", "verdict", "decision", "candidate", "codes_kept",
        "statements", "nodes", "reason_seen", "keys", "ms", "time",
    }  # fmt: skip

    # Not in the document, with a note: the answer is answer@1, the note kept beside it.
    note = "the filing gives only a range for the year"
    body = {"verdict": "not_in_document", "note": note}
    saved = client.post(f"/v1/review/tasks/{row['task']}/answers", json=body, headers=headers)
    assert saved.status_code == 201, saved.text
    assert "note" not in saved.json()["answer"]
    shown = client.get(f"/v1/review/tasks/{row['task']}").json()
    assert [(n["reviewer"], n["note"]) for n in shown["notes"]] == [("rita", note)]
    page = client.get(f"/review/tasks/{row['task']}").text
    assert 'id="notes"' in page and note in page
    too_long = {"verdict": "unsure", "note": "x" * 2001}
    refused = client.post(f"/v1/review/tasks/{row['task']}/answers", json=too_long, headers=headers)
    assert refused.status_code == 422
