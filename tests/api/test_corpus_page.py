"""A corpus's page (issue 33 item 9, its corpus part), in process (FastAPI's TestClient over
a real Redis): runs of the sample corpus under two policy versions, and a run of another
corpus. The page draws each run's grounding rate, escape rate and review load, and each
policy version's latest, as bars whose numbers are the runs' summaries'; it lists only this
corpus's runs, shows a team's key only its own corpora, and holds no script."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.shared.charts import bar_chart, rate_chart
from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.runs.layout import catalog_key
from groundswell.shared.settings import Settings, hash_api_key
from tests.shared.test_report_charts import bars as _bars
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

OPS, ANA = "gs_ops_sees_every_corpus", "gs_ana_of_the_other_corpus"


@pytest.fixture
def corpora(service_settings, tmp_path):
    other = tmp_path / "other-corpus"
    shutil.copytree(SAMPLE_CORPUS, other)
    settings = Settings(
        **{
            **service_settings,
            "api_key_hashes": (
                f"ops:runs:{hash_api_key(OPS)},ana:runs:{hash_api_key(ANA)}:{other}"
            ),
            "allowed_corpora": f"{SAMPLE_CORPUS},{other}",
        }
    )
    runs = {}
    for policy in ("strict", "default"):
        service, record = drive_run(settings, policy=policy)
        runs[policy] = record
    _, runs["other"] = drive_run(settings, corpus=str(other))
    assert {r.state for r in runs.values()} == {"succeeded"}
    return TestClient(create_app(settings)), service, runs


def test_the_corpus_page_draws_its_runs_rates_by_run_and_policy_version(corpora):
    client, service, runs = corpora
    page = client.get(
        "/v1/corpora/report", params={"corpus": str(SAMPLE_CORPUS)}, headers={"X-API-Key": OPS}
    )
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src" not in page.headers["content-security-policy"]
    text = page.text
    assert "<script" not in text
    HTMLParser().feed(text)
    strict, default = runs["strict"], runs["default"]
    summaries = {r.id: service.summary(r.id) for r in (strict, default)}
    for run_id, summary in summaries.items():
        rates = summary["rates"]
        assert _bars(text, "grounding_rate-runs")[run_id] == pytest.approx(rates["claims_accepted"])
        assert _bars(text, "review_rate-runs")[run_id] == pytest.approx(
            rates["candidates"]["needs_verification"]
        )
        assert _bars(text, "escape_rate-runs")[run_id] == pytest.approx(
            rates["candidates_escape_rate"]
        )
        assert f'href="/v1/runs/{run_id}/report"' in text
    # Oldest at the top, as time runs; the strict and default runs differ somewhere.
    assert list(_bars(text, "grounding_rate-runs")) == [strict.id, default.id]
    by_policy = _bars(text, "review_rate-policies")
    assert set(by_policy) == {"strict@1", "default@1"}
    assert by_policy["strict@1"] == pytest.approx(
        summaries[strict.id]["rates"]["candidates"]["needs_verification"]
    )
    assert _bars(text, "grounding_rate-runs") != {}
    # Only this corpus's runs.
    assert runs["other"].id not in text
    assert text.count("<tr data-run=") == 2


def test_a_folder_is_one_corpus_however_it_is_named(corpora):
    client, _, runs = corpora
    page = client.get(
        "/v1/corpora/report",
        params={"corpus": f"{SAMPLE_CORPUS}/../corpus/."},
        headers={"X-API-Key": OPS},
    )
    assert page.status_code == 200 and runs["default"].id in page.text


def test_a_team_sees_only_its_corpus_and_an_unknown_corpus_is_a_404(corpora, tmp_path):
    client, _, runs = corpora
    ana = {"X-API-Key": ANA}
    own = client.get(
        "/v1/corpora/report", params={"corpus": str(tmp_path / "other-corpus")}, headers=ana
    )
    assert own.status_code == 200 and runs["other"].id in own.text
    other = client.get("/v1/corpora/report", params={"corpus": str(SAMPLE_CORPUS)}, headers=ana)
    assert other.status_code == 404 and runs["default"].id not in other.text
    never = client.get(
        "/v1/corpora/report", params={"corpus": str(tmp_path / "never")}, headers={"X-API-Key": OPS}
    )
    assert never.status_code == 404 and "no runs of corpus" in never.json()["detail"]


def test_a_run_listed_before_rates_were_kept_is_read_from_its_summary(corpora):
    client, service, runs = corpora
    record = runs["default"]
    store = service.store(record.output)
    key = catalog_key(record.id, record.created_at)
    entry = json.loads(store.get(key))
    entry.pop("rates")
    store.put(key, json.dumps(entry).encode())
    page = client.get(
        "/v1/corpora/report", params={"corpus": str(SAMPLE_CORPUS)}, headers={"X-API-Key": OPS}
    )
    rates = service.summary(record.id)["rates"]
    assert _bars(page.text, "grounding_rate-runs")[record.id] == pytest.approx(
        rates["claims_accepted"]
    )


def test_a_rate_chart_writes_percentages_and_leaves_out_what_is_unknown():
    chart = rate_chart("x", "X", [("a", 0.5, "c"), ("b", None, "c"), ("c", 0.25, "c")])
    assert [(b["label"], b["text"], b["w"]) for b in chart["bars"]] == [
        ("a", "50.0%", 120),  # a full bar is 100%
        ("c", "25.0%", 60),
    ]
    assert rate_chart("x", "X", [("a", None, "c")]) is None
    assert bar_chart("x", "X", [("a", 3, "c")])["bars"][0]["text"] == "3"


@pytest.mark.parametrize("redis", [True, False], ids=["with-redis", "storage-only"])
def test_the_command_line_writes_the_corpus_page(
    corpora, service_settings, monkeypatch, tmp_path, redis
):
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main

    _, _, runs = corpora
    for name in ("GROUNDSWELL_BROKER_URL", "GROUNDSWELL_STATE_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    if redis:
        monkeypatch.setenv("GROUNDSWELL_BROKER_URL", service_settings["broker_url"])
    monkeypatch.setenv("GROUNDSWELL_STORAGE_URL", service_settings["storage_url"])
    out = tmp_path / "corpus.html"
    done = CliRunner().invoke(main, ["report", "--corpus", str(SAMPLE_CORPUS), "-o", str(out)])
    assert done.exit_code == 0, done.output
    page = out.read_text(encoding="utf-8")
    assert list(_bars(page, "grounding_rate-runs")) == [runs["strict"].id, runs["default"].id]
    assert runs["other"].id not in page
    unknown = CliRunner().invoke(main, ["report", "--corpus", str(tmp_path / "never")])
    assert unknown.exit_code == 2 and "no runs of corpus" in unknown.output
    both = CliRunner().invoke(main, ["report", "some-run", "--corpus", str(SAMPLE_CORPUS)])
    assert both.exit_code == 2 and "--corpus" in both.output
