"""One labelled corpus under ``default@1`` and under ``guarded@1`` on real workers (moto S3,
Redis): both runs succeed, the guarded run writes guarded receipts, its summary catches the
escapes default lets through, and the diff (service and API) shows both side by side."""

from __future__ import annotations

import httpx
import pytest

from groundswell.api.routes.metrics import QueueCollector
from groundswell.shared.metrics import corpus_label
from groundswell.shared.receipts import open_receipt
from groundswell.shared.results.service import RunResults
from groundswell.shared.runs.index import RunIndex
from groundswell.shared.runs.inprocess import run_in_process
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.settings import hash_api_key
from groundswell.shared.storage import open_store
from groundswell.workers.embedded import service_env
from tests.conftest import API_KEY, running_api
from tests.shared.cli.test_runs_cli import groundswell
from tests.shared.runs.guarded_corpus import FIGURES, NEIGHBOUR, RIGHT, write_guarded_corpus

pytestmark = pytest.mark.integration

DOCS = len(FIGURES)


def _admit_receipts(out, run_id: str) -> list[dict]:
    rows = [r for r in RunIndex(out, run_id).rows() if r["kind"] == "admit"]
    assert len(rows) == DOCS
    return [open_receipt(out.get(r["receipt"]), r["receipt"])["receipt"] for r in rows]


def test_default_and_guarded_on_one_labelled_corpus_side_by_side(pipeline, lane, tmp_path):
    bucket = lane.new_bucket("corpus")
    corpus = f"s3://{bucket}/corpus"
    write_guarded_corpus(open_store(corpus, pipeline.settings))
    pipeline.start_worker("w1", concurrency=2)
    service = pipeline.service

    runs, summaries = {}, []
    for ref in ("default@1", "guarded@1"):  # one after the other: guarded reuses verification
        record, _ = service.submit(RunSpec(corpus=corpus, policy=ref))
        runs[ref] = record.id
        summaries.append(pipeline.wait(record.id))
    default, guarded = summaries
    assert default["state"] == guarded["state"] == "succeeded"
    assert default["policy"]["admit_fingerprint"] != guarded["policy"]["admit_fingerprint"]
    # Verification is the same under both (guarded takes default's): its receipts are reused.
    assert default["policy"]["verify_fingerprint"] == guarded["policy"]["verify_fingerprint"]
    assert guarded["units"]["admit"]["computed"] == DOCS
    assert guarded["units"]["verify"]["cached"] == DOCS

    # Guarded receipts carry the guard; default's are groundgate's, without one.
    out = open_store(pipeline.settings.storage_url, pipeline.settings)
    for receipt in _admit_receipts(out, runs["guarded@1"]):
        assert receipt["guard"]["policy"] == "guarded"
        assert all(isinstance(d["guard"], list) for d in receipt["decisions"])
    for receipt in _admit_receipts(out, runs["default@1"]):
        assert "guard" not in receipt and all("guard" not in d for d in receipt["decisions"])

    # The workers' summary equals the in-process core's under the guarded policy.
    core = run_in_process(corpus, "guarded@1", str(tmp_path / "core"), pipeline.settings)
    assert guarded["counts"] == core["counts"]

    # What the guard buys on this corpus: the neighbouring column's cells, admitted by default
    # (escapes), go to review; the right values are admitted under both.
    a, b = default["counts"], guarded["counts"]
    assert a["candidates.escapes"] == DOCS and b.get("candidates.escapes", 0) == 0
    assert b["candidates.code.VALUE_NOT_IN_COLUMN"] == DOCS
    assert "candidates.code.VALUE_NOT_IN_COLUMN" not in a
    assert a["candidates.right_admitted"] == b["candidates.right_admitted"] == DOCS
    assert b["candidates.reviews"] == a.get("candidates.reviews", 0) + DOCS
    assert default["rates"]["candidates_escape_rate"] == 0.5
    assert guarded["rates"]["candidates_escape_rate"] == 0.0
    # Summaries are kept per policy version, and the latest run of each version of the corpus
    # is exported side by side (the API's gauges).
    assert out.exists(f"summaries/default/1/{runs['default@1']}.json")
    assert out.exists(f"summaries/guarded/1/{runs['guarded@1']}.json")
    collector = QueueCollector(lambda: service, lambda: pipeline.app)
    gauges = {
        (family.name, s.labels["policy"]): s.value
        for family in collector.collect()
        for s in family.samples
        if family.name.startswith("groundswell_policy_")
        and s.labels["corpus"] == corpus_label(corpus)
    }
    reviews = guarded["rates"]["candidates"]["needs_verification"]
    assert gauges == {
        ("groundswell_policy_grounding_rate", "default"): 1.0,
        ("groundswell_policy_grounding_rate", "guarded"): 1.0,
        ("groundswell_policy_escape_rate", "default"): 0.5,
        ("groundswell_policy_escape_rate", "guarded"): 0.0,
        ("groundswell_policy_right_admitted_rate", "default"): 1.0,
        ("groundswell_policy_right_admitted_rate", "guarded"): 1.0,
        ("groundswell_policy_review_rate", "default"): 0.0,
        ("groundswell_policy_review_rate", "guarded"): reviews,
    }
    assert reviews == round(1 / 3, 6)

    # The diff shows both runs side by side, and the candidates that moved.
    diff = RunResults(service).diff(runs["default@1"], runs["guarded@1"])
    assert (diff["policy_a"]["ref"], diff["policy_b"]["ref"]) == ("default@1", "guarded@1")
    rates = {r["rate"]: r for r in diff["rates"]}
    assert (rates["candidate escape rate"]["a"], rates["candidate escape rate"]["b"]) == (0.5, 0)
    assert rates["candidate escape rate"]["change_pp"] == -50.0
    assert rates["right values admitted"]["a"] == rates["right values admitted"]["b"] == 1.0
    assert rates["right values to review"]["change_pp"] == 0.0
    assert rates["right values rejected"]["change_pp"] == 0.0
    counts = {r["count"]: (r["a"], r["b"], r["change"]) for r in diff["labelled"]}
    assert counts["escapes (wrong values admitted)"] == (DOCS, 0, -DOCS)
    assert counts["right values admitted"] == (DOCS, DOCS, 0)
    assert counts["right values to review"] == counts["right values rejected"] == (0, 0, 0)
    assert counts["wrong values to review"][2] == DOCS
    assert {(m["doc_id"], m["id"]) for m in diff["moved"]} == {
        (doc, f"{doc}:{NEIGHBOUR}") for doc in FIGURES
    }
    assert not any(m["id"].endswith(RIGHT) for m in diff["moved"])

    # The command prints the labelled counts side by side too.
    text = groundswell(
        "diff", runs["default@1"], runs["guarded@1"], env=service_env(**pipeline.values)
    )
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith("escapes (wrong"))
    assert line.split()[-3:] == [str(DOCS), "0", f"-{DOCS}"], line

    # The API answers the same comparison.
    values = {**pipeline.values, "api_key_hashes": hash_api_key(API_KEY)}
    with running_api(values, tmp_path) as url:
        got = httpx.get(
            f"{url}/v1/runs/{runs['default@1']}/diff/{runs['guarded@1']}",
            headers={"X-API-Key": API_KEY},
            timeout=30,
        )
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["labelled"] == diff["labelled"] and body["rates"] == diff["rates"]
    assert body["pagination"]["total_count"] == DOCS
