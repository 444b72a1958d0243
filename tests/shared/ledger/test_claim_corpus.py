"""Claims carry their corpus (issue 25 item 8): a run's claims the run's corpus, an import's
the imported corpus (none for a file outside a corpus), so a team's key can be shown the
claims of its corpora only; the claims listing filters by the corpora a key sees."""

from __future__ import annotations

from sqlalchemy import text

from groundswell.shared.ledger.history import history_page
from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.queries import claims
from groundswell.shared.ledger.search import search
from groundswell.shared.settings import hash_api_key, parse_api_key
from tests.shared.ledger.corpora import CONTRACT, claim, make_corpus
from tests.shared.runs.test_ledger_units import drive_run, run_settings


def _corpora(ledger) -> dict[str, str | None]:
    with ledger.engine.connect() as conn:
        return dict(conn.execute(text("SELECT id, corpus FROM claims")).all())


def _team_corpus(root, team: str, claim_id: str):
    quote = "Acme Ltd hereby acquires Beta Inc"
    return make_corpus(root / team, {"contract": CONTRACT}, {"contract": [claim(claim_id, quote)]})


def test_imported_claims_carry_the_corpus_and_a_key_lists_its_own(ledger, tmp_path):
    a = _team_corpus(tmp_path, "team-a", "contract:a1")
    b = _team_corpus(tmp_path, "team-b", "contract:b1")
    import_into(ledger, str(a))
    import_into(ledger, str(b / "relations" / "contract.jsonl"))  # one file of a corpus
    assert _corpora(ledger) == {"contract:a1": str(a), "contract:b1": str(b)}
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'team-a'}")
    assert [c["claim_id"] for c in claims(ledger, sees=ana.sees).items] == ["contract:a1"]
    nobody = parse_api_key(f"cy:runs:{hash_api_key('c')}:{tmp_path / 'team-c'}")
    assert claims(ledger, sees=nobody.sees).items == []
    assert len(claims(ledger).items) == 2
    # Search finds the team's own claims only.
    assert [h["claim_id"] for h in search(ledger, "acquires", sees=ana.sees).items] == [
        "contract:a1"
    ]
    assert search(ledger, "acquires", sees=nobody.sees).items == []
    assert len(search(ledger, "acquires").items) == 2


def test_a_run_s_claims_carry_the_run_s_corpus(redis_server, tmp_path):
    from groundswell.shared.ledger.store import Ledger

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    _, record, _ = drive_run(run_settings(redis_server, tmp_path, url), ledger=True)
    assert record.state == "succeeded", record.error
    with Ledger.open(url) as ledger:
        corpora = _corpora(ledger)
        with ledger.engine.connect() as conn:
            doc, field = conn.execute(
                text(
                    "SELECT c.document_id, f.field FROM facts f JOIN claims c ON c.id = f.claim_id"
                )
            ).first()
        everyone = history_page(ledger, doc, field).items
        team = parse_api_key(f"ana:runs:{hash_api_key('k')}:{record.corpus}")
        other = parse_api_key(f"bob:runs:{hash_api_key('j')}:{tmp_path / 'elsewhere'}")
        assert everyone and history_page(ledger, doc, field, sees=team.sees).items == everyone
        assert history_page(ledger, doc, field, sees=other.sees).items == []
    assert corpora and set(corpora.values()) == {record.corpus}
