"""Runs that load their ledger (``ledger`` on), driven in this process with a real Redis and
a local output folder: a ledger unit per document, held until its admission (or
verification) batch is recorded, fills the ledger with the admitted facts and grounded
quotations of the run's receipts, exactly once; a reprocessing run under another policy
version adds a second version of each fact (``ledger history``); a run without it is as it
was."""

from __future__ import annotations

import json
import unicodedata

import pytest

from groundswell.shared.cli.runs import SAMPLE_CORPUS
from groundswell.shared.report.service import run_report
from groundswell.shared.settings import Settings
from tests.shared.runs.driving import drive


def drive_run(
    settings: Settings,
    policy: str = "default",
    ledger: bool = False,
    hold: tuple[str, ...] = (),
    **spec,
):
    """A run through the pipeline's own operations, its tasks sent to a list and run here;
    the tasks it sent, by kind, with it."""
    from groundswell.shared.runs.models import RunSpec

    extra = {"ledger": True} if ledger else {}
    run = RunSpec(corpus=str(SAMPLE_CORPUS), policy=policy, **extra, **spec)
    return drive(settings, run, hold)


def counts_of(url: str) -> dict[str, int]:
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


def facts_of(url: str, doc_id: str) -> list[tuple[str, str]]:
    """(field, key) of every fact of one document in the ledger."""
    from sqlalchemy import text

    from groundswell.shared.ledger.store import Ledger

    with Ledger.open(url) as ledger, ledger.engine.connect() as conn:
        sql = "SELECT f.field, f.key FROM facts f JOIN claims c ON c.id = f.claim_id"
        return conn.execute(text(sql + " WHERE c.document_id = :d"), {"d": doc_id}).all()


@pytest.fixture
def settings(redis_server, tmp_path) -> Settings:
    return run_settings(redis_server, tmp_path, f"sqlite:///{tmp_path / 'ledger.sqlite3'}")


def test_a_run_with_ledger_on_loads_its_admitted_facts_and_quotations(settings):
    service, record, kinds = drive_run(settings, ledger=True)
    assert record.state == "succeeded", record.error
    summary = service.summary(record.id)
    admitted = summary["counts"]["candidates.outcome.admitted"]
    assert summary["counts"]["ledger.facts"] == admitted
    stored = counts_of(settings.ledger_url)
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
    from groundswell.shared.units.ledger import load_batch, open_ledger

    service, record, _ = drive_run(settings, ledger=True)
    before = counts_of(settings.ledger_url)
    # A redelivered ledger batch, and the same units loaded again by hand: nothing added.
    from groundswell.shared.runs.execute import context

    ctx = _contexts.get(record.id) or context(service, record)
    docs = [p.stem for p in (SAMPLE_CORPUS / "documents").iterdir()]
    load_batch(ctx, open_ledger(settings.ledger_url), docs, lambda d: None)
    assert counts_of(settings.ledger_url) == before
    # A repeated run under the same policy version (its receipts reused): nothing added.
    _, again, _ = drive_run(settings, ledger=True)
    assert again.state == "succeeded"
    assert counts_of(settings.ledger_url) == before


def test_a_reprocessing_run_under_another_policy_version_adds_a_version_of_each_fact(settings):
    from click.testing import CliRunner

    from groundswell.shared.cli.app import main
    from groundswell.shared.ledger.history import fact_history
    from groundswell.shared.units.ledger import open_ledger

    service, first, _ = drive_run(settings, ledger=True)
    before = counts_of(settings.ledger_url)
    # A version that leaves admission alone: the same admission receipts, new facts beside.
    service.publish_policy(
        {"name": "team", "extends": "default@1", "verify": {"accept_through": "exact"}}
    )
    _, second, _ = drive_run(settings, policy="team@1", ledger=True)
    assert second.state == "succeeded"
    after = counts_of(settings.ledger_url)
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


def test_a_fact_of_a_document_admitted_on_its_nfc_form_is_located_in_the_document():
    """Admission reads a non-NFC document's NFC form, so its evidence offsets are the NFC
    text's; the ledger's span is the document's own (the receipt says it was normalized)."""
    from groundswell.shared.ledger.load import load_document

    original = "Sec.\u20012. Revenue of caf" + "e\u0301 Ltd\u037e $12 million in 2024."
    nfc = unicodedata.normalize("NFC", original)
    start = nfc.encode().index("café".encode())
    end = nfc.encode().index(b" in 2024")
    receipt = {
        "receipt_sha256": "ab" * 32,
        "normalized": {"form": "NFC"},
        "receipt": {
            "decisions": [
                {
                    "outcome": "admitted",
                    "field": "revenue",
                    "value": 12,
                    "evidence": {"start": start, "end": end},
                }
            ]
        },
    }

    def load():
        admit = ("receipts/admit/ab/x.json", receipt)
        return load_document(
            "d", original, run_id="r", policy_version="default@1", admit=admit, verify=None
        )

    loaded = load()
    assert loaded.errors == []
    span = loaded.claims[0].evidence[0]
    assert (
        original[span["start"] : span["end"]] == span["text"] == "cafe\u0301 Ltd\u037e $12 million"
    )
    # Read as offsets into the document itself, the same bytes would be another span.
    receipt.pop("normalized")
    moved = (
        load_document(
            "d",
            original,
            run_id="r",
            policy_version="default@1",
            admit=("receipts/admit/ab/x.json", receipt),
            verify=None,
        )
        .claims[0]
        .evidence[0]
    )
    assert moved["text"] != span["text"]


def _break_an_admitted_span(service, record) -> tuple[str, str, int, int]:
    """Seal again one admission receipt of ``record`` with one admitted decision's evidence
    ending past the document (a reused receipt is found by its inputs and opened by its
    digest, so the next run loads it as it is): (doc_id, receipt key, decision number, the
    document's admitted decisions)."""
    from groundswell.shared.receipts import open_receipt, seal
    from groundswell.shared.runs.index import RunIndex

    store = service.store(record.output)
    for row in RunIndex(store, record.id).rows():
        if row["kind"] != "admit" or not row["receipt"]:
            continue
        body = open_receipt(store.get(row["receipt"]), row["receipt"])
        decisions = body["receipt"]["decisions"]
        admitted = [i for i, d in enumerate(decisions) if d["outcome"] == "admitted"]
        if len(admitted) >= 2:
            decisions[admitted[0]]["evidence"] = {"start": 0, "end": 10**9}
            store.put(row["receipt"], seal(body)[0])
            return row["doc_id"], row["receipt"], admitted[0] + 1, len(admitted)
    raise AssertionError("no document of the sample corpus with two admitted decisions")


def _ledger_batches(service, record) -> list[str]:
    from groundswell.shared.runs.plan import read_step

    out, step = [], 1
    while (planned := read_step(service.store(record.output), record.id, step)) is not None:
        out += [b.batch for b in planned.batches if b.kind == "ledger"]
        step += 1
    return out


def test_a_ledger_unit_that_cannot_load_a_decision_fails_alone_named_in_the_run(settings):
    from groundswell.shared.runs.index import RunIndex

    service, base, _ = drive_run(settings)
    assert service.summary(base.id)["failed_units"] == 0
    doc_id, key, number, admitted = _break_an_admitted_span(service, base)
    service, record, _ = drive_run(settings, ledger=True)
    # The run finishes, with its errors counted.
    assert record.state == "partially_failed", record.error
    summary = service.summary(record.id)
    counts = summary["counts"]
    assert counts["errors.ledger"] == 1 and counts["errors"] == 1
    # Alone: that document's ledger unit is the run's one failed unit; every other loads.
    assert summary["failed_units"] == 1
    ledger_units = summary["units"]["ledger"]
    assert ledger_units["failed"] == 1
    assert ledger_units["computed"] == ledger_units["planned"] - 1 == summary["documents"] - 1
    assert summary["units"]["admit"]["failed"] == summary["units"]["verify"]["failed"] == 0
    # ...and the document's other facts went in.
    assert counts["ledger.facts"] == counts["candidates.outcome.admitted"] - 1
    assert counts_of(settings.ledger_url)["facts"] == counts["ledger.facts"]
    assert len(facts_of(settings.ledger_url, doc_id)) == admitted - 1
    # Named: the receipt, the decision and the field, where failed units of any kind are.
    unit = f"ledger/{doc_id}"
    (error,) = [e for e in summary["errors"] if e["unit"] == unit]
    assert (error["file"], error["line"], error["field"]) == (key, number, "evidence")
    assert "is not in the document" in error["message"]
    index = RunIndex(service.store(record.output), record.id)
    failed = [r for r in index.rows() if r["status"] == "failed"]
    assert [(r["unit"], r["kind"], r["errors_total"]) for r in failed] == [(unit, "ledger", 1)]
    assert unit in {r["unit"] for r in index.document(doc_id)}
    assert index.units == summary["index"]["units"]
    progress = service.progress(record.id)
    assert (progress.planned, progress.done, progress.failed) == (index.units, index.units, 1)
    # The report's page of the document shows the error where it came from.
    page = run_report(service, record.id, document=doc_id)
    assert f"{key}:{number}" in page and "is not in the document" in page


def test_a_failed_ledger_unit_counts_once_redelivered_and_rebuilt_from_storage(settings):
    """Before finalize: the failed unit is planned, done and failed once in the run's
    progress; a second delivery of its batch adds nothing; a lost Redis rebuilt from storage
    gives the same progress and the same summary."""
    import redis

    from groundswell.shared.runs.recover import rebuild_run

    service, base, _ = drive_run(settings)
    _break_an_admitted_span(service, base)
    service, record, kinds = drive_run(settings, ledger=True, hold=("finalize",))
    assert kinds[-1] == "finalize" and not service.get(record.id).terminal
    live = service.runs.progress(record.id)
    assert live.failed == 1 and live.done == live.planned
    assert live.counters["units.ledger.failed"] == 1 and live.counters["errors.ledger"] == 1
    # Deterministic, so never retried: each ledger batch was sent, and run, once.
    batches = _ledger_batches(service, record)
    assert kinds.count("ledger") == len(batches) > 0
    for batch in batches:
        assert service.execute(record.id, batch, "token-again") != "computed"
    assert service.runs.progress(record.id) == live
    redis.Redis.from_url(settings.state_redis_url).flushall()
    rebuild_run(service, service.store(record.output), record.id)
    rebuilt = service.runs.progress(record.id)
    assert (rebuilt.planned, rebuilt.done, rebuilt.failed) == (
        live.planned,
        live.done,
        live.failed,
    )
    assert {k: v for k, v in rebuilt.counters.items() if k.startswith(("units.", "errors"))} == {
        k: v for k, v in live.counters.items() if k.startswith(("units.", "errors"))
    }
    service.finalize(record.id)
    summary = service.summary(record.id)
    assert summary["failed_units"] == 1 and summary["counts"]["errors.ledger"] == 1
    assert summary["index"]["units"] == live.planned


def test_a_row_the_database_refuses_fails_alone_named_by_its_receipt_line(postgres_url):
    """PostgreSQL cannot hold a NUL character in text: that quotation's claim is refused and
    named (receipt file and line); the document's other rows are written."""
    from groundswell.shared.ledger.load import load_document
    from groundswell.shared.ledger.store import Ledger
    from groundswell.shared.units.ledger import _write

    text = "Acme acquired Beta in 2024."
    records = [
        {
            "line": line,
            "record": {"id": f"q{line}", "claim": quote},
            "certificate": {"verdict": "grounded", "tier": "exact", "start": 0, "end": 4},
        }
        for line, quote in ((1, "Acme"), (2, "Ac\x00me"), (3, "Acme"))
    ]
    verify = ("receipts/verify/ef/y.json", {"receipt_sha256": "ef" * 32, "records": records})
    loaded = load_document(
        "d", text, run_id="r", policy_version="default@1", admit=None, verify=verify
    )
    with Ledger.open(postgres_url) as ledger:
        refused, errors = _write(ledger, loaded)
        assert [(e.file, e.line, e.field) for e in errors] == [
            ("receipts/verify/ef/y.json", 2, "record")
        ]
        assert "0x00" in errors[0].message  # the NUL character, as the server names it
        assert refused == {loaded.claims[1].claim["id"]}
        assert ledger.state()["claims"] == 2
    assert loaded.counters(refused)["ledger.quotations"] == 2


def test_a_schedule_keeps_ledger_and_its_runs_carry_it(settings):
    """Stored with the schedule; a schedule stored before the option existed loads without it."""
    from groundswell.shared.runs.schedules import PREFIX, ScheduleSpec
    from groundswell.shared.runs.service import RunService
    from groundswell.shared.runs.state import RunStore, redis_client

    sent: list = []
    service = RunService(
        settings, RunStore(redis_client(settings.state_redis_url)), lambda *a: sent.append(a)
    )
    spec = ScheduleSpec(corpus=str(SAMPLE_CORPUS), every_seconds=3600, ledger=True)
    loading = service.schedules.add(spec)
    plain = service.schedules.add(spec.model_copy(update={"ledger": False}))
    older = plain.model_dump()
    del older["ledger"]
    service.runs.r.hset(PREFIX + "s", plain.id, json.dumps(older))
    assert service.schedules.get(loading.id).ledger is True
    assert service.schedules.get(plain.id).ledger is False
    runs = {s: service.fire_schedule(s, "publish:default@2") for s in (loading.id, plain.id)}
    assert runs[loading.id].ledger is True and runs[plain.id].ledger is False
    assert service.get(runs[loading.id].id).ledger is True


def test_a_ledger_run_of_a_corpus_read_in_place_finds_each_record_by_its_batch(
    settings, shared_corpus, tmp_path, monkeypatch
):
    """LangExtract files read in place, ledger on: each ledger unit reads its documents'
    records by its batch's listing entries, never the file from its start."""
    from groundswell.shared.formats.source import ProducerCorpus
    from tests.shared.formats import lx_fixtures

    corpus = tmp_path / "lx"
    lx_fixtures.write(shared_corpus, corpus, 12)
    (corpus / "schema.json").write_text(json.dumps(lx_fixtures.SCHEMA))
    (corpus / "corpus.yaml").write_text("format: langextract\nschema: schema.json\n")
    scans: list[object] = []
    original = ProducerCorpus.listed_documents

    def listed(self, cursor):
        scans.append(cursor)
        return original(self, cursor)

    monkeypatch.setattr(ProducerCorpus, "listed_documents", listed)
    # One converted document kept: each unit reads its record again, as in another process.
    monkeypatch.setattr("groundswell.shared.formats.source.CONVERTED_BYTES", 1)
    from groundswell.shared.runs.models import RunSpec

    service, record, _ = drive(settings, RunSpec(corpus=str(corpus), ledger=True))
    assert record.state == "succeeded", record.error
    summary = service.summary(record.id)
    assert summary["units"]["ledger"]["computed"] == 12
    assert summary["counts"]["ledger.facts"] == summary["counts"]["candidates.outcome.admitted"]
    # Planning pages the source (its steps start from their cursors); no unit scans it.
    assert scans and all(c is None or "file" in c for c in scans)
    assert len(scans) <= 4, scans
