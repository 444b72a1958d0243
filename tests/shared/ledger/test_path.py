"""The path search against networkx on heavy-tailed graphs, on both backends: read in chunks
of a few claims (so every resume of the keyset and every meeting rule is exercised), with and
without the frontier probe, under modality and relation filters and with resolved groups."""

from __future__ import annotations

import random
from itertools import pairwise

import networkx as nx
import pytest
from sqlalchemy import insert

from groundswell.shared.ledger import path as path_module
from groundswell.shared.ledger.models import EntityGroupRow, entity_id
from groundswell.shared.ledger.path import path
from tests.shared.ledger.graphs import RELATIONS, TYPE, C, record, two_stars

NAMES = [f"Node {chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(120)]


def heavy_tailed(rng: random.Random, claims: int) -> list[C]:
    """Endpoints drawn from a power law over NAMES (a few hubs in most claims), every
    modality, some denied, repeated triples and some self-loops."""
    out = []
    for i in range(claims):
        s = NAMES[int(len(NAMES) * rng.random() ** 3)]
        o = NAMES[int(len(NAMES) * rng.random() ** 3)]
        modality = rng.choices(
            ["assertion", "reported", "conjecture", "rejected", "declined", "question"],
            weights=(10, 3, 2, 2, 1, 1),
        )[0]
        polarity = "denied" if rng.random() < 0.1 else "affirmed"
        out.append(C(f"p{i:05d}", s, rng.choice(RELATIONS), o, modality, polarity))
    return out


def expected(claims: list[C], group: dict[str, str], walks) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(group.get(n, n) for n in NAMES)
    for c in claims:
        s, o = group.get(c.subject, c.subject), group.get(c.object, c.object)
        if s != o and walks(c):
            g.add_edge(s, o)
    return g


@pytest.mark.parametrize("probe", [0, 4096], ids=["no-probe", "probe"])
def test_the_search_finds_a_shortest_chain_in_chunks(ledger, monkeypatch, probe):
    monkeypatch.setattr(path_module, "FIRST_CHUNK", 2)
    monkeypatch.setattr(path_module, "LAST_CHUNK", 5)
    monkeypatch.setattr(path_module, "PROBE_PAIRS", probe)
    rng = random.Random(11)
    claims = heavy_tailed(rng, 260)
    record(ledger, claims)
    cases = [
        ({}, lambda c: c.polarity == "affirmed" and c.modality != "rejected"),
        # A denial links nothing, whatever the modality filter.
        ({"modality": ["assertion"]}, lambda c: c.modality == "assertion"
         and c.polarity == "affirmed"),
        ({"modality": ["rejected", "declined"]}, lambda c: c.modality in ("rejected", "declined")
         and c.polarity == "affirmed"),
        ({"relations": ["OWNS"]}, lambda c: c.relation == "OWNS" and c.polarity == "affirmed"
         and c.modality != "rejected"),
    ]  # fmt: skip
    named = sorted({c.subject for c in claims} | {c.object for c in claims})
    grouped = {named[5]: named[3], named[9]: named[3], named[20]: named[21]}
    heads = {named[3], named[21]}
    checked = refused = 0
    for with_groups in (False, True):
        group: dict[str, str] = {}
        if with_groups:  # as resolve writes them (a group's head is a member of it)
            rows = [
                {"entity_id": entity_id(TYPE, h), "group_id": entity_id(TYPE, h)} for h in heads
            ]
            rows += [
                {"entity_id": entity_id(TYPE, e), "group_id": entity_id(TYPE, h)}
                for e, h in grouped.items()
            ]
            with ledger.engine.begin() as conn:
                conn.execute(insert(EntityGroupRow), rows)
            group = grouped
        for options, walks in cases:
            g = expected(claims, group, walks)
            for _ in range(25):
                a, b = rng.sample(named, 2)
                ours = path(ledger, a, b, max_hops=6, **options)
                na, nb = group.get(a, a), group.get(b, b)
                try:
                    want = nx.shortest_path_length(g, na, nb)
                except nx.NetworkXNoPath:
                    want = None
                if want is None or want > 6:
                    assert not ours.found, (a, b, options)
                    refused += 1
                    continue
                assert ours.found and len(ours.hops) == want, (a, b, options, want)
                if not want:
                    continue
                checked += 1
                by_id = {c.id: c for c in claims}
                ends = [group.get(h["from"], h["from"]) for h in ours.hops]
                ends.append(group.get(ours.hops[-1]["to"], ours.hops[-1]["to"]))
                assert ends[0] == na and ends[-1] == nb
                for hop, (x, y) in zip(ours.hops, pairwise(ends), strict=True):
                    c = by_id[hop["claim_id"]]
                    assert walks(c)
                    s, o = group.get(c.subject, c.subject), group.get(c.object, c.object)
                    assert (s, o) == ((x, y) if hop["direction"] == "forward" else (y, x))
                    # The hop is the first claim by id joining its two nodes.
                    joining = [
                        d.id for d in claims if walks(d)
                        and {group.get(d.subject, d.subject), group.get(d.object, d.object)}
                        == {x, y}
                    ]  # fmt: skip
                    assert hop["claim_id"] == min(joining)
    assert checked > 70 and refused > 10


def test_a_side_that_reaches_everything_it_can_ends_the_search(ledger, monkeypatch):
    monkeypatch.setattr(path_module, "PROBE_PAIRS", 0)
    # A chain of four from an entity with one claim, beside a large star the goal is in.
    claims = [C(f"s{i:03d}", "Hub", "OWNS", f"Leaf {i:03d}") for i in range(60)]
    claims += [
        C("t1", "Alone", "OWNS", "Mid 1"),
        C("t2", "Mid 1", "OWNS", "Mid 2"),
        C("t3", "Mid 2", "OWNS", "Mid 3"),
        C("t4", "Mid 3", "OWNS", "Hub"),
    ]
    record(ledger, claims)
    found = path(ledger, "Alone", "Leaf 007")
    assert [h["claim_id"] for h in found.hops] == ["t1", "t2", "t3", "t4", "s007"]
    record(ledger, [C("x1", "Island", "OWNS", "Islet")])
    missing = path(ledger, "Island", "Leaf 007")
    assert not missing.found and "within 8 hops" in missing.reason


def test_a_search_past_its_budget_stops_and_says_so(ledger, monkeypatch):
    monkeypatch.setattr(path_module, "PROBE_PAIRS", 0)  # a chain only by reading levels
    record(ledger, two_stars(40))
    whole = path(ledger, "Hub A", "Hub B")
    assert whole.found and len(whole.hops) == 3 and not whole.as_dict()["stopped"]
    assert whole.claims_read > 40
    stopped = path(ledger, "Hub A", "Hub B", budget=30)
    answer = stopped.as_dict()
    assert answer["found"] is False and answer["stopped"] is True and answer["hops"] == []
    assert "search stopped" in answer["reason"] and "30 claims" in answer["reason"]
    assert 30 < stopped.claims_read <= 31  # one claim past the budget is how it knows
    # A search the budget does not bind answers as before (Hub A's 40 claims hold the goal).
    assert path(ledger, "Hub A", "A 001", budget=45).found
    missing = path(ledger, "Hub A", "Nowhere", budget=1)
    assert not missing.found and not missing.as_dict()["stopped"]


def test_the_budget_is_a_setting(ledger, monkeypatch):
    from groundswell.shared.settings import Settings, get_settings

    record(ledger, two_stars(40))
    monkeypatch.setattr(path_module, "PROBE_PAIRS", 0)
    monkeypatch.setenv("GROUNDSWELL_LEDGER_PATH_BUDGET", "25")
    get_settings.cache_clear()
    try:
        assert get_settings().ledger_path_budget == 25
        assert path(ledger, "Hub A", "Hub B").as_dict()["stopped"] is True
    finally:
        get_settings.cache_clear()
    assert Settings().ledger_path_budget == 25
    monkeypatch.delenv("GROUNDSWELL_LEDGER_PATH_BUDGET")
    assert Settings().ledger_path_budget == 200_000  # a search reads about 400 at 10M claims


def test_the_cli_says_a_search_stopped(ledger, ledger_url, monkeypatch):
    import json

    from click.testing import CliRunner

    from groundswell.shared.cli import main

    monkeypatch.setattr(path_module, "PROBE_PAIRS", 0)
    record(ledger, two_stars(40))

    def run(*args: str):
        asked = ["ledger", "path", "Hub A", "Hub B", "--db", ledger_url, *args]
        return CliRunner().invoke(main, asked, catch_exceptions=False)

    done = run("--budget", "30")
    assert done.exit_code == 1
    assert done.output.startswith("Hub A to Hub B: search stopped: it read 31 claims")
    answer = json.loads(run("--budget", "30", "--json").output)
    assert answer["stopped"] is True and answer["found"] is False
    assert run().exit_code == 0 and run("--budget", "0").exit_code == 2  # at least 1
