"""Policy versions, scheduled reprocessing and run diffs, on real Redis, moto S3, workers and beat."""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter

import pytest

from groundswell.shared.policies import PolicyRegistry
from groundswell.shared.repair import Repairer, RepairPolicy, RepairSettings
from groundswell.shared.results.service import RunResults
from groundswell.shared.runs.models import RunSpec
from groundswell.shared.runs.schedules import ScheduleSpec
from groundswell.shared.storage import open_store
from groundswell.shared.verify import Verifier
from groundswell.workers.schedules import add_schedule, remove_schedule
from tests.conftest import s3_client, wait_until
from tests.integration.conftest import ALL_LANES
from tests.integration.corpus_gen import pick_documents, upload, write_corpus

pytestmark = pytest.mark.integration


def _runs_of(pipeline, schedule_id: str) -> list:
    records, _ = pipeline.service.list_runs(0, 200)
    return sorted((r for r in records if r.schedule == schedule_id), key=lambda r: r.created_at)


def _repairs_independently(corpus_dir, policy) -> Counter:
    """What the repair cascade does to the claims of a corpus (those not bound to offsets),
    straight from the engine: ``repairs.at.<action>.<stage>`` and, against the labels,
    ``repairs.wrong`` (claims kept by a repair that are labelled not genuine)."""
    counts: Counter = Counter()
    for claims_file in sorted((corpus_dir / "claims").glob("*.jsonl")):
        doc_id = claims_file.stem
        text = (corpus_dir / "documents" / f"{doc_id}.txt").read_text(encoding="utf-8")
        labels = json.loads((corpus_dir / "labels" / f"{doc_id}.json").read_text())["claims"]
        repairer = Repairer(text, policy, warn=False)
        for line in claims_file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "start" not in record:
                result = repairer.repair(record["claim"])
                counts[f"repairs.at.{result.action}.{result.stage}"] += 1
                kept = result.action in ("salvaged", "substituted", "annotated")
                counts["repairs.wrong"] += kept and labels.get(record["id"]) is False
    return counts


def _moved_claims_independently(corpus_dir, policy_a, policy_b) -> set[tuple[str, str]]:
    """Which claims change verdict or tier between two policies, straight from the engine."""
    moved = set()
    for claims_file in sorted((corpus_dir / "claims").glob("*.jsonl")):
        doc_id = claims_file.stem
        text = (corpus_dir / "documents" / f"{doc_id}.txt").read_text(encoding="utf-8")
        va, vb = Verifier(text, policy_a.verify_policy), Verifier(text, policy_b.verify_policy)
        for line in claims_file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "start" in record:
                a = va.verify_at(record["claim"], record["start"], record["end"])
                b = vb.verify_at(record["claim"], record["start"], record["end"])
            else:
                a, b = va.verify(record["claim"]), vb.verify(record["claim"])
            if (a.verdict, a.tier) != (b.verdict, b.tier):
                moved.add((doc_id, record["id"]))
    return moved


@pytest.mark.parametrize("lane", ALL_LANES, indirect=True)
def test_publish_schedule_reprocess_diff_and_dry_run(
    pipeline, lane, shared_corpus, corpus_index, tmp_path
):
    documents = pick_documents(shared_corpus, corpus_index, 34)
    first, later = documents[:30], documents[30:]
    corpus_dir = tmp_path / "corpus"
    write_corpus(corpus_dir, shared_corpus, first)
    client = s3_client(lane.s3_endpoint)
    bucket = lane.new_bucket("corpus")
    upload(corpus_dir, client, bucket, "corpus")
    corpus = f"s3://{bucket}/corpus"

    pipeline.start_worker("w1")
    pipeline.start_worker("w2")
    beats = [pipeline.start_beat("beat-1"), pipeline.start_beat("beat-2")]
    service = pipeline.service

    # The baseline under default@1.
    base, _ = service.submit(RunSpec(corpus=corpus, policy="default@1"))
    baseline = pipeline.wait(base.id)
    assert (
        baseline["units"]["verify"]["computed"] == 30
        and baseline["units"]["admit"]["computed"] == 30
    )

    # A schedule that follows default@latest (its interval is long: only a publish fires it).
    app = pipeline.app
    follower = add_schedule(
        service, app, ScheduleSpec(corpus=corpus, policy="default@latest", every_seconds=3600)
    )
    v1 = service.policies.resolve("default@1")
    published_at = time.monotonic()
    v2, created = service.publish_policy(
        {"name": "default", "verify": {"accept_through": "whitespace"}}
    )
    assert created and v2.ref == "default@2"
    assert (
        v2.admit_fingerprint == v1.admit_fingerprint != ""
        and v2.verify_fingerprint != v1.verify_fingerprint
    )
    assert (
        service.publish_policy({"name": "default", "verify": {"accept_through": "whitespace"}})[1]
        is False
    )

    # Its interval is an hour: a run within a minute is the publication's (a generous bound,
    # for a loaded machine).
    fired = wait_until(
        lambda: _runs_of(pipeline, follower.id), 60, "the schedule to fire on publish"
    )
    assert time.monotonic() - published_at < 60
    (reprocessed,) = fired
    assert reprocessed.policy["ref"] == "default@2" and reprocessed.previous_run == base.id
    after = pipeline.wait(reprocessed.id)
    # Only verification was recomputed; every admission receipt was reused.
    assert after["units"]["verify"]["computed"] == 30 and after["units"]["verify"]["cached"] == 0
    assert after["units"]["admit"]["computed"] == 0 and after["units"]["admit"]["cached"] == 30
    assert after["reasons"] == {"verify": {"changed policy part": 30}}
    assert after["counts"]["candidates"] == baseline["counts"]["candidates"]

    # The diff lists exactly the claims whose verdict or tier the setting moved.
    diff = RunResults(service).diff(base.id, reprocessed.id)
    expected = _moved_claims_independently(corpus_dir, v1, v2)
    assert expected, "the setting should move some claims"
    assert {(m["doc_id"], m["id"]) for m in diff["moved"]} == expected
    assert all(m["kind"] == "claim" and m["change"] == "verdict" for m in diff["moved"])
    accepted = next(r for r in diff["rates"] if r["rate"] == "claims accepted")
    assert accepted["change_pp"] < 0 and accepted["a"] == baseline["rates"]["claims_accepted"]
    remove_schedule(service, app, follower.id)

    # New documents arrive. A dry run says what a run would compute and why...
    write_corpus(corpus_dir, shared_corpus, later)
    for doc in later:
        for sub, suffix in (
            ("documents", ".txt"),
            ("claims", ".jsonl"),
            ("candidates", ".json"),
            ("labels", ".json"),
        ):
            path = corpus_dir / sub / f"{doc['id']}{suffix}"
            client.put_object(
                Bucket=bucket, Key=f"corpus/{sub}/{path.name}", Body=path.read_bytes()
            )
    dry, _ = service.submit(RunSpec(corpus=corpus, policy="default@latest", dry_run=True))
    plan = pipeline.wait(dry.id)
    assert (
        plan["units"]["verify"]["would_compute"] == 4
        and plan["units"]["verify"]["would_reuse"] == 30
    )
    assert plan["reasons"] == {"verify": {"new input": 4}, "admit": {"new input": 4}}
    assert not open_store(pipeline.settings.storage_url, pipeline.settings).exists(
        f"summaries/default/2/{dry.id}.json"
    )

    # ...and a schedule that fires on its own computes exactly that.
    ticking = add_schedule(
        service, app, ScheduleSpec(corpus=corpus, policy="default@latest", every_seconds=3)
    )
    tick = wait_until(lambda: _runs_of(pipeline, ticking.id), 90, "the first tick")[0]
    ticked = pipeline.wait(tick.id)
    assert ticked["units"]["verify"]["computed"] == 4 and ticked["units"]["admit"]["computed"] == 4
    assert ticked["reasons"] == plan["reasons"]
    assert ticked["units"]["verify"]["cached"] == 30 and ticked["documents"] == 34

    # Let it tick a few more times with two beats running: never two runs for one tick. A
    # tick is skipped while the last run goes on, which takes longer on a loaded machine:
    # wait for the third run, not for a fixed window.
    wait_until(lambda: len(_runs_of(pipeline, ticking.id)) >= 3, 180, "three ticked runs")
    runs = _runs_of(pipeline, ticking.id)
    stamps = [time.mktime(time.strptime(r.created_at[:19], "%Y-%m-%dT%H:%M:%S")) for r in runs]
    assert all(b - a >= 2 for a, b in itertools.pairwise(stamps)), stamps
    sends = [
        (pipeline.log_dir / f"beat-{i}.log").read_text().count(f"schedule-{ticking.id}")
        for i in (1, 2)
    ]
    assert min(sends) == 0 and max(sends) >= len(runs), sends  # only the lock holder sends

    # Removing the schedule stops it.
    assert remove_schedule(service, app, ticking.id)
    time.sleep(1)
    count = len(_runs_of(pipeline, ticking.id))
    time.sleep(7)
    assert len(_runs_of(pipeline, ticking.id)) == count
    assert all(beat.poll() is None for beat in beats)

    # Summaries are kept per policy version, and the registry holds both versions.
    out = open_store(pipeline.settings.storage_url, pipeline.settings)
    assert out.exists(f"summaries/default/1/{base.id}.json")
    assert out.exists(f"summaries/default/2/{reprocessed.id}.json")
    assert PolicyRegistry(out).versions("default") == [1, 2]
    latest = service.runs.policy_latest()
    assert latest[(corpus, "default@1")]["run_id"] == base.id
    assert latest[(corpus, "default@2")]["grounding_rate"] == pytest.approx(
        ticked["rates"]["claims_accepted"]
    )

    # A version that repairs near misses: verification is recomputed through the cascade,
    # admission is reused, and the summary counts what the engine does on its own.
    repair = {"repair_mode": "substitute", "repair_threshold": 0.7}
    repairing, _ = service.publish_policy(
        {"name": "repairing", "extends": "default@1", "verify": {"repair": repair}}
    )
    assert repairing.admit_fingerprint == v1.admit_fingerprint
    assert repairing.verify_fingerprint != v1.verify_fingerprint
    run, _ = service.submit(RunSpec(corpus=corpus, policy=repairing.ref))
    repaired = pipeline.wait(run.id)
    assert repaired["state"] == "succeeded"
    assert repaired["units"]["verify"]["computed"] == 34
    assert repaired["units"]["admit"]["cached"] == 34
    assert repaired["policy"]["repair"]["threshold_source"] == "policy"
    counts = repaired["counts"]
    expected = _repairs_independently(
        corpus_dir, RepairPolicy(v1.verify_policy, RepairSettings.from_dict(repair))
    )
    assert {k: v for k, v in counts.items() if k.startswith("repairs.at.")} == {
        k: v for k, v in expected.items() if k.startswith("repairs.at.") and v
    }
    assert counts["repairs.action.substituted"] > 0 and counts["repairs.action.rejected"] > 0
    assert counts["repairs.wrong"] == expected["repairs.wrong"] > 0
    assert counts["claims"] == ticked["counts"]["claims"]  # every claim, certificate as before
