"""The ledger on both backends (an embedded SQLite file; a private PostgreSQL server): the
same migrations, the same writes (executemany; COPY on PostgreSQL), the same counts."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.models import UNMODELLED, Base, ClaimRow, EvidenceRow, entity_id
from groundswell.shared.ledger.store import Ledger, database_url, head_revision
from groundswell.shared.ledger.vocab import load_vocabulary
from groundswell.shared.settings import Settings
from tests.shared.ledger.corpora import CONTRACT, CONTRACT_CLAIMS, VOCAB, claim, make_corpus


def test_opening_migrates_to_the_newest_revision_once(ledger_url):
    with Ledger.open(ledger_url, migrate=False) as store:
        assert store.revision() is None
        assert store.migrate() == (None, head_revision())
    with Ledger.open(ledger_url) as store:
        head = head_revision()
        assert store.revision() == head and head >= "0002"
        assert store.migrate() == (head, head)


def test_the_migrated_schema_is_the_models(ledger):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    with ledger.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": lambda name, *_: name not in UNMODELLED}
        )
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_an_import_stores_claims_evidence_entities_and_the_vocabulary(ledger, tmp_path):
    corpus = make_corpus(tmp_path / "c", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    report = import_into(ledger, str(corpus))
    assert report.stored == 3 and report.vocabulary == "contracts"
    assert [(r.line, r.code) for r in report.refusals] == [
        (4, "quote_not_found"),
        (5, "vocabulary"),
    ]
    state = ledger.state()
    assert state["claims"] == 3 and state["unaudited"] == 3 and state["documents"] == 1
    assert state["modality"] == {"assertion": 1, "rejected": 1, "reported": 1}
    assert state["tier"] == {"case": 1, "exact": 1, "whitespace": 1}
    # Acme Ltd twice (typed Party, untyped Entity), Beta Inc twice, Gamma Holdings once.
    assert state["entities"] == 5 and state["evidence"] == 3
    assert state["vocabularies"] == {"contracts": 2} and state["backend"] == ledger.dialect
    with ledger.engine.connect() as conn:
        rows = conn.execute(
            select(EvidenceRow.claim_id, EvidenceRow.start, EvidenceRow.end, EvidenceRow.text)
            .order_by(EvidenceRow.claim_id)
        ).all()  # fmt: skip
    for claim_id, start, end, stored in rows:
        assert CONTRACT[start:end] == stored, claim_id
    assert rows[1][3] == "Beta Inc owns Gamma Holdings"
    (vocab,) = ledger.vocabularies()
    assert vocab["relations"]["ACQUIRED"]["subject"] == ["Party"]
    assert vocab["digest"] == load_vocabulary(VOCAB, "x").digest


def test_importing_again_replaces_claims_by_id_and_never_duplicates(ledger, tmp_path):
    corpus = make_corpus(tmp_path / "c", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    import_into(ledger, str(corpus))
    import_into(ledger, str(corpus))
    assert ledger.state()["claims"] == 3 and ledger.state()["evidence"] == 3
    # The same id with another quote: the claim and its evidence are replaced.
    make_corpus(
        tmp_path / "c",
        {},
        {"contract": [claim("k:1", "effective 1 March 2026", modality="conjecture")]},
    )
    import_into(ledger, str(corpus))
    with ledger.engine.connect() as conn:
        row = conn.execute(select(ClaimRow.modality).where(ClaimRow.id == "k:1")).scalar_one()
        spans = conn.execute(
            select(EvidenceRow.text).where(EvidenceRow.claim_id == "k:1")
        ).scalars().all()  # fmt: skip
    assert row == "conjecture" and spans == ["effective 1 March 2026"]
    assert ledger.state()["claims"] == 3


MEMO = "MEMO\n\nWe hear that Acme Ltd hereby acquires Beta Inc.\n"
NOTE = "NOTE\n\nAcme Ltd hereby acquires Beta Inc, says the note.\n"


def _pipeline_fact(ledger: Ledger) -> str:
    """A fact a run's ledger unit loaded from an admission receipt of ``contract``: its id."""
    from groundswell.shared.ledger.load import load_document
    from groundswell.shared.ledger.queries import write_facts

    start = CONTRACT.index("Acme Ltd")
    decision = {"outcome": "admitted", "field": "buyer", "value": "Acme Ltd",
                "evidence": {"start": start, "end": start + len("Acme Ltd")}}  # fmt: skip
    receipt = {"receipt_sha256": "sha256:" + "ab" * 32, "receipt": {"decisions": [decision]}}
    loaded = load_document(
        "contract", CONTRACT, run_id="r1", policy_version="default@1",
        admit=("receipts/contract.json", receipt), verify=None,
    )  # fmt: skip
    ledger.write_claims(loaded.claims)
    write_facts(ledger, loaded.facts)
    return loaded.claims[0].claim["id"]


@pytest.mark.parametrize(("bulk", "batch_claims"), [(False, 5000), (False, 1), (True, 5000)])
def test_an_import_never_replaces_a_claim_of_another_document_or_of_the_pipeline(
    ledger, tmp_path, bulk, batch_claims
):
    from groundswell.shared.ledger.importer import OWNED
    from groundswell.shared.ledger.models import FactRow

    import_into(ledger, str(make_corpus(tmp_path / "c", {"contract": CONTRACT},
                                        {"contract": CONTRACT_CLAIMS})))  # fmt: skip
    fact = _pipeline_fact(ledger)
    quote = "Acme Ltd hereby acquires Beta Inc"
    other = make_corpus(
        tmp_path / "other",
        {"memo": MEMO, "note": NOTE},
        {
            "memo": [
                claim("k:1", quote),  # contract's claim
                claim(fact, quote),  # the pipeline's fact
                claim("quote:" + "0" * 32, quote),  # a pipeline id, stored or not
                claim("m:1", quote),
                claim("m:shared", quote),
            ],
            "note": [claim("m:shared", quote), claim("n:1", quote)],  # memo has m:shared
        },
        vocab=None,
    )
    for _ in range(2):  # and again: a document's own claims are still replaced
        report = import_into(ledger, str(other), bulk=bulk, batch_claims=batch_claims)
        refused = sorted((r.file, r.line, r.field, r.code) for r in report.refusals)
        assert refused == [
            ("relations/memo.jsonl", 1, "claim_id", OWNED),
            ("relations/memo.jsonl", 2, "claim_id", OWNED),
            ("relations/memo.jsonl", 3, "claim_id", OWNED),
            ("relations/note.jsonl", 1, "claim_id", OWNED),
        ]
        said = {f"{r.file}:{r.line}": str(r) for r in report.refusals}
        assert said["relations/memo.jsonl:1"].startswith("relations/memo.jsonl:1:claim_id: ")
        assert "'k:1'" in said["relations/memo.jsonl:1"]
        assert "'contract'" in said["relations/memo.jsonl:1"]
        assert "the pipeline's" in said["relations/memo.jsonl:2"]
        assert "'memo'" in said["relations/note.jsonl:1"]
        assert report.stored == 3 and sum(report.tiers.values()) == 3
        assert report.as_dict()["refused"] == 4
    with ledger.engine.connect() as conn:
        owners = dict(conn.execute(select(ClaimRow.id, ClaimRow.document_id)).all())
        spans = dict(conn.execute(select(EvidenceRow.claim_id, EvidenceRow.document_id)).all())
        facts = conn.execute(select(FactRow.claim_id, FactRow.field)).all()
    assert owners == {"k:1": "contract", "k:2": "contract", "k:3": "contract",
                      fact: "contract", "m:1": "memo", "m:shared": "memo", "n:1": "note"}  # fmt: skip
    assert spans == owners and facts == [(fact, "buyer")]


def test_claims_are_written_in_batches_across_files(ledger, tmp_path):
    docs = {f"d{i}": f"Doc {i}: Acme Ltd hereby acquires Beta Inc.\n" for i in range(5)}
    rels = {
        f"d{i}": [claim(f"d{i}:{j}", "Acme Ltd hereby acquires Beta Inc") for j in range(3)]
        for i in range(5)
    }
    corpus = make_corpus(tmp_path / "c", docs, rels)
    seen = []
    report = import_into(
        ledger, str(corpus), batch_claims=4, progress=lambda done, total: seen.append((done, total))
    )
    assert report.stored == 15 and report.files == 5 and seen == [(i, 5) for i in range(1, 6)]
    assert ledger.state()["claims"] == 15 and ledger.state()["documents"] == 5


def test_the_schema_refuses_what_the_importer_would_never_write(ledger, tmp_path):
    corpus = make_corpus(tmp_path / "c", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    import_into(ledger, str(corpus))
    with pytest.raises(IntegrityError), ledger.engine.begin() as conn:
        conn.execute(text("UPDATE claims SET modality = 'probably'"))
    with pytest.raises(IntegrityError), ledger.engine.begin() as conn:
        conn.execute(text('UPDATE evidence SET "end" = "start"'))


def test_the_default_ledger_is_an_embedded_sqlite_file_in_the_data_folder(monkeypatch):
    monkeypatch.delenv("GROUNDSWELL_LEDGER_URL", raising=False)
    url = Settings(_env_file=None).ledger_database_url
    assert url.startswith("sqlite:///") and url.endswith("/groundswell/ledger.sqlite3")
    assert Settings(ledger_url="postgresql://u@h/db").ledger_database_url == "postgresql://u@h/db"
    assert database_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert database_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert database_url("/tmp/x.db") == "sqlite:////tmp/x.db"
    assert database_url("sqlite:///rel.db") == "sqlite:///rel.db"


def test_openers_at_the_same_time_migrate_once(ledger_url):
    from concurrent.futures import ThreadPoolExecutor

    def open_and_count(_: int) -> int:
        with Ledger.open(ledger_url) as store:
            return store.state()["claims"]

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(open_and_count, range(4))) == [0, 0, 0, 0]
    with Ledger.open(ledger_url) as store:
        assert store.revision() == head_revision()


def test_a_bulk_write_of_ten_thousand_claims(ledger):
    """Bulk loading (COPY on PostgreSQL, executemany on SQLite) in one transaction; the rate is
    printed, not asserted (bench/ prints rates against goals)."""
    import time

    claims = _generated(10_000, subjects=997, objects=991, documents=50)
    started = time.perf_counter()
    assert ledger.write_claims(claims) == 10_000
    took = time.perf_counter() - started
    print(f"{ledger.dialect}: 10,000 claims in {took:.2f} s ({10_000 / took:,.0f} claims/s)")
    state = ledger.state()
    assert state["claims"] == 10_000 and state["evidence"] == 10_000 and state["documents"] == 50
    assert state["entities"] == len(
        {f"E{i % 997}" for i in range(10_000)} | {f"E{(i * 7) % 991}" for i in range(10_000)}
    )
    assert state["modality"] == {"assertion": 10_000}


def test_the_postgresql_fixture_fails_naming_what_to_install_when_the_server_is_missing(
    monkeypatch,
):
    from groundswell.shared.ledger import pgserver

    monkeypatch.setattr(pgserver.shutil, "which", lambda _name: None)
    monkeypatch.setattr(pgserver.glob, "glob", lambda _pattern: [])
    with pytest.raises(pgserver.PostgresUnavailable, match="apt-get install postgresql"):
        pgserver.bindir()


def _generated(
    n: int,
    start: int = 0,
    modality: str = "assertion",
    *,
    subjects: int = 37,
    objects: int = 41,
    documents: int = 5,
):
    """``n`` claims ``g:<start>``... between entities ``E<i % subjects>`` and
    ``E<7i % objects>`` in ``documents`` documents."""
    from datetime import UTC, datetime

    from groundswell.shared.ledger.store import ClaimIn

    now = datetime(2026, 12, 1, tzinfo=UTC)
    out = []
    for i in range(start, start + n):
        s, o = f"E{i % subjects}", f"E{(i * 7) % objects}"
        cid = f"g:{i}"
        out.append(
            ClaimIn(
                claim={
                    "id": cid, "document_id": f"d{i % documents}", "relation": "OWNS",
                    "subject_entity_id": entity_id("Party", s),
                    "object_entity_id": entity_id("Party", o),
                    "modality": modality, "polarity": "affirmed", "asserter": "the filing",
                    "hedge_markers": ["may"] if i % 2 else [], "qualifier": None,
                    "confidence": 0.5, "verified": None, "verifier_note": None,
                    "vocabulary": None, "origin": f"g:{i}", "extra": {"n": i} if i % 3 else {},
                    "recorded_at": now,
                },
                evidence=[{"claim_id": cid, "seq": 0, "document_id": f"d{i % documents}", "start": 0,
                           "end": 9, "quote": "E owns E.", "text": "E owns E.", "tier": "exact"}],
                entities=[(entity_id("Party", s), "Party", s), (entity_id("Party", o), "Party", o)],
            )
        )  # fmt: skip
    return out


def _indexes(store: Ledger) -> list[str]:
    sql = (
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
        if store.dialect == "postgresql"
        else "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    )
    with store.engine.connect() as conn:
        return sorted(conn.execute(text(sql)).scalars())


def _dump(store: Ledger) -> list:
    with store.engine.connect() as conn:
        return [
            sorted(tuple(r) for r in conn.execute(text(f"SELECT * FROM {table}")).all())
            for table in ("entities", "claims", "evidence")
        ]


def test_a_bulk_load_stores_what_batch_writes_store_and_keeps_the_schema(ledger_url, tmp_path):
    """bulk_load (on PostgreSQL: indexes and foreign keys dropped for the load, made again at
    its end) stores what write_claims batch by batch stores, replacing claims by id."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    batches = [_generated(300), _generated(300, 200, "reported"), _generated(50, 1000)]
    with Ledger.open(ledger_url) as bulk:
        before = _indexes(bulk)
        assert "ix_claims_object_subject" in before
        bulk.write_claims(_generated(20, 1030, "question"))  # stored before: replaced
        assert bulk.bulk_load(iter(batches)) == 650
        with Ledger.open(str(tmp_path / "reference.sqlite3")) as reference:
            reference.write_claims(_generated(20, 1030, "question"))
            for batch in batches:
                reference.write_claims(batch)
            expected = _dump(reference)
        got = _dump(bulk)
        assert len(got[1]) == 550 and len(got[2]) == 550
        norm = lambda rows: [  # noqa: E731  (the backends give JSON and times their own way)
            tuple(str(v) if not isinstance(v, int | float) else v for v in r) for r in rows
        ]
        assert [len(t) for t in got] == [len(t) for t in expected]
        assert norm(got[0]) == norm(expected[0]) and norm(got[2]) == norm(expected[2])
        assert [r[:8] for r in got[1]] == [r[:8] for r in expected[1]]
        with bulk.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"include_name": lambda name, *_: name not in UNMODELLED}
            )
            assert compare_metadata(context, Base.metadata) == []
        assert _indexes(bulk) == before  # those outside the models too (search's)
        with pytest.raises(IntegrityError), bulk.engine.begin() as conn:  # keys hold again
            conn.execute(text("UPDATE claims SET subject_entity_id = 'nobody' WHERE id = 'g:1'"))


def test_a_bulk_load_cut_short_in_its_builds_keeps_them_and_finishes_later(postgres_url):
    """The data of a bulk load commits first, its foreign keys again in force but their check
    of the whole table left for later; the indexes and unique constraints it dropped are made
    again from the journal, a lane at a time; a build that fails stays there, queries answer
    meanwhile, and ``ledger migrate`` finishes it once the cause is mended, and checks the
    keys."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from click.testing import CliRunner

    from groundswell.shared.cli import main
    from groundswell.shared.ledger.search import search
    from groundswell.shared.ledger.store import BuildError, ClaimIn

    def not_validated(store) -> list[str]:
        with store.engine.connect() as conn:
            return sorted(conn.execute(text(
                "SELECT conname FROM pg_constraint WHERE contype = 'f' AND NOT convalidated "
                "AND connamespace = current_schema()::regnamespace"
            )).scalars())  # fmt: skip

    with Ledger.open(postgres_url) as store:
        before = _indexes(store)
        batch = _generated(30)
        # Two entities of one type and label under ids that are not derived from them: the
        # unique constraint on (type, label) cannot be made again.
        first = batch[0]
        twin = ("x-twin", "Party", first.entities[0][2])
        claim = {**first.claim, "subject_entity_id": twin[0]}
        batch[0] = ClaimIn(claim, first.evidence, [twin, first.entities[1]])
        with pytest.raises(BuildError) as failed:
            store.bulk_load(iter([batch]))
        assert [name for name, _ in failed.value.failed] == ["uq_entities_type"]
        # The search shards (lanes of their own) and every index before it were made.
        assert store.pending_builds() == ["analyze", "uq_entities_type"]
        assert store.state()["claims"] == 30 and store.state()["builds_pending"] == 2
        assert len(search(store, "owns", limit=50).items) == 30
        assert not_validated(store) == [
            "fk_claims_object_entity_id_entities",
            "fk_claims_subject_entity_id_entities",
            "fk_evidence_claim_id_claims",
        ]
        with pytest.raises(IntegrityError), store.engine.begin() as conn:  # yet in force
            conn.execute(text("UPDATE claims SET subject_entity_id = 'nobody' WHERE id = 'g:1'"))
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE entities SET label = 'E0 twin' WHERE id = 'x-twin'"))
        done = CliRunner().invoke(main, ["ledger", "migrate", "--db", postgres_url])
        assert done.exit_code == 0, done.output
        assert "made again what an unfinished bulk load left: analyze, uq_entities_type" in (
            done.output
        )
        assert "validated the keys bulk loads left unchecked: fk_claims_object" in done.output
        assert store.pending_builds() == [] and not_validated(store) == []
        assert _indexes(store) == before
        with store.engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"include_name": lambda name, *_: name not in UNMODELLED}
            )
            assert compare_metadata(context, Base.metadata) == []


def test_a_bulk_load_refuses_a_claim_that_names_an_entity_it_does_not_carry(postgres_url):
    from groundswell.shared.ledger.store import ClaimIn

    with Ledger.open(postgres_url) as store:
        before = _indexes(store)
        batch = _generated(10)
        first = batch[3]
        batch[3] = ClaimIn(first.claim, first.evidence, first.entities[1:])
        with pytest.raises(ValueError, match="g:3: its subject and object must be among"):
            store.bulk_load(iter([batch]))
        odd = _generated(10)
        odd[2] = ClaimIn(odd[2].claim, [{**odd[2].evidence[0], "claim_id": "g:9"}], odd[2].entities)
        with pytest.raises(ValueError, match="g:2: evidence of another claim"):
            store.bulk_load(iter([odd]))
        # Nothing was written, and nothing dropped stayed dropped.
        assert store.state()["claims"] == 0 and store.pending_builds() == []
        assert _indexes(store) == before


def test_search_reads_each_shard_through_its_own_index(postgres_url):
    from sqlalchemy import event

    from groundswell.shared.ledger.search import search

    with Ledger.open(postgres_url) as store:
        store.write_claims(_generated(40))
        seen = []
        event.listen(
            store.engine,
            "before_cursor_execute",
            lambda conn, cur, sql, params, *_: seen.append((sql, params)),
        )
        assert len(search(store, "owns", limit=50).items) == 40
        sql, params = next((q, p) for q, p in seen if "ts_rank" in q)
        with store.engine.connect() as conn:
            raw = conn.connection.driver_connection
            with raw.cursor() as cur:
                cur.execute("SET enable_seqscan = off")
                cur.execute("EXPLAIN " + sql, params)
                plan = "\n".join(r[0] for r in cur.fetchall())
        assert "ix_evidence_quote_fts_0" in plan and "ix_evidence_quote_fts_1" in plan


def test_a_bulk_import_stores_what_an_import_stores(ledger_url, tmp_path):
    from click.testing import CliRunner

    from groundswell.shared.cli import main

    corpus = make_corpus(tmp_path / "c", {"contract": CONTRACT}, {"contract": CONTRACT_CLAIMS})
    with Ledger.open(str(tmp_path / "plain.sqlite3")) as plain:
        import_into(plain, str(corpus))
        want = plain.state()
    done = CliRunner().invoke(
        main, ["ledger", "import", str(corpus), "--db", ledger_url, "--bulk", "--json"]
    )
    assert done.exit_code == 0, done.output
    with Ledger.open(ledger_url) as bulk:
        got = bulk.state()
        assert bulk.pending_builds() == []
    same = ("claims", "modality", "tier", "documents", "entities", "evidence", "vocabularies")
    assert {k: got[k] for k in same} == {k: want[k] for k in same}


def test_a_path_walks_affirming_claims_through_the_indexes_only(postgres_url):
    # The stance rides in the path's two indexes (migration 0008), also as a bulk load makes
    # them again: a level's chunk never reads the claim rows to skip a denial.
    import psycopg

    from groundswell.shared.ledger.path import _Graph

    with Ledger.open(postgres_url) as store:
        store.bulk_load([_generated(2000)])
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE claims")  # the visibility map an index-only scan needs
            defs = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes").fetchall())
        for name in ("ix_claims_triple", "ix_claims_object_subject"):
            assert defs[name].endswith("INCLUDE (polarity, modality)"), defs[name]
        ids = [entity_id("Party", f"E{i}") for i in range(3)]
        with store.engine.connect() as conn:
            graph = _Graph(conn, [], [], budget=1_000)
            cur = graph.sql.cursor
            cur.execute("SET enable_seqscan = off")
            cur.execute("SET enable_bitmapscan = off")
            for forward in (True, False):
                sql, _ = graph.chunk_sql[forward]
                params = {**graph.params, "ids": ids, "limit": 256}
                cur.execute("EXPLAIN " + sql.format(after="", limit=graph.limit_sql), params)
                plan = "\n".join(r[0] for r in cur.fetchall())
                index = "ix_claims_triple" if forward else "ix_claims_object_subject"
                assert f"Index Only Scan using {index}" in plan, plan
