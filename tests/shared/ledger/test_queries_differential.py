"""The queries against xrad 0.4.0 (the oracle) on the same claims, recorded through xrad's API
(entities, then claims with their evidence) and written to the ledger on both backends:
the same disagreements, the same path lengths and found/not-found, the same search hits
(modulo ids and order, compared canonically), except the deliberate differences, each shown
in the last test with its reason."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import xrad.search  # the oracle, 0.4.0 (the test extra)
from xrad import store as xstore

from groundswell.shared.ledger.models import MODALITIES
from groundswell.shared.ledger.path import path
from groundswell.shared.ledger.queries import disagreements
from groundswell.shared.ledger.resolve import cluster
from groundswell.shared.ledger.search import search
from tests.shared.ledger.graphs import WORDS, C, random_graph, record, record_in_xrad


@pytest.fixture
def twins(ledger, tmp_path):
    """(ledger, xrad connection) holding the same generated claims."""
    graph = random_graph(random.Random(16), 80, 400, hub=0.05)
    record(ledger, graph)
    conn = record_in_xrad(tmp_path / "xrad.db", graph)
    yield ledger, conn, graph
    conn.close()


def _pair(row: dict) -> tuple:
    """A contradiction canonically: the triple and each side's (claim, asserter, modality)."""
    return (row["s"], row["relation"], row["o"], (row["c1"], row["a1"], row["m1"]),
            (row["c2"], row["a2"], row["m2"]))  # fmt: skip


def test_contradictions_are_xrads(twins):
    ledger, conn, _ = twins
    theirs = {_pair(dict(r)) for r in xstore.disagreements(conn, limit=10**6)}
    ours = set()
    cursor = None
    while True:
        page = disagreements(ledger, cursor=cursor, limit=50)
        for row in page.items:
            a, b = row["sides"]
            ours.add(
                (
                    row["subject"],
                    row["relation"],
                    row["object"],
                    (a["claim_id"], a["asserter"], a["modality"]),
                    (b["claim_id"], b["asserter"], b["modality"]),
                )
            )
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    print(f"contradictions: {len(ours)} ours, {len(theirs)} xrad's, {len(ours & theirs)} same")
    assert ours == theirs and len(ours) > 20


def test_paths_are_xrads(twins, tmp_path):
    ledger, _, graph = twins
    # A denial links nothing here whatever the modality filter (issue 32 item 5); xrad walks
    # one as soon as a filter names its modality, so its twin holds the affirmed claims only.
    conn = record_in_xrad(tmp_path / "affirmed.db", [c for c in graph if c.polarity == "affirmed"])
    names = sorted({c.subject for c in graph} | {c.object for c in graph})
    rng = random.Random(1616)
    outcome: Counter = Counter()
    for _ in range(60):
        a, b = rng.sample(names, 2)
        for ours_modality, their_modality in ((MODALITIES, None), (["assertion"], {"assertion"})):
            theirs = xstore.path(conn, a, b, modality=their_modality)
            ours = path(ledger, a, b, modality=ours_modality)
            if theirs is None:
                assert not ours.found, (a, b, ours_modality)
                outcome["same: no chain"] += 1
                continue
            assert ours.found and len(ours.hops) == len(theirs), (a, b, ours_modality)
            by_id = {c.id: c for c in graph}
            for hop in ours.hops:  # each hop a real claim, walked from one end to the other
                claim = by_id[hop["claim_id"]]
                assert {hop["from"], hop["to"]} == {claim.subject, claim.object}
                assert hop["modality"] in ours_modality
            same = [h["claim_id"] for h in ours.hops] == [h["claim_id"] for h in theirs]
            outcome["same chain" if same else "same length, another shortest chain"] += 1
    print(dict(outcome))
    assert outcome["same: no chain"] >= 1 and outcome["same chain"] > 50


def test_search_hits_are_xrads_or_a_stemmed_superset(twins):
    ledger, conn, _ = twins
    outcome: Counter = Counter()
    for word in WORDS:
        theirs = {r["claim_id"] for r in xrad.search.claims(conn, word, limit=10**6)}
        ours = {h["claim_id"] for h in search(ledger, word, limit=10_000).items}
        if ours == theirs:
            outcome["same"] += 1
        else:
            # English stemming: "acquired" finds "acquires" here; xrad's Latin stemmer not.
            assert theirs < ours, word
            outcome["ours a stemmed superset"] += 1
    print(dict(outcome))
    assert outcome["same"] >= len(WORDS) // 2


def test_deliberate_differences_from_xrad(ledger, tmp_path):
    claims = [
        C("d1", "Acme", "ACQUIRED", "Beta", quote="Acme acquires Beta"),
        C("d2", "Beta", "OWNS", "Gamma", "rejected", asserter="the auditor",
          quote="Beta does not own Gamma"),
        C("d3", "Gamma", "OWNS", "Delta", quote="Gamma owns Delta"),
        C("d4", "Delta", "SUPPLIES", "Epsilon", polarity="denied",
          quote="Delta supplies Epsilon"),
    ]  # fmt: skip
    record(ledger, claims)
    conn = record_in_xrad(tmp_path / "x.db", claims)

    # 1. path: a rejection or a denial links nothing unless asked for; xrad walks them.
    assert [h["claim_id"] for h in xstore.path(conn, "Acme", "Gamma")] == ["d1", "d2"]
    assert not path(ledger, "Acme", "Gamma").found
    assert len(path(ledger, "Acme", "Gamma", modality=MODALITIES).hops) == 2
    assert xstore.path(conn, "Delta", "Epsilon") and not path(ledger, "Delta", "Epsilon").found

    # 2. path: a hop walked against its claim says so; xrad prints it as forward, inverting
    # "Acme acquired Beta" into Beta --ACQUIRED--> Acme.
    hop = xstore.path(conn, "Beta", "Acme")[0]
    assert (hop["from"], hop["to"]) == ("Beta", "Acme")
    ours = path(ledger, "Beta", "Acme").hops[0]
    assert (ours["from"], ours["to"], ours["direction"]) == ("Beta", "Acme", "backward")

    # 3. search stems English: "acquired" finds "acquires"; xrad's Latin stemmer does not
    # (BEHAVIOUR §1.14).
    assert xrad.search.claims(conn, "acquires") and not xrad.search.claims(conn, "acquired")
    assert [h["claim_id"] for h in search(ledger, "acquired").items] == ["d1"]

    # 4. resolve keeps digits and holds near spellings: xrad merges Fund 1 and Fund 2
    # (its fold drops digits) and Smith and Smyth (y→i); here both pairs are held.
    from xrad import Mention
    from xrad.resolve import cluster as xcluster

    labels = ["Fund 1", "Fund 2", "Smith", "Smyth"]
    mentions = [Mention(mention_id=f"m{i}", source_id="d", surface=s, type="Party", start=0,
                        end=len(s)) for i, s in enumerate(labels)]  # fmt: skip
    their_clusters, their_held = xcluster(mentions)
    assert len(their_clusters) == 2 and not their_held
    groups, held = cluster([(f"e{i}", "Party", s, 1) for i, s in enumerate(labels)])
    assert len(groups) == 4 and {(h.label, h.into) for h in held} == {
        ("Fund 2", "Fund 1"),
        ("Smyth", "Smith"),
    }

    # 5. the contradiction kind is xrad's; two more kinds are added (objects, facts), so
    # xrad's one query answers only the first.
    assert disagreements(ledger, "contradiction").items == []
    assert len(xstore.disagreements(conn)) == 0


def test_resolution_merges_and_holds_what_xrad_does(tmp_path):
    """Company names with the variants resolution must see through (case, known suffixes) and
    those it must not merge (an extra word, a parenthetical, another type): the same groups
    as xrad's ``resolve.cluster``, and every merge xrad holds held here too. (xrad holds a
    cluster against the first kept one only; here against each it could join, so the held set
    may be larger.)"""
    from xrad import Mention
    from xrad.resolve import cluster as xcluster

    from tests.shared.ledger.graphs import name

    rng = random.Random(161616)
    safe = ["{}", "{} Ltd", "{} Limited", "{} HOLDINGS", "{}", "{} Inc", "{} Group"]
    extending = ["{} (UK)", "{} Products"]
    labels: list[tuple[str, str]] = []
    for _ in range(40):
        base = name(rng)
        forms = rng.sample(safe, rng.randrange(1, 5))
        if rng.random() < 0.3:
            forms += rng.sample(extending, 1)
        elif rng.random() < 0.2:
            labels.append(("Product", base))  # the same key under another type
        labels += [("Party", f.format(base).lower() if i == 4 else f.format(base))
                   for i, f in enumerate(forms)]  # fmt: skip
    labels = sorted(set(labels))
    mentions = [Mention(mention_id=f"m{i}", source_id="d", surface=s, type=t, start=0,
                        end=len(s)) for i, (t, s) in enumerate(labels)]  # fmt: skip
    their_clusters, their_held = xcluster(mentions)
    ours, held = cluster([(f"e{i}", t, s, 1) for i, (t, s) in enumerate(labels)])

    def group_of(groups) -> dict[tuple[str, str], frozenset]:
        return {(t, s): frozenset(members) for t, members in groups for s in members}

    theirs_by = group_of([(c.type, c.surfaces) for c in their_clusters])
    ours_by = group_of([(g.type, [m[1] for m in g.members]) for g in ours])
    assert set(theirs_by.values()) == set(ours_by.values())
    key_label = {(c.type, c.key): c.label() for c in their_clusters}
    their_pairs = set()
    for h in their_held:
        held_label = key_label[(h["type"], h["key"])]
        into = next(v for (t, s), v in theirs_by.items() if s == h["into"])
        their_pairs.add(frozenset({theirs_by[(h["type"], held_label)], into}))
    by_label = {s: v for (t, s), v in ours_by.items()}
    our_pairs = {frozenset({by_label[h.label], by_label[h.into]}) for h in held}
    merged = sum(len(g) > 1 for g in set(ours_by.values()))
    print(f"resolve: {len(set(ours_by.values()))} groups ({merged} merged), the same as xrad's; "
          f"xrad holds {len(their_pairs)} merges, all held here ({len(our_pairs)} in all)")  # fmt: skip
    assert their_pairs <= our_pairs and len(their_pairs) > 5 and merged > 10
