"""Disagreements, paths, search, claims and resolution on both backends (SQLite and the private
PostgreSQL server), their pages, and the CLI commands over them."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from groundswell.shared.cli import main
from groundswell.shared.ledger.models import entity_id
from groundswell.shared.ledger.path import path
from groundswell.shared.ledger.queries import (
    BadCursor,
    claims,
    disagreements,
    write_facts,
)
from groundswell.shared.ledger.resolve import resolve
from groundswell.shared.ledger.search import search, terms
from tests.shared.ledger.graphs import TYPE, C, random_graph, record
from tests.shared.ledger.old_schema import todays_claim_columns

CONTRACT = [
    C("k1", "Acme Ltd", "ACQUIRED", "Beta Inc", asserter="the agreement",
      quote="Acme Ltd hereby acquires Beta Inc"),
    C("k2", "Beta Inc", "OWNS", "Gamma Holdings", "reported", asserter="Reuters (rep. agreement)",
      quote="Reuters reports that Beta Inc owns Gamma Holdings"),
    C("k3", "Acme Ltd", "ACQUIRED", "Beta Inc", "rejected", asserter="the auditor",
      document="audit", quote="The auditor does not accept that Acme Ltd acquired Beta Inc"),
    C("k4", "Acme Ltd", "ACQUIRED", "Delta Corp", asserter="a press release",
      document="press", quote="Acme Ltd acquired Delta Corp"),
    C("k5", "Delta Corp", "OWNS", "Gamma Holdings", "rejected", asserter="the registry",
      document="registry", quote="Delta Corp does not own Gamma Holdings"),
]  # fmt: skip


def every_page(fetch, limit: int) -> list[dict]:
    rows, cursor = [], None
    while True:
        page = fetch(cursor=cursor, limit=limit)
        rows += page.items
        if page.next_cursor is None:
            return rows
        cursor = page.next_cursor


def test_contradictions_are_kept_side_by_side_with_asserter_modality_document_and_span(ledger):
    record(ledger, CONTRACT)
    page = disagreements(ledger)
    assert page.next_cursor is None and len(page.items) == 1
    row = page.items[0]
    assert (row["subject"], row["relation"], row["object"]) == ("Acme Ltd", "ACQUIRED", "Beta Inc")
    a, b = row["sides"]
    assert (a["asserter"], a["modality"], a["document_id"]) == ("the agreement", "assertion", "doc")
    assert (b["asserter"], b["modality"], b["document_id"]) == ("the auditor", "rejected", "audit")
    assert (b["start"], b["end"], b["quote"]) == (0, len(CONTRACT[2].quote), CONTRACT[2].quote)


def test_different_objects_for_one_subject_and_relation(ledger):
    record(ledger, CONTRACT)
    rows = disagreements(ledger, "objects").items
    assert [(r["subject"], r["relation"]) for r in rows] == [("Acme Ltd", "ACQUIRED")]
    sides = {s["object"]: [c["claim_id"] for c in s["claims"]] for s in rows[0]["sides"]}
    assert sides == {"Beta Inc": ["k1"], "Delta Corp": ["k4"]}  # k3 rejects: not an object


def test_facts_that_disagree_per_entity_field_and_key_across_documents_and_runs(ledger):
    record(
        ledger,
        [
            C("f1", "Acme Ltd", "HAS_FACT", "revenue", document="10k", quote="revenue 5"),
            C("f2", "Acme Ltd", "HAS_FACT", "revenue", document="10q", quote="revenue 6"),
            C("f3", "Acme Ltd", "HAS_FACT", "revenue", document="10q", quote="revenue 5 again"),
            C("f4", "Acme Ltd", "HAS_FACT", "employees", document="10k", quote="9 staff"),
        ],
    )
    write_facts(
        ledger,
        [
            {"claim_id": "f1", "field": "revenue", "key": "2025", "value": 5, "unit": "USD",
             "run_id": "r1", "policy_version": "default@1", "receipt_digest": "sha256:" + "a" * 64},
            {"claim_id": "f2", "field": "revenue", "key": "2025", "value": 6, "unit": "USD",
             "run_id": "r2", "policy_version": "default@2"},
            {"claim_id": "f3", "field": "revenue", "key": "2025", "value": 5, "unit": "USD",
             "run_id": "r2", "policy_version": "default@2"},
            {"claim_id": "f4", "field": "employees", "value": 9},
        ],
    )  # fmt: skip
    rows = disagreements(ledger, "facts").items
    assert [(r["subject"], r["field"], r["key"]) for r in rows] == [("Acme Ltd", "revenue", "2025")]
    sides = {
        s["value"]: [(c["document_id"], c["run_id"]) for c in s["claims"]] for s in rows[0]["sides"]
    }
    assert sides == {5: [("10k", "r1"), ("10q", "r2")], 6: [("10q", "r2")]}
    first = rows[0]["sides"][0]["claims"][0]
    assert first["policy_version"] == "default@1" and first["receipt_digest"].startswith("sha256:")
    assert disagreements(ledger, "facts", subject="ACME LTD").items == rows
    assert disagreements(ledger, "facts", subject="revenue").items == []


def test_a_hubs_row_shows_its_best_supported_sides_and_counts_the_rest(ledger, ledger_url):
    # One subject owning 30 companies, the k-th said by k + 1 filings: a row of 465 claims
    # (a hub at 10M claims has tens of thousands), shown as 4 sides of 3 claims each.
    graph = [
        C(f"h{k:02d}-{j:02d}", "Hub Corp", "OWNS", f"Company {chr(97 + k // 26)}{chr(97 + k % 26)}",
          document=f"d{j:02d}", quote=f"Hub Corp owns company {k} ({j})")
        for k in range(30)
        for j in range(k + 1)
    ]  # fmt: skip
    record(ledger, graph)
    (row,) = disagreements(ledger, "objects", max_sides=4, max_claims=3).items
    assert row["sides_total"] == 30
    assert [(s["object"], s["claims_total"]) for s in row["sides"]] == [
        ("Company bd", 30), ("Company bc", 29), ("Company bb", 28), ("Company ba", 27)
    ]  # fmt: skip
    assert [c["claim_id"] for c in row["sides"][0]["claims"]] == ["h29-00", "h29-01", "h29-02"]
    whole = disagreements(ledger, "objects", max_sides=100, max_claims=100).items[0]
    assert whole["sides_total"] == 30 and sum(len(s["claims"]) for s in whole["sides"]) == 465
    facts = [
        {"claim_id": c.id, "field": "stake", "key": "2025", "value": int(c.id[1:3]) % 3,
         "unit": "%", "run_id": f"r{c.id[-2:]}"}
        for c in graph
    ]  # fmt: skip
    write_facts(ledger, facts)
    (fact,) = disagreements(ledger, "facts", max_sides=2, max_claims=2).items
    counts = {v: sum(1 for f in facts if f["value"] == v) for v in (0, 1, 2)}
    assert fact["sides_total"] == 3 and len(fact["sides"]) == 2
    ranked = sorted(counts, key=lambda v: (-counts[v], v))
    assert [(s["value"], s["claims_total"]) for s in fact["sides"]] == [
        (v, counts[v]) for v in ranked[:2]
    ]
    first = fact["sides"][0]["claims"]
    assert len(first) == 2 and [c["document_id"] for c in first] == ["d00", "d00"]
    out = CliRunner().invoke(
        main, ["ledger", "disagreements", "--db", ledger_url, "--kind", "objects",
               "--sides", "2", "--claims", "1"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "      ... 29 more claims" in out.output and "  ... 28 more sides" in out.output


def test_disagreement_pages_cover_every_row_once(ledger):
    graph = random_graph(random.Random(7), 12, 220)
    record(ledger, graph)
    for kind in ("contradiction", "objects"):
        whole = disagreements(ledger, kind, limit=10_000).items
        paged = every_page(lambda k=kind, **kw: disagreements(ledger, k, **kw), 7)
        assert paged == whole and len(whole) > 7
    with pytest.raises(BadCursor):
        disagreements(ledger, cursor="not-a-cursor")


def test_disagreements_about_one_subject_in_triple_order_and_paged(ledger):
    graph = random_graph(random.Random(9), 12, 260, hub=0.3)
    record(ledger, graph)
    hub = sorted({c.subject for c in graph})[0]
    for subject, relation in ((hub, None), (hub, "OWNS"), (hub.upper(), None)):
        whole = disagreements(ledger, limit=10_000).items
        want = [
            (r["relation"], r["object"], r["sides"][0]["claim_id"], r["sides"][1]["claim_id"])
            for r in whole
            if r["subject"] == hub and relation in (None, r["relation"])
        ]
        mine = every_page(
            lambda s=subject, r=relation, **kw: disagreements(ledger, subject=s, relation=r, **kw),
            3,
        )
        got = [
            (r["relation"], r["object"], r["sides"][0]["claim_id"], r["sides"][1]["claim_id"])
            for r in mine
        ]
        # The same pairs, a subject's in the order of its triples (entity ids in the index).
        assert sorted(got) == sorted(want) and len(got) > 3
        key = {r["object"]: entity_id(TYPE, r["object"]) for r in mine}
        assert [(g[0], key[g[1]], g[2], g[3]) for g in got] == sorted(
            (g[0], key[g[1]], g[2], g[3]) for g in got
        )
    objects = disagreements(ledger, "objects", subject=hub).items
    assert {r["subject"] for r in objects} == {hub} and objects
    assert disagreements(ledger, subject="Nobody at all").items == []
    assert disagreements(ledger, "facts", subject=hub).items == []


def test_path_walks_claims_both_ways_and_says_which_way(ledger):
    record(ledger, CONTRACT)
    found = path(ledger, "acme ltd", "Gamma Holdings").as_dict()
    assert found["found"] and found["length"] == 2
    hops = found["hops"]
    assert [(h["from"], h["relation"], h["to"], h["direction"]) for h in hops] == [
        ("Acme Ltd", "ACQUIRED", "Beta Inc", "forward"),
        ("Beta Inc", "OWNS", "Gamma Holdings", "forward"),
    ]
    assert (found["asserted"], found["reported_or_hedged"]) == (1, 1)
    back = path(ledger, "Gamma Holdings", "Acme Ltd").hops
    assert [(h["from"], h["to"], h["direction"]) for h in back] == [
        ("Gamma Holdings", "Beta Inc", "backward"),
        ("Beta Inc", "Acme Ltd", "backward"),
    ]
    assert not path(ledger, "Acme Ltd", "Gamma Holdings", modality=["assertion"]).found
    # k5 denies Delta owns Gamma: it links nothing unless rejected claims are walked.
    assert path(ledger, "Delta Corp", "Gamma Holdings").hops != [CONTRACT[4]]
    walked = path(ledger, "Delta Corp", "Gamma Holdings", modality=["rejected"]).hops
    assert [h["claim_id"] for h in walked] == ["k5"]
    unknown = path(ledger, "Acme Ltd", "Nobody")
    assert not unknown.found and unknown.unknown == ["Nobody"]
    assert path(ledger, "Acme Ltd", "ACME LTD").hops == []
    assert not path(ledger, "Acme Ltd", "Gamma Holdings", max_hops=1).found


def test_the_path_is_a_shortest_one_on_a_random_graph(ledger):
    import networkx as nx

    graph = random_graph(random.Random(3), 60, 120)
    record(ledger, graph)
    g = nx.Graph()
    for c in graph:
        if c.subject != c.object and c.polarity == "affirmed" and c.modality != "rejected":
            g.add_edge(c.subject, c.object)
    names = sorted(g.nodes)
    rng = random.Random(4)
    checked = 0
    for _ in range(40):
        a, b = rng.sample(names, 2)
        ours = path(ledger, a, b, max_hops=8)
        try:
            want = nx.shortest_path_length(g, a, b)
        except nx.NetworkXNoPath:
            want = None
        if want is None or want > 8:
            assert not ours.found
            continue
        assert len(ours.hops) == want
        assert ours.hops[0]["from"] == a and ours.hops[-1]["to"] == b
        assert all(x["to"] == y["from"] for x, y in zip(ours.hops, ours.hops[1:], strict=False))
        checked += 1
    assert checked > 10


def test_search_is_stemmed_ranked_and_paged(ledger):
    record(ledger, CONTRACT)
    hits = search(ledger, "acquired").items
    assert {h["claim_id"] for h in hits} == {"k1", "k3", "k4"}  # "acquires" too
    assert all({"modality", "asserter", "document_id", "start", "end"} <= h.keys() for h in hits)
    assert {h["claim_id"] for h in search(ledger, 'owns* NEAR "Gamma"').items} == {"k2", "k5"}
    assert search(ledger, "   ").items == []
    pages = every_page(lambda **kw: search(ledger, "acquired Gamma", **kw), 2)
    ids = [h["claim_id"] for h in pages]
    assert len(ids) == len(set(ids)) == 5
    record(ledger, [C("k1", "Acme Ltd", "ACQUIRED", "Beta Inc", quote="merger only")])
    assert "k1" not in {h["claim_id"] for h in search(ledger, "acquires").items}  # re-indexed
    assert terms("Acme's  NEAR/2 (x)") == ["acme", "s", "near", "2", "x"]


def test_claims_are_listed_by_entity_document_and_relation(ledger):
    record(ledger, CONTRACT)
    assert [c["claim_id"] for c in claims(ledger, entity="gamma holdings").items] == ["k2", "k5"]
    assert [c["claim_id"] for c in claims(ledger, document="audit").items] == ["k3"]
    assert [c["claim_id"] for c in every_page(lambda **kw: claims(ledger, **kw), 2)] == [
        "k1", "k2", "k3", "k4", "k5"
    ]  # fmt: skip


def test_resolve_groups_certain_merges_and_path_walks_the_groups(ledger):
    record(
        ledger,
        [
            *CONTRACT,
            C("r1", "ACME Limited", "OWNS", "Epsilon", quote="ACME Limited owns Epsilon"),
            C("r2", "Acme Products", "OWNS", "Zeta", quote="Acme Products owns Zeta"),
            C("r3", "Fund 1", "OWNS", "Zeta", quote="Fund 1 owns Zeta"),
            C("r4", "Fund 2", "OWNS", "Zeta", quote="Fund 2 owns Zeta"),
        ],
    )
    assert not path(ledger, "Epsilon", "Beta Inc").found
    result = resolve(ledger)
    merged = [sorted(m[1] for m in g.members) for g in result.groups if len(g.members) > 1]
    assert merged == [["ACME Limited", "Acme Ltd"]]
    reasons = {(h.label, h.into): h.reason for h in result.held}
    assert "extends" in reasons[("Acme Products", "Acme Ltd")]
    assert "discriminator" in reasons[("Fund 2", "Fund 1")]  # a tie: the later key asked
    # "ACME Limited" is resolved into "Acme Ltd": its claims disagree with Acme Ltd's.
    record(ledger, [C("r5", "ACME Limited", "ACQUIRED", "Beta Inc", "rejected", quote="no")])
    assert len(disagreements(ledger).items) == 1
    resolved = disagreements(ledger, resolved=True).items
    assert [[s["claim_id"] for s in r["sides"]] for r in resolved] == [["k1", "k3"], ["k1", "r5"]]
    assert resolved[1]["sides"][1]["subject"] == "ACME Limited"
    about = disagreements(ledger, subject="ACME Limited", resolved=True).items
    assert sorted([s["claim_id"] for s in r["sides"]] for r in about) == [
        ["k1", "k3"],
        ["k1", "r5"],
    ]
    assert disagreements(ledger, subject="ACME Limited").items == []  # alone, it agrees
    objects = disagreements(ledger, "objects", resolved=True).items
    assert {s["object"] for s in objects[0]["sides"]} == {"Beta Inc", "Delta Corp"}
    hops = path(ledger, "Epsilon", "Beta Inc").hops
    assert [h["claim_id"] for h in hops] == ["r1", "k1"]
    assert path(ledger, "ACME Limited", "acme ltd").hops == []
    again = resolve(ledger)  # safe to repeat: the same groups, no claim re-targeted
    assert [(g.head[0], g.members) for g in again.groups if len(g.members) > 1] == [
        (
            g.head[0],
            [(i, label, n + (i == entity_id(TYPE, "ACME Limited"))) for i, label, n in g.members],
        )
        for g in result.groups
        if len(g.members) > 1
    ]  # one more claim (r5) on ACME Limited; the same group, named by the same entity
    assert claims(ledger, entity="Acme Ltd").items[0]["subject_entity_id"] == entity_id(
        TYPE, "Acme Ltd"
    )


def run(*args: str):
    return CliRunner().invoke(main, ["ledger", *args], catch_exceptions=False)


def test_the_cli_commands(ledger, ledger_url):
    record(ledger, CONTRACT)
    out = run("disagreements", "--db", ledger_url).output
    assert "Acme Ltd  ACQUIRED  Beta Inc" in out and "the auditor (rejected) audit[0:" in out
    done = run("path", "Acme Ltd", "Gamma Holdings", "--db", ledger_url)
    assert done.exit_code == 0 and "2 hops · 1 asserted · 1 reported or hedged" in done.output
    assert "Acme Ltd --ACQUIRED--> Beta Inc" in done.output
    done = run("path", "Gamma Holdings", "Acme Ltd", "--db", ledger_url)
    assert "Beta Inc <--ACQUIRED-- Acme Ltd" in done.output  # xrad prints this one forward
    done = run("path", "Acme Ltd", "Gamma Holdings", "--db", ledger_url, "--modality", "assertion")
    assert done.exit_code == 1 and done.output.startswith("no chain from Acme Ltd")
    out = run("search", "acquired", "--db", ledger_url, "--limit", "2").output
    assert "2 results." in out and "more: groundswell ledger search" in out
    page = json.loads(
        run("disagreements", "--db", ledger_url, "--kind", "objects", "--json").output
    )
    assert page["items"][0]["relation"] == "ACQUIRED" and page["has_next_page"] is False
    record(ledger, [C("k9", "Acme Ltd", "ACQUIRED", "Beta Inc", polarity="denied", quote="no")])
    out = run("disagreements", "--db", ledger_url, "--subject", "acme ltd", "--limit", "1").output
    assert "Acme Ltd  ACQUIRED  Beta Inc" in out
    assert "more: groundswell ledger disagreements --subject 'acme ltd' --limit 1 --cursor" in out
    cursor = out.rsplit("--cursor ", 1)[1].strip()
    rest = run("disagreements", "--db", ledger_url, "--subject", "acme ltd", "--cursor", cursor)
    assert "Acme Ltd  ACQUIRED  Beta Inc" in rest.output and "more:" not in rest.output
    out = run("resolve", "--db", ledger_url).output
    assert out == "4 entities -> 4 groups\n"


def test_migrating_a_ledger_with_claims_indexes_them_for_search(ledger_url):
    from alembic import command
    from sqlalchemy import text

    from groundswell.shared.ledger.store import Ledger, _alembic_config

    store = Ledger.open(ledger_url, migrate=False)
    try:
        with store.engine.begin() as conn:
            command.upgrade(_alembic_config(conn), "0001")
        with todays_claim_columns(store):
            record(store, CONTRACT)  # written before the search index exists
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM evidence")).scalar_one() == 5
        store.migrate()
        assert {h["claim_id"] for h in search(store, "auditor").items} == {"k3"}
        assert disagreements(store).items[0]["sides"][1]["claim_id"] == "k3"
    finally:
        store.close()


def test_migrating_a_ledger_with_facts_gives_each_fact_its_subject(ledger_url):
    from alembic import command
    from sqlalchemy import text

    from groundswell.shared.ledger.store import Ledger, _alembic_config

    store = Ledger.open(ledger_url, migrate=False)
    try:
        with store.engine.begin() as conn:
            command.upgrade(_alembic_config(conn), "0008")
        with todays_claim_columns(store):
            record(store, [C("f1", "Acme Ltd", "HAS_FACT", "revenue", document="10k"),
                           C("f2", "Acme Ltd", "HAS_FACT", "revenue", document="10q")])  # fmt: skip
        with store.engine.begin() as conn:  # facts as a ledger before 0009 stored them
            for claim, value in (("f1", "5"), ("f2", "6")):
                conn.execute(
                    text(
                        "INSERT INTO facts (claim_id, field, key, value) VALUES (:c, 'rev', '', :v)"
                    ),
                    {"c": claim, "v": value},
                )
        store.migrate()
        with store.engine.connect() as conn:
            subjects = conn.execute(text("SELECT DISTINCT subject_entity_id FROM facts")).all()
        assert subjects == [(entity_id(TYPE, "Acme Ltd"),)]
        (row,) = disagreements(store, "facts").items
        assert row["subject"] == "Acme Ltd" and [s["value"] for s in row["sides"]] == [5, 6]
        assert disagreements(store, "facts", subject="acme ltd").items == [row]
    finally:
        store.close()


def test_near_pairs_are_every_pair_a_brute_force_finds():
    """The pass-join index finds exactly the near spellings that comparing every pair finds."""
    import random
    from itertools import combinations

    from groundswell.shared.ledger.resolve import _near, near_pairs

    rng = random.Random(7)
    keys: set[tuple[str, str]] = set()
    while len(keys) < 1500:
        word = "".join(rng.choice("abcde") for _ in range(rng.randrange(3, 12)))
        for _ in range(rng.randrange(1, 4)):  # typos: a substitution, insertion or deletion
            at = rng.randrange(len(word))
            word = (
                rng.choice(
                    [
                        word[:at] + "x" + word[at + 1 :],
                        word[:at] + "y" + word[at:],
                        word[:at] + word[at + 1 :],
                    ]
                )
                or word
            )
            keys.add(
                (rng.choice(["Party", "Product"]), word if rng.random() < 0.9 else word + " co")
            )
    keyed = sorted(keys)
    brute = {
        (i, j, d)
        for (i, a), (j, b) in combinations(enumerate(keyed), 2)
        if a[0] == b[0] and min(len(a[1]), len(b[1])) >= 5 and a[1][:2] == b[1][:2]
        and (d := _near(a[1], b[1])) is not None
    }  # fmt: skip
    found = [(i, j, d) if keyed[i][1] < keyed[j][1] else (j, i, d) for i, j, d in near_pairs(keyed)]
    assert len(found) == len(set(found)) and set(found) == {
        (i, j, d) if keyed[i][1] < keyed[j][1] else (j, i, d) for i, j, d in brute
    }
    assert sum(d == 2 for *_, d in brute) > 20 and sum(d == 1 for *_, d in brute) > 50

    def distance(a: str, b: str) -> int:  # the whole table
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]

    near = [(keyed[i], keyed[j]) for i, j, _ in brute]
    for (_, a), (_, b) in rng.sample(list(combinations(keyed, 2)), 20000) + near:
        d, limit = distance(a, b), 2 if min(len(a), len(b)) > 7 else 1
        assert _near(a, b) == (d if 0 < d <= limit else None), (a, b)


def test_every_contradiction_comes_once_whichever_sides_dissent(ledger):
    # Pairs of a denial and a rejection (both dissent) as well as of an assertion and either:
    # the walk of dissenting claims must give each pair once, its sides in claim id order.
    graph = random_graph(random.Random(21), 10, 300)
    graph += [
        C("z1", "Acme", "OWNS", "Beta", polarity="denied"),
        C("z2", "Acme", "OWNS", "Beta", "rejected"),
        C("z3", "Acme", "OWNS", "Beta", "rejected", polarity="denied"),
        C("z4", "Acme", "OWNS", "Beta"),
    ]
    record(ledger, graph)

    def stance(c: C) -> tuple[str, bool]:
        return c.polarity, c.modality == "rejected"

    want = sorted(
        (a.id, b.id)
        for a in graph
        for b in graph
        if (a.subject, a.relation, a.object) == (b.subject, b.relation, b.object)
        and a.id < b.id
        and stance(a) != stance(b)
    )
    for limit in (10_000, 7):
        got = [
            tuple(s["claim_id"] for s in r["sides"])
            for r in every_page(lambda **kw: disagreements(ledger, **kw), limit)
        ]
        assert sorted(got) == want and len(got) == len(set(got)) > 20
    every = every_page(lambda **kw: disagreements(ledger, **kw), 100)
    acme = [tuple(s["claim_id"] for s in r["sides"]) for r in every if r["subject"] == "Acme"]
    assert sorted(acme) == [("z1", "z2"), ("z1", "z3"), ("z1", "z4"), ("z2", "z3"),
                            ("z2", "z4"), ("z3", "z4")]  # fmt: skip
