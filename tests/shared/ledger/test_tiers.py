"""Evidence tiers (migration 0005): the ledger holds a span at any tier of the locator or of
verification's ladder, on both backends; a run's quotations are stored at the tier
verification found them, typography and skeleton included, and counted; a ledger migrated
from 0003 keeps its rows and its search."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from groundswell.shared.ledger.load import load_document
from groundswell.shared.ledger.locate import TIERS as LOCATOR_TIERS
from groundswell.shared.ledger.models import EVIDENCE_TIERS, EvidenceRow
from groundswell.shared.ledger.search import search
from groundswell.shared.ledger.store import Ledger, _alembic_config, head_revision
from groundswell.shared.summary import TIERS as LADDER_TIERS
from tests.shared.ledger.old_schema import todays_claim_columns

TEXT = "Acme acquired Beta in 2024. Gamma sold Delta. Epsilon bought Zeta."


def _verify_receipt(tiers: list[str]) -> tuple[str, dict]:
    """A verification receipt whose i-th quotation is grounded at ``tiers[i]`` (each on the
    same span: what is tested is the tier, not the locating)."""
    records = [
        {
            "line": i + 1,
            "record": {"id": f"q{i}", "claim": "Acme acquired Beta"},
            "certificate": {"verdict": "grounded", "tier": tier, "start": 0, "end": 18},
        }
        for i, tier in enumerate(tiers)
    ]
    return "receipts/verify/ab/x.json", {"receipt_sha256": "cd" * 32, "records": records}


def _load(tiers: list[str], policy_version: str = "permissive@1"):
    return load_document(
        "d",
        TEXT,
        run_id="r",
        policy_version=policy_version,
        admit=None,
        verify=_verify_receipt(tiers),
    )


def test_the_evidence_tiers_are_the_locators_and_verifications():
    assert set(EVIDENCE_TIERS) == set(LOCATOR_TIERS) | set(LADDER_TIERS)
    assert EVIDENCE_TIERS[: len(LOCATOR_TIERS)] == LOCATOR_TIERS
    assert len(set(EVIDENCE_TIERS)) == len(EVIDENCE_TIERS)


def test_a_skeleton_quotation_is_stored_with_its_tier_and_counted(ledger):
    loaded = _load(["skeleton", "typography", "exact", "skeleton", "a-tier-of-its-own"])
    assert loaded.errors == []
    # A tier of a policy's own ladder is one the ledger does not hold: counted, not written.
    assert loaded.counters() == {
        "ledger.facts": 0,
        "ledger.quotations": 4,
        "ledger.quotations.tier.skeleton": 2,
        "ledger.quotations.tier.typography": 1,
        "ledger.quotations.tier.exact": 1,
        "ledger.quotations_skipped_tier": 1,
    }
    assert ledger.write_claims(loaded.claims) == 4
    assert ledger.state()["tier"] == {"exact": 1, "skeleton": 2, "typography": 1}
    with ledger.engine.connect() as conn:
        stored = dict(conn.execute(select(EvidenceRow.claim_id, EvidenceRow.tier)).all())
    assert sorted(stored.values()) == ["exact", "skeleton", "skeleton", "typography"]
    assert {c.claim["id"]: c.evidence[0]["tier"] for c in loaded.claims} == stored


def test_every_evidence_tier_is_held_and_no_other(ledger):
    ledger.write_claims(_load(list(EVIDENCE_TIERS)).claims)
    assert ledger.state()["tier"] == dict.fromkeys(EVIDENCE_TIERS, 1)
    with pytest.raises(IntegrityError), ledger.engine.begin() as conn:
        conn.execute(text("UPDATE evidence SET tier = 'fuzzy' WHERE tier = 'skeleton'"))


def test_a_ledger_of_revision_0003_migrates_with_its_rows_and_its_search(ledger_url):
    with Ledger.open(ledger_url, migrate=False) as store:
        with store.engine.begin() as conn:
            command.upgrade(_alembic_config(conn), "0003")
        with todays_claim_columns(store):
            store.write_claims(_load(["exact", "case", "whitespace"], "default@1").claims)
            # Written again: rows deleted and inserted, so the rowids SQLite's search follows
            # have a gap that a copy of the table would close.
            store.write_claims(_load(["exact"], "default@1").claims)
        assert store.migrate() == ("0003", head_revision())
        assert store.state()["tier"] == {"case": 1, "exact": 1, "whitespace": 1}
        before = {h["claim_id"] for h in search(store, "acquired", limit=20).items}
        assert len(before) == 3
        # After the migration: new tiers go in, and search sees what is written and replaced.
        later = _load(["exact", "case", "whitespace", "typography", "skeleton"], "permissive@1")
        store.write_claims(later.claims)
        store.write_claims(later.claims)
        found = {h["claim_id"] for h in search(store, "acquired", limit=20).items}
        assert found == before | {c.claim["id"] for c in later.claims}
        assert len(found) == 8
        # Down again: the old check cannot hold the new tiers, so their claims go.
        with store.engine.begin() as conn:
            command.downgrade(_alembic_config(conn), "0003")
        assert store.state()["tier"] == {"case": 2, "exact": 2, "whitespace": 2}
        store.migrate()  # and up: today's search reads what 0012 adds, filled in again
        assert len({h["claim_id"] for h in search(store, "acquired", limit=20).items}) == 6
        with store.engine.begin() as conn:
            command.downgrade(_alembic_config(conn), "0003")
        with pytest.raises(IntegrityError), store.engine.begin() as conn:
            conn.execute(text("UPDATE evidence SET tier = 'skeleton'"))
