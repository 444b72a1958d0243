"""The ledger on both backends (an embedded SQLite file; a private PostgreSQL server): the
same migrations, the same writes (executemany; COPY on PostgreSQL), the same counts."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.models import Base, ClaimRow, EvidenceRow
from groundswell.shared.ledger.store import Ledger, database_url, head_revision
from groundswell.shared.ledger.vocab import load_vocabulary
from groundswell.shared.settings import Settings
from tests.shared.ledger.corpora import CONTRACT, CONTRACT_CLAIMS, VOCAB, claim, make_corpus


def test_opening_migrates_to_the_newest_revision_once(ledger_url):
    with Ledger.open(ledger_url, migrate=False) as store:
        assert store.revision() is None
        assert store.migrate() == (None, head_revision())
    with Ledger.open(ledger_url) as store:
        assert store.revision() == head_revision() == "0001"
        assert store.migrate() == ("0001", "0001")


def test_the_migrated_schema_is_the_models(ledger):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    with ledger.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
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


def test_claims_are_written_in_batches_across_files(ledger, tmp_path):
    docs = {f"d{i}": f"Doc {i}: Acme Ltd hereby acquires Beta Inc.\n" for i in range(5)}
    rels = {
        f"d{i}": [claim(f"d{i}:{j}", "Acme Ltd hereby acquires Beta Inc") for j in range(3)]
        for i in range(5)
    }
    corpus = make_corpus(tmp_path / "c", docs, rels)
    seen = []
    report = import_into(ledger, str(corpus), batch_claims=4, progress=seen.append)
    assert report.stored == 15 and report.files == 5 and len(seen) == 5
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
