"""The ledger's second round (issue 32 items 1 to 6), each on both backends: search folds
case, accents and punctuation alike on SQLite and PostgreSQL; one bad line never stops an
import; "any case" is Unicode's; a denial links nothing; resolve's held questions once each;
search and path show a window of a long quote."""

from __future__ import annotations

import json
import re
from collections import Counter

from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.ledger.importer import import_into
from groundswell.shared.ledger.path import path
from groundswell.shared.ledger.resolve import cluster, resolve
from groundswell.shared.ledger.search import search
from tests.shared.ledger.graphs import C, record

# One fixture of many scripts: every query below finds the same claims on both backends.
MULTILINGUAL = [
    C("tr", "Efes", "SELLS", "İçecek", quote="Efes İçecek fiyatlarını artırdı"),
    C("en", "Acme", "SAYS", "I", quote="I think so, said the clerk"),
    C("curly", "Acme", "REPORTS", "Revenues", quote="The “Revenues” line rose — sharply"),
    C("fr", "Société Générale", "OWNS", "Beta", quote="Société Générale détient Beta"),
    C("de", "Acme", "ON", "Straße", quote="Die STRASSE ist lang"),
    C("el", "Acme", "IN", "Athens", quote="Γραφεία στην ΑΘΗΝΑ"),
    C("lig", "Acme", "FILED", "Beta", quote="the ﬁling was late"),
    C("host", "Acme", "AT", "Site", quote="see acme.example.com/records for the record"),
]
EXPECTED = {
    "İçecek": {"tr"},
    "içecek": {"tr"},
    "İÇECEK": {"tr"},
    "i": {"en"},
    "revenues": {"curly"},
    "“Revenues”": {"curly"},
    "SOCIETE": {"fr"},
    "société": {"fr"},
    "straße": {"de"},
    "αθηνα": {"el"},
    "filing": {"lig"},
    "example": {"host"},
}


def test_search_folds_the_query_and_the_text_alike_on_both_backends(ledger):
    record(ledger, MULTILINGUAL)
    found = {q: {h["claim_id"] for h in search(ledger, q, limit=50).items} for q in EXPECTED}
    assert found == EXPECTED


def _corpus(tmp_path, lines: list[dict]) -> str:
    (tmp_path / "documents").mkdir()
    (tmp_path / "relations").mkdir()
    (tmp_path / "documents" / "d.txt").write_text("Acme Ltd acquired Beta Inc in 2020.\n")
    body = "".join(json.dumps(x) + "\n" for x in lines)
    (tmp_path / "relations" / "d.jsonl").write_text(body)
    (tmp_path / "documents" / "e.txt").write_text("Beta Inc owns Gamma.\n")
    good = {"claim_id": "e1", "relation": "OWNS", "subject_id": "Beta Inc"}
    good |= {"object_id": "Gamma", "asserter": "the filing", "quote": "Beta Inc owns Gamma"}
    (tmp_path / "relations" / "e.jsonl").write_text(json.dumps(good) + "\n")
    return str(tmp_path)


def _claim(cid: str, **extra) -> dict:
    base = {"claim_id": cid, "relation": "ACQUIRED", "subject_id": "Acme Ltd"}
    base |= {"object_id": "Beta Inc", "asserter": "the filing"}
    return base | {"quote": "Acme Ltd acquired Beta Inc"} | extra


def test_a_line_the_database_cannot_hold_is_refused_alone_on_both_backends(ledger, tmp_path):
    corpus = _corpus(
        tmp_path,
        [
            _claim("d1"),
            _claim("d2", asserter="the\x00filing"),
            _claim("d3", subject_type="T" * 250),
            _claim("d4", note={"x": "a\x00b"}),
            _claim("d5"),
        ],
    )
    report = import_into(ledger, corpus)
    assert report.stored == 3  # d1, d5 and e1: every file's good lines
    where = sorted((r.line, r.field) for r in report.refusals)
    assert where == [(2, "asserter"), (3, "subject_type"), (4, "note.x")]
    assert all(r.file.endswith("relations/d.jsonl") for r in report.refusals)
    assert "NUL" in report.refusals[0].message
    assert "200 characters" in next(r for r in report.refusals if r.line == 3).message


def test_a_batch_the_database_refuses_is_written_claim_by_claim(ledger):
    """Past the importer's checks (a writer of its own), a claim the database refuses fails
    alone: its batch is retried claim by claim, each in a savepoint."""
    from groundswell.shared.ledger.queries import claims

    bad = C("bad", "Acme", "R" * 300, "Beta")  # relation: a String(200) on PostgreSQL
    refused: list[tuple[str, str]] = []
    rows = [C("ok1", "Acme", "OWNS", "Beta"), bad, C("ok2", "Beta", "OWNS", "Gamma")]
    if ledger.dialect == "sqlite":  # SQLite holds any length: make one fail its check instead
        rows[1] = C("bad", "Acme", "OWNS", "Beta", modality="rumour")
    record(ledger, rows, reject=lambda c, why: refused.append((c.claim["id"], why)))
    assert [r[0] for r in refused] == ["bad"] and refused[0][1]
    assert [c["claim_id"] for c in claims(ledger).items] == ["ok1", "ok2"]


def test_any_case_is_unicode_case_for_entity_names(ledger):
    record(ledger, [C("k1", "Société Générale", "OWNS", "Acme")])
    result = path(ledger, "SOCIÉTÉ GÉNÉRALE", "acme")
    assert result.found and [h["claim_id"] for h in result.hops] == ["k1"]
    assert path(ledger, "société générale", "ACME").found


def test_a_denial_links_nothing_whatever_the_modality_filter(ledger):
    record(ledger, [C("no", "Acme", "OWNS", "Beta", polarity="denied",
                      quote="Acme does not own Beta.")])  # fmt: skip
    for modality in (None, ["assertion"], ["assertion", "reported"]):
        result = path(ledger, "Acme", "Beta", modality=modality)
        assert not result.found, modality


def test_company_and_the_company_are_one_name():
    groups, held = cluster([("a", "Org", "Company", 3), ("b", "Org", "The Company", 1)])
    assert held == [] and [sorted(m[1] for m in g.members) for g in groups] == [
        ["Company", "The Company"]
    ]
    # Empty words only on both sides, and not the same ones: held, and said truly.
    _, held = cluster([("a", "Org", "Holdings Group", 3), ("b", "Org", "Group", 1)])
    assert held and all("not a known empty" not in h.reason for h in held)


def test_resolve_lists_each_held_question_once(ledger):
    # "Johnson" is held twice: a type conflict with the Org, a near spelling of "Johnston".
    record(
        ledger,
        [
            C("p1", "Johnson", "OWNS", "Beta", subject_type="Person"),
            C("p2", "Johnston", "OWNS", "Beta", subject_type="Person"),
            C("p3", "Johnston", "OWNS", "Gamma", subject_type="Person"),
            C("o1", "Johnson", "OWNS", "Gamma", subject_type="Org"),
            C("o2", "Johnson", "OWNS", "Delta", subject_type="Org"),
        ],
    )
    result = resolve(ledger)
    assert max(Counter(h.id for h in result.held).values()) > 1  # the pairs held
    ids = [q["id"] for q in result.as_dict()["held"]]
    assert len(ids) == len(set(ids)) == result.as_dict()["held_total"]
    twice = [q for q in result.as_dict()["held"] if q["also"]]
    assert twice  # the other pair of a question is listed with it


def test_search_and_path_show_a_window_around_the_match(ledger, ledger_url):
    filler = " ".join(["lorem ipsum dolor"] * 4000)
    quote = f"{filler} Acme acquired Beta on 3 May. {filler}"
    record(ledger, [C("long", "Acme", "ACQUIRED", "Beta", quote=quote)])
    runner = CliRunner()
    out = runner.invoke(main, ["ledger", "search", "acquires", "--db", ledger_url]).output
    assert "Acme acquired Beta" in out and len(out) < 1000 and "…" in out
    out = runner.invoke(main, ["ledger", "path", "Acme", "Beta", "--db", ledger_url]).output
    assert "Acme acquired Beta" in out and len(out) < 1000
    assert re.search(r"1 hops · 1 asserted", out)


def test_a_bulk_load_isolates_a_batch_the_database_refuses(ledger):
    from groundswell.shared.ledger.queries import claims
    from tests.shared.ledger.graphs import claims_in

    bad = C("bad", "Acme", "R" * 300, "Delta")  # relation: a String(200) on PostgreSQL
    if ledger.dialect == "sqlite":  # SQLite holds any length: make one fail its check instead
        bad = C("bad", "Acme", "OWNS", "Delta", modality="rumour")
    first = claims_in([C("ok1", "Acme", "OWNS", "Beta"), bad, C("ok2", "Beta", "OWNS", "Gamma")])
    second = claims_in([C("ok3", "Delta", "OWNS", "Acme")])  # Delta: sent with the bad claim
    refused: list[str] = []
    stored = ledger.bulk_load([first, second], reject=lambda c, _why: refused.append(c.claim["id"]))
    assert stored == 3 and refused == ["bad"]
    assert [c["claim_id"] for c in claims(ledger).items] == ["ok1", "ok2", "ok3"]
    assert path(ledger, "Delta", "Beta").found  # Delta's entity is there for ok3
