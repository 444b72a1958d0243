"""Runs that load their ledger (``ledger`` on), driven in this process with a real Redis and
a local output folder: a ledger unit per document, held until its admission (or
verification) batch is recorded, fills the ledger with the admitted facts and grounded
quotations of the run's receipts, exactly once; a reprocessing run under another policy
version adds a second version of each fact (``ledger history``); a run without it is as it
was."""

from __future__ import annotations

import json

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.settings import Settings
from tests.shared.runs.driving import drive


def drive_run(settings: Settings, policy: str = "default", ledger: bool = False, **spec):
    """A run through the pipeline's own operations, its tasks sent to a list and run here;
    the tasks it sent, by kind, with it."""
    from groundswell.shared.runs.models import RunSpec

    extra = {"ledger": True} if ledger else {}
    return drive(settings, RunSpec(corpus=str(SAMPLE_CORPUS), policy=policy, **extra, **spec))


def counts(url: str) -> dict[str, int]:
    from sqlalchemy import text

    from groundswell.shared.ledger.store import Ledger

    ledger = Ledger.open(url)
    try:
        with ledger.engine.connect() as conn:
            return {
                t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
                for t in ("claims", "facts", "evidence")
            }
    finally:
        ledger.close()


def run_settings(redis_server, tmp_path, ledger_url: str) -> Settings:
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    return Settings(
        broker_url=redis_server.url, storage_url=str(tmp_path / "out"), ledger_url=ledger_url
    )


@pytest.fixture
def settings(redis_server, tmp_path) -> Settings:
    return run_settings(redis_server, tmp_path, f"sqlite:///{tmp_path / 'ledger.sqlite3'}")


def test_a_run_with_ledger_on_loads_its_admitted_facts_and_quotations(settings):
    service, record, kinds = drive_run(settings, ledger=True)
    assert record.state == "succeeded", record.error
    summary = service.summary(record.id)
    admitted = summary["counts"]["candidates.outcome.admitted"]
    assert summary["counts"]["ledger.facts"] == admitted
    stored = counts(settings.ledger_url)
    assert stored["facts"] == admitted
    quotations = summary["counts"]["ledger.quotations"]
    assert quotations > 0
    assert stored["claims"] == admitted + quotations == stored["evidence"]
    # One ledger unit per document with units, counted as the other kinds are.
    units = summary["units"]["ledger"]
    assert units["planned"] == units["done"] == units["computed"] == summary["documents"]
    assert kinds.count("ledger") >= 1
    assert "ledger" in json.loads(service.store(record.output).get(f"runs/{record.id}/run.json"))


def test_quotations_grounded_at_typography_and_skeleton_are_stored_at_their_tier(
    redis_server, tmp_path, ledger_url
):
    """Under a policy that accepts through skeleton, every grounded quotation goes in at the
    tier verification found it (typography and skeleton too), counted by tier; none skipped."""
    from sqlalchemy import func, select

    from groundswell.shared.ledger.models import EvidenceRow
    from groundswell.shared.ledger.store import Ledger

    settings = run_settings(redis_server, tmp_path, ledger_url)
    service, record, _ = drive_run(settings, policy="permissive", ledger=True)
    assert record.state == "succeeded", record.error
    counts = service.summary(record.id)["counts"]
    grounded = {
        k.rsplit(".", 1)[1]: v for k, v in counts.items() if k.startswith("claims.at.grounded.")
    }
    assert grounded["skeleton"] > 0 and grounded["typography"] > 0
    by_tier = {
        k.rsplit(".", 1)[1]: v for k, v in counts.items() if k.startswith("ledger.quotations.tier.")
    }
    assert by_tier == grounded
    assert counts["ledger.quotations"] == sum(grounded.values())
    assert "ledger.quotations_skipped_tier" not in counts
    with Ledger.open(ledger_url) as ledger, ledger.engine.connect() as conn:
        stored = dict(
            conn.execute(
                select(EvidenceRow.tier, func.count())
                .where(EvidenceRow.claim_id.like("quote:%"))
                .group_by(EvidenceRow.tier)
            ).all()
        )
    assert stored == grounded


def test_the_units_run_twice_add_nothing(settings):
    from groundswell.shared.runs.execute import _contexts
    from groundswell.shared.runs.ledger import load_batch, open_ledger

    service, record, _ = drive_run(settings, ledger=True)
    before = counts(settings.ledger_url)
    # A redelivered ledger batch, and the same units loaded again by hand: nothing added.
    from groundswell.shared.runs.execute import context

    ctx = _contexts.get(record.id) or context(service, record)
    docs = [p.stem for p in (SAMPLE_CORPUS / "documents").iterdir()]
    load_batch(ctx, open_ledger(settings.ledger_url), docs, lambda d: None)
    assert counts(settings.ledger_url) == before
    # A repeated run under the same policy version (its receipts reused): nothing added.
    _, again, _ = drive_run(settings, ledger=True)
    assert again.state == "succeeded"
    assert counts(settings.ledger_url) == before


def test_a_reprocessing_run_under_another_policy_version_adds_a_version_of_each_fact(settings):
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main
    from groundswell.shared.ledger.history import fact_history
    from groundswell.shared.runs.ledger import open_ledger

    service, first, _ = drive_run(settings, ledger=True)
    before = counts(settings.ledger_url)
    # A version that leaves admission alone: the same admission receipts, new facts beside.
    service.publish_policy(
        {"name": "team", "extends": "default@1", "verify": {"accept_through": "exact"}}
    )
    _, second, _ = drive_run(settings, policy="team@1", ledger=True)
    assert second.state == "succeeded"
    after = counts(settings.ledger_url)
    assert after["facts"] == 2 * before["facts"]
    ledger = open_ledger(settings.ledger_url)
    with ledger.engine.connect() as conn:
        from sqlalchemy import text

        doc, field, key = conn.execute(
            text(
                "SELECT c.document_id, f.field, f.key FROM facts f JOIN claims c ON c.id = f.claim_id"
            )
        ).first()
    history = fact_history(ledger, doc, field, key)
    assert [(h["policy_version"], h["run_id"]) for h in history] == [
        (first.policy["ref"], first.id),
        (second.policy["ref"], second.id),
    ]
    assert history[0]["value"] == history[1]["value"]
    out = CliRunner().invoke(
        main,
        ["ledger", "history", doc, field, *([key] if key else []), "--db", settings.ledger_url],
    )
    assert out.exit_code == 0, out.output
    assert first.policy["ref"] in out.output and second.policy["ref"] in out.output


def test_a_run_without_ledger_is_unchanged(settings, tmp_path):
    from groundswell.shared.runs.inprocess import run_in_process

    service, record, kinds = drive_run(settings)
    assert "ledger" not in kinds
    summary = service.summary(record.id)
    assert "ledger" not in summary["units"]
    assert not any(k.startswith("ledger.") for k in summary["counts"])
    run_json = json.loads(service.store(record.output).get(f"runs/{record.id}/run.json"))
    assert "ledger" not in run_json
    # The same summary as the in-process baseline, which knows nothing of the ledger.
    base = str(tmp_path / "baseline")
    baseline = run_in_process(str(SAMPLE_CORPUS), "default", base, settings)
    for part in ("units", "counts", "documents", "bytes", "reasons"):
        assert summary[part] == baseline[part], part


def test_a_decision_that_cannot_be_loaded_fails_its_unit_with_file_line_and_field():
    from groundswell.shared.ledger.load import load_document

    receipt = {
        "receipt_sha256": "ab" * 32,
        "receipt": {
            "decisions": [
                {
                    "outcome": "admitted",
                    "field": "year",
                    "value": "2024",
                    "evidence": {"start": 0, "end": 4},
                },
                {
                    "outcome": "admitted",
                    "field": "year",
                    "value": "2025",
                    "evidence": {"start": 3, "end": 99},
                },
                {"outcome": "rejected", "field": "year", "value": "x", "evidence": {}},
            ]
        },
    }

    def load(run_id: str, policy_version: str):
        admit = ("receipts/admit/ab/x.json", receipt)
        return load_document(
            "d",
            "2024 was a year",
            run_id=run_id,
            policy_version=policy_version,
            admit=admit,
            verify=None,
        )

    loaded = load("r", "default@1")
    assert [f["value"] for f in loaded.facts] == ["2024"]
    assert [str(e) for e in loaded.errors] == [
        "receipts/admit/ab/x.json:2: evidence: evidence span {'start': 3, 'end': 99} is not in "
        "the document"
    ]
    # The same receipt under another policy version: other claim ids, the same evidence.
    other = load("r2", "default@2")
    assert other.claims[0].claim["id"] != loaded.claims[0].claim["id"]
    assert other.claims[0].evidence[0]["text"] == loaded.claims[0].evidence[0]["text"] == "2024"
