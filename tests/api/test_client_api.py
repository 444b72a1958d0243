"""groundswell.Client against a real uvicorn over a real Redis and moto's S3: every operation
of the app's OpenAPI is called through its Client method and answered by its route, with
typed returns where the API has models."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from click.testing import CliRunner

from groundswell.client import APIError, Client, Run
from groundswell.shared.cli.app import main
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import Settings, hash_api_key
from tests.conftest import API_KEY, running_api
from tests.shared.runs.driving import drive
from tests.test_client import app_operations

pytestmark = pytest.mark.integration
DOC = "brightwater-10q-q3-2025"
WEBHOOK_SECRET = "whsec-client-test"


@pytest.fixture
def finished_runs(service_settings, output_bucket, tmp_path):
    values = {
        **service_settings,
        "storage_url": f"s3://{output_bucket}/out",
        "ledger_url": f"sqlite:///{tmp_path / 'ledger.sqlite'}",
        "api_key_hashes": hash_api_key(API_KEY),
        "allowed_corpora": f"{SAMPLE_CORPUS},s3://followed",
        "stream_webhook_secret": WEBHOOK_SECRET,
    }
    settings = Settings(**values)
    runs = [
        drive(settings, RunSpec(corpus=str(SAMPLE_CORPUS), policy=p, ledger=True))[1]
        for p in ("strict@1", "default@1")
    ]
    assert [r.state for r in runs] == ["succeeded", "succeeded"]
    with running_api(values, tmp_path) as url:
        yield url, [r.id for r in runs]


def _template(path: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(path)) + "$")


def test_every_route_through_the_client(finished_runs, tmp_path):
    url, (run_a, run_b) = finished_runs
    answered: list[tuple[str, str, int]] = []

    def record(response: httpx.Response) -> None:
        answered.append((response.request.method, response.request.url.path, response.status_code))

    with Client(url, API_KEY, timeout=120) as api:
        api.http.event_hooks["response"].append(record)
        assert api.health()["status"] == "ok"
        assert api.ready()["status"]
        # runs
        finished = api.wait(run_b, poll=0.1, timeout=5)
        assert isinstance(finished, Run) and finished.terminal
        listed = api.runs(limit=1)
        assert listed.pagination.total_count == 2 and listed.items[0].id == run_b
        assert [r.id for r in api.iter_runs(limit=1)] == [run_b, run_a]
        queued = api.submit(str(SAMPLE_CORPUS), "default@1", dry_run=True)
        again = api.rerun(run_a, only="all")  # no worker here: both stay queued
        assert again.corpus == str(SAMPLE_CORPUS) and again.policy["ref"] == "strict@1"
        assert api.cancel(queued.id).state == "cancelled" and api.cancel(again.id)
        assert api.summary(run_b)["run_id"] == run_b
        by_producer = api.producers(run_b)
        assert by_producer["run_id"] == run_b and by_producer["producers"] == []  # none declared
        diff = api.diff(run_a, run_b, limit=5)
        assert diff["pagination"]["limit"] == 5
        assert api.report(run_b, documents=2).startswith("<!doctype html")
        corpus_page = api.corpus_report(str(SAMPLE_CORPUS), runs=10)
        assert run_a in corpus_page and 'id="chart-grounding_rate-policies"' in corpus_page
        rows = list(api.receipts(run_b, page_size=3))
        assert len(rows) > 3 and {r.kind for r in rows} >= {"verify", "admit"}
        assert api.receipts_page(run_b, limit=1).has_next_page
        assert api.document_receipts(run_b, DOC).doc_id == DOC
        # review
        tasks = list(api.iter_review_tasks(run_b))
        assert tasks and len(tasks) == api.review_tasks(run_b, limit=1)["tasks"]
        key = next(t["task"] for t in tasks if t["mode"] == "review")
        assert api.answer(key, "unsure")["state"] == "answered"
        assert api.review_task(key)["answers"]
        assert [a["verdict"] for a in api.iter_review_answers(key)] == ["unsure"]
        assert api.review_measures(run_b)
        assert api.resolve_review(run_b)
        assert api.review_resolution(run_b)
        # the ledger
        assert api.ledger_state()
        claims = list(api.iter_ledger_claims(document=DOC))
        assert claims
        assert api.ledger_search("net revenue", limit=3)["items"]
        assert "items" in api.ledger_history(DOC, "report_year")
        assert "items" in api.ledger_disagreements("facts", subject=DOC)
        assert "found" in api.ledger_path(DOC, "nobody")
        assert b"rdf:Statement" in api.ledger_export("jsonld")
        assert "queue" in api.ledger_review()
        with pytest.raises(APIError) as blank:
            api.answer_ledger_review([{"id": "merge:Company/x", "verdict": None}])
        assert blank.value.status == 422
        # policies
        assert "guarded" in {p["name"] for p in api.policies()}
        assert api.policy("default")["versions"] == [1]
        assert api.policy_version("default", 1)["name"] == "default"
        published = api.publish_policy({"name": "viaclient", "extends": "default@1"})
        assert published["version"] == 1
        calibration = tmp_path / "calibration.json"
        labelled = SAMPLE_CORPUS.parent / "repairs-labelled.jsonl"
        done = CliRunner().invoke(
            main, ["calibrate", str(labelled), "-o", str(calibration), "--alpha", "0.1"]
        )
        assert done.exit_code == 0, done.output
        assert re.fullmatch(
            "[0-9a-f]{64}", api.put_calibration(json.loads(calibration.read_text()))
        )
        # schedules
        added = api.add_schedule(str(SAMPLE_CORPUS), "default@latest", every_seconds=3600)
        assert api.schedule(added.id).corpus == str(SAMPLE_CORPUS)
        assert [s.id for s in api.schedules().items] == [added.id]
        api.remove_schedule(added.id)
        with pytest.raises(APIError) as gone:
            api.schedule(added.id)
        assert gone.value.status == 404 and added.id in gone.value.detail

        # streams: follow an S3 corpus, push a signed notification, see it waiting
        stream = api.follow("s3://followed/corpus", "default")
        assert stream["policy"] == "default@1" and stream["status"]["pending"] == 0
        created = {"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": "followed"}}}
        created["s3"]["object"] = {"key": "corpus/documents/x.txt", "eTag": "e", "sequencer": "1"}
        assert api.send_s3_events({"Records": [created]}, WEBHOOK_SECRET)["applied"] == 1
        assert api.stream(stream["id"])["status"]["pending"] == 1
        with pytest.raises(APIError) as forged:
            api.send_s3_events({"Records": [created]}, "not-the-secret")
        assert forged.value.status == 401

        # gates, exports, hooks, page images, recording (answers below 500 are their routes')
        with pytest.raises(APIError) as no_gate:
            api.gate(run_b)
        assert no_gate.value.status == 404
        assert api.export(run_b)
        try:
            api.export_manifest(run_b)
        except APIError as exc:  # no worker here: not written yet
            assert exc.status == 404
        hook = api.add_hook("https://93.184.215.14/groundswell")
        assert [h["id"] for h in api.hooks()] == [hook["id"]]
        assert api.deliveries(run_b) == []
        api.remove_hook(hook["id"])
        assert api.hooks() == []
        with pytest.raises(APIError) as no_page:
            api.page_image(run_b, DOC, 1)  # a text document has no page to draw
        assert no_page.value.status == 404
        with pytest.raises(APIError) as refused:  # refused as an import refuses its line
            api.record_claim(str(SAMPLE_CORPUS), DOC, {"quote": "BRIGHTWATER FOODS"})
        assert refused.value.status == 422 and refused.value.detail["error"] == "invalid"

    # Every operation of the app was answered by its own route (a 422 from the ledger's
    # answer route, which refuses a blank verdict).
    reached = set()
    for method, path in app_operations():
        pattern = _template(path)
        if any(m == method and pattern.match(p) and s < 500 for m, p, s in answered):
            reached.add((method, path))
    assert reached == app_operations(), sorted(app_operations() - reached)
