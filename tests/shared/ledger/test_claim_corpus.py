"""Claims carry their corpus (issue 25 item 8): a run's claims the run's corpus, an import's
the imported corpus (none for a file outside a corpus), so a team's key can be shown the
claims of its corpora only; the claims listing filters by the corpora a key sees."""

from __future__ import annotations

import io

from sqlalchemy import text

from groundswell.shared.ledger.export import LedgerReader, write_csv_edges
from groundswell.shared.ledger.history import history_page
from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.path import path
from groundswell.shared.ledger.queries import claims, disagreements, state, write_facts
from groundswell.shared.ledger.resolve import resolve
from groundswell.shared.ledger.review import listed, queue, unseen
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


def two_teams(ledger, root) -> None:
    """Two teams' claims about the same entities, in ``ledger`` (corpora under ``root``):
    team-a's affirm that Acme acquired Beta, and its auditor rejects it (a contradiction of
    team-a's own); team-b's say Acme acquired Gamma (an objects disagreement with team-a's
    claim) and reject the acquisition of Beta too (a contradiction with team-a's claim).
    Facts on the acquisitions give three prices: team-a's two, team-b's one."""
    quote, rejected = "Acme Ltd hereby acquires Beta Inc", "does not accept that Acme Ltd"
    lines = {
        "team-a": [
            claim("contract:a1", quote),
            claim("contract:a3", rejected, modality="rejected", asserter="auditor"),
        ],
        "team-b": [
            claim("contract:b1", quote, object_id="Gamma Holdings"),
            claim("contract:b3", rejected, modality="rejected", asserter="auditor"),
        ],
    }
    for team, team_lines in lines.items():
        corpus = make_corpus(root / team, {"contract": CONTRACT}, {"contract": team_lines})
        import_into(ledger, str(corpus))
    prices = (("contract:a1", 1), ("contract:a3", 3), ("contract:b1", 2))
    write_facts(ledger, [{"claim_id": c, "field": "price", "value": v} for c, v in prices])


def test_disagreements_paths_state_and_exports_keep_to_a_team_s_corpora(ledger, tmp_path):
    """On each backend (PostgreSQL walks contradictions and paths its own way): a team's
    disagreements have its own sides only, its path search walks its claims, its state
    counts them and its export holds them."""
    two_teams(ledger, tmp_path)
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'team-a'}").sees
    bob = parse_api_key(f"bob:runs:{hash_api_key('j')}:{tmp_path / 'team-b'}").sees

    def sides(kind: str, sees=None, **filters) -> list[list[str]]:
        rows = disagreements(ledger, kind, sees=sees, **filters).items
        if kind == "contradiction":
            return [[c["claim_id"][9:] for c in row["sides"]] for row in rows]
        return [[s["claims"][0]["claim_id"][9:] for s in row["sides"]] for row in rows]

    assert sides("contradiction") == [["a1", "a3"], ["a1", "b3"]]
    assert sides("contradiction", ana) == sides("contradiction", ana, subject="Acme Ltd")
    assert sides("contradiction", ana, resolved=True) == [["a1", "a3"]]
    assert sides("contradiction", bob) == sides("contradiction", bob, subject="Acme Ltd") == []
    assert sides("objects") == [["a1", "b1"]] and sides("objects", ana) == []
    assert sides("facts") == [["a1", "b1", "a3"]] and sides("facts", ana) == [["a1", "a3"]]
    assert sides("facts", bob) == []

    assert [h["claim_id"] for h in path(ledger, "Beta Inc", "Gamma Holdings").hops] == [
        "contract:a1",
        "contract:b1",
    ]
    assert path(ledger, "Beta Inc", "Gamma Holdings", sees=ana).unknown == ["Gamma Holdings"]
    walked = path(ledger, "Beta Inc", "Gamma Holdings", sees=bob)
    assert not walked.found and walked.unknown == []

    assert (state(ledger)["claims"], state(ledger, ana)["claims"]) == (4, 2)
    assert state(ledger, bob)["entities"] == 3  # b3 names Beta, b1 Gamma, both Acme

    out = io.StringIO()
    assert write_csv_edges(LedgerReader(ledger, page_size=1, sees=ana), out).claims == 2
    assert "contract:b1" not in out.getvalue()
    names = [e.label for e in LedgerReader(ledger, page_size=1, sees=ana).entities()]
    assert sorted(names) == ["Acme Ltd", "Beta Inc"]


def held_merges(ledger, root) -> dict[str, str]:
    """``two_teams`` and two merges resolve holds: Delte Corp into Delta Corp (a near
    spelling, both named by team-a's claims only) and Acme Products into Acme Ltd (an extra
    word; Acme Ltd is in both teams' claims). Their question ids, by the asked label."""
    two_teams(ledger, root)
    quote = "Acme Ltd hereby acquires Beta Inc"
    more = {
        "team-a/more": claim("contract:a5", quote, subject_id="Delta Corp", object_id="Delte Corp"),
        "team-b/more": claim("contract:b5", quote, object_id="Acme Products"),
    }
    for where, line in more.items():
        import_into(
            ledger, str(make_corpus(root / where, {"contract": CONTRACT}, {"contract": [line]}))
        )
    resolve(ledger)
    return {q["label"]: q["id"] for q in listed(ledger).items}


def test_a_team_key_lists_only_the_merges_of_its_own_claims(ledger, tmp_path):
    """A held merge is a team key's when every claim its answer moves is of the key's
    corpora; entities are shared, so one moving another team's claims is not."""
    ids = held_merges(ledger, tmp_path)
    assert set(ids) == {"Delte Corp", "Acme Products"}
    ana = parse_api_key(f"ana:runs:{hash_api_key('k')}:{tmp_path / 'team-a'}").sees
    bob = parse_api_key(f"bob:runs:{hash_api_key('j')}:{tmp_path / 'team-b'}").sees
    assert [q["id"] for q in listed(ledger, sees=ana).items] == [ids["Delte Corp"]]
    assert listed(ledger, sees=bob).items == []
    assert queue(ledger, ana)["open"] == 1 and queue(ledger)["open"] == 2
    assert queue(ledger, bob)["open"] == 0
    assert unseen(ledger, list(ids.values()), ana) == [ids["Acme Products"]]
    assert unseen(ledger, list(ids.values()), bob) == sorted(ids.values())
