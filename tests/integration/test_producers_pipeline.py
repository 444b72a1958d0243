"""Two producers in one corpus, through real workers (prefork, two pool children) on moto's S3
server: the run's summary, the API (summary and the by-producer view) and the workers'
/metrics break the rates down by producer, and all three agree."""

from __future__ import annotations

import httpx
import pytest

from groundswell.shared.producers import producer_key
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import hash_api_key
from groundswell.workers.embedded import free_port, wait_for_port
from tests.conftest import API_KEY, running_api, s3_client
from tests.integration.corpus_gen import pick_documents, upload, with_producers, write_corpus
from tests.workers.test_metrics import scrape, total

pytestmark = pytest.mark.integration

GEMINI = {"format": "langextract", "model": "gemini-2.5-flash", "prompt_version": "v3"}
GPT = {"format": "langextract", "model": "gpt-4.1", "prompt_version": "v3"}


def test_two_producers_are_broken_down_in_the_summary_the_api_and_metrics(
    pipeline, s3_bucket, shared_corpus, corpus_index, tmp_path
):
    folder = tmp_path / "corpus"
    write_corpus(folder, shared_corpus, pick_documents(shared_corpus, corpus_index, 12))
    with_producers(folder, [GEMINI, GPT])
    upload(folder, s3_client(pipeline.values["s3_endpoint_url"]), s3_bucket, "two")
    corpus = f"s3://{s3_bucket}/two"

    port = free_port()
    pipeline.start_worker("p1", concurrency=2, metrics_port=port, metrics_dir=tmp_path / "m")
    record, _ = pipeline.service.submit(RunSpec(corpus=corpus, policy="default"))
    summary = pipeline.wait(record.id)
    counts, section = summary["counts"], summary["producers"]
    ka, kb = producer_key(GEMINI), producer_key(GPT)
    assert set(section) == {ka, kb}
    for name in ("claims", "claims.accepted", "candidates", "candidates.escapes"):
        assert sum(p["counts"].get(name, 0) for p in section.values()) == counts.get(name, 0), name
    assert all(
        p["counts"]["claims"] > 0 and p["counts"]["candidates"] > 0 for p in section.values()
    )

    # The API: the summary carries the section, the by-producer view lists it, largest first.
    values = {**pipeline.values, "api_key_hashes": hash_api_key(API_KEY)}
    with running_api(values, tmp_path) as url:
        headers = {"X-API-Key": API_KEY}
        got = httpx.get(f"{url}/v1/runs/{record.id}/summary", headers=headers, timeout=30)
        assert got.status_code == 200 and got.json()["producers"] == section
        view = httpx.get(f"{url}/v1/runs/{record.id}/producers", headers=headers, timeout=30)
        assert view.status_code == 200, view.text
        rows = view.json()["producers"]
        assert [r["producer"] for r in rows] == list(section)
        assert rows[0]["rates"] == section[rows[0]["producer"]]["rates"]

    # The workers' /metrics (prefork multiprocess): each producer's series equal its counts.
    wait_for_port(port)
    samples = scrape(port)
    for key, part in section.items():
        c = part["counts"]
        claims = total(samples, "groundswell_producer_claims_total", producer=key)
        assert claims == c["claims"], key
        accepted = total(
            samples, "groundswell_producer_claims_total", producer=key, outcome="accepted"
        )
        assert accepted == c.get("claims.accepted", 0), key
        for outcome in ("admitted", "needs_verification", "rejected"):
            decided = total(
                samples, "groundswell_producer_candidates_total", producer=key, outcome=outcome
            )
            assert decided == c.get(f"candidates.outcome.{outcome}", 0), (key, outcome)
        escapes = total(
            samples, "groundswell_producer_escapes_total", producer=key, kind="candidate"
        )
        assert escapes == c.get("candidates.escapes", 0), key
    assert total(samples, "groundswell_producer_claims_total") == counts["claims"]

    # Run again: every receipt is reused, the breakdown is the same (and metrics count no more).
    again, _ = pipeline.service.submit(RunSpec(corpus=corpus, policy="default"))
    second = pipeline.wait(again.id)
    assert second["producers"] == section
    assert second["units"]["verify"]["computed"] == second["units"]["admit"]["computed"] == 0
    assert total(scrape(port), "groundswell_producer_claims_total") == counts["claims"]
