"""/v1/ledger: claims, disagreements, path and search over a SQLite ledger, in process
(FastAPI's TestClient; the rate limits need the test Redis). Keys with the runs scope."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.api.routes.ledger import close_ledgers
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.settings import Settings, hash_api_key
from tests.shared.ledger.graphs import C, record

pytestmark = pytest.mark.integration

RUNS, REVIEW, ADMIN = "gs_runs_key", "gs_review_only", "gs_admin_key"
CLAIMS = [
    C("k1", "Acme Ltd", "ACQUIRED", "Beta Inc", quote="Acme Ltd hereby acquires Beta Inc"),
    C("k2", "Beta Inc", "OWNS", "Gamma Holdings", "reported", asserter="Reuters",
      quote="Reuters reports that Beta Inc owns Gamma Holdings"),
    C("k3", "Acme Ltd", "ACQUIRED", "Beta Inc", "rejected", asserter="the auditor",
      document="audit", quote="The auditor does not accept that Acme Ltd acquired Beta Inc"),
]  # fmt: skip


@pytest.fixture
def client(redis_server, tmp_path):
    db = tmp_path / "ledger.sqlite3"
    with Ledger.open(str(db)) as ledger:
        record(ledger, CLAIMS)
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        ledger_url=f"sqlite:///{db}",
        api_key_hashes=f"ops:runs:{hash_api_key(RUNS)},rita:review:{hash_api_key(REVIEW)},"
        f"ada:admin:{hash_api_key(ADMIN)}",
    )
    with TestClient(create_app(settings), headers={"X-API-Key": RUNS}) as c:
        yield c
    close_ledgers()


def test_claims_are_paged_with_a_cursor(client):
    first = client.get("/v1/ledger/claims", params={"limit": 2}).json()
    assert [c["claim_id"] for c in first["items"]] == ["k1", "k2"] and first["has_next_page"]
    rest = client.get("/v1/ledger/claims", params={"limit": 2, "cursor": first["next_cursor"]})
    assert [c["claim_id"] for c in rest.json()["items"]] == ["k3"]
    assert rest.json()["next_cursor"] is None
    by_entity = client.get("/v1/ledger/claims", params={"entity": "gamma holdings"}).json()
    assert [c["claim_id"] for c in by_entity["items"]] == ["k2"]
    bad = client.get("/v1/ledger/claims", params={"cursor": "nope"})
    assert bad.status_code == 400 and bad.json()["detail"] == "invalid cursor"


def test_an_objects_row_is_bounded_and_counts_what_it_leaves_out(client, tmp_path):
    with Ledger.open(str(tmp_path / "ledger.sqlite3")) as ledger:
        record(ledger, [
            C("k4", "Acme Ltd", "ACQUIRED", "Delta Corp", document="press",
              quote="Acme Ltd acquired Delta Corp"),
            C("k5", "Acme Ltd", "ACQUIRED", "Delta Corp", document="wire",
              quote="Acme Ltd has acquired Delta Corp"),
        ])  # fmt: skip
    asked = {"kind": "objects", "sides": 1, "claims_per_side": 1}
    (row,) = client.get("/v1/ledger/disagreements", params=asked).json()["items"]
    assert row["sides_total"] == 2 and len(row["sides"]) == 1
    (side,) = row["sides"]
    assert (side["object"], side["claims_total"]) == ("Delta Corp", 2)
    assert [c["claim_id"] for c in side["claims"]] == ["k4"]
    whole = client.get("/v1/ledger/disagreements", params={"kind": "objects"}).json()["items"]
    assert [[c["claim_id"] for c in s["claims"]] for s in whole[0]["sides"]] == [
        ["k4", "k5"],
        ["k1"],  # k3 rejects the acquisition of Beta: not a side
    ]
    bad = client.get("/v1/ledger/disagreements", params={**asked, "sides": 0})
    assert bad.status_code == 422


def test_disagreements_path_and_search(client):
    rows = client.get("/v1/ledger/disagreements").json()["items"]
    assert [[s["asserter"] for s in r["sides"]] for r in rows] == [["the filing", "the auditor"]]
    assert client.get("/v1/ledger/disagreements", params={"kind": "objects"}).json()["items"] == []
    assert client.get("/v1/ledger/disagreements", params={"kind": "nope"}).status_code == 422
    resolved = client.get("/v1/ledger/disagreements", params={"resolved": "true"}).json()
    assert resolved["items"] == rows  # nothing resolved yet: the same
    about = client.get("/v1/ledger/disagreements", params={"subject": rows[0]["subject"]})
    assert about.json()["items"] == rows
    other = client.get("/v1/ledger/disagreements", params={"subject": "Gamma Holdings"})
    assert other.json() == {"items": [], "next_cursor": None, "has_next_page": False}
    found = client.get("/v1/ledger/path", params={"start": "Acme Ltd", "goal": "Gamma Holdings"})
    body = found.json()
    assert body["found"] and [h["claim_id"] for h in body["hops"]] == ["k1", "k2"]
    none = client.get(
        "/v1/ledger/path",
        params={"start": "Acme Ltd", "goal": "Gamma Holdings", "modality": "assertion"},
    ).json()
    assert not none["found"] and "assertion" in none["reason"]
    hits = client.get("/v1/ledger/search", params={"q": "acquired", "limit": 1}).json()
    assert len(hits["items"]) == 1 and hits["has_next_page"]
    more = client.get("/v1/ledger/search", params={"q": "acquired", "cursor": hits["next_cursor"]})
    assert {h["claim_id"] for h in hits["items"] + more.json()["items"]} == {"k1", "k3"}


def test_the_routes_need_a_key_with_the_runs_scope(client):
    assert client.get("/v1/ledger/claims", headers={"X-API-Key": ""}).status_code == 401
    refused = client.get("/v1/ledger/claims", headers={"X-API-Key": REVIEW})
    assert refused.status_code == 403 and "'runs'" in refused.json()["detail"]


FUNDS = [
    C(f"f{i}", f"Fund {i}", "OWNS", "Omega", quote=f"Fund {i} owns Omega") for i in range(1, 5)
]


def test_the_review_queue_is_paged_and_answered(client, tmp_path):
    from groundswell.shared.ledger import review
    from groundswell.shared.ledger.resolve import resolve

    with Ledger.open(str(tmp_path / "ledger.sqlite3")) as ledger:
        record(ledger, FUNDS)
        resolve(ledger)
    first = client.get("/v1/ledger/review", params={"limit": 2}).json()
    assert len(first["items"]) == 2 and first["has_next_page"]
    assert first["queue"] == {"open": 3, "deferred": 0, "accepted": 0, "rejected": 0, "decided": 0}
    rest = client.get("/v1/ledger/review", params={"cursor": first["next_cursor"]}).json()
    ids = [q["id"] for q in first["items"] + rest["items"]]
    assert ids == ["merge:Entity/fund 2", "merge:Entity/fund 3", "merge:Entity/fund 4"]
    assert rest["next_cursor"] is None and rest["items"][0]["into"] == "Fund 1"
    assert client.get("/v1/ledger/review", params={"cursor": "nope"}).status_code == 400

    answering = {"X-API-Key": REVIEW}  # changing merges needs the review (or admin) scope
    bad = client.post(
        "/v1/ledger/review",
        json={
            "decisions": [
                {"id": "merge:Entity/fund 2", "verdict": "reject", "reason": "two funds"},
                {"id": "merge:Entity/fund 9", "verdict": "accept", "reason": "same"},
                {"id": "merge:Entity/fund 3", "verdict": "maybe", "reason": "r"},
                {"verdict": "defer", "reason": "r"},
                {"id": "merge:Entity/fund 4", "verdict": "defer"},
            ]
        },
        headers=answering,
    )
    assert bad.status_code == 422
    assert bad.json()["detail"].startswith("decisions.1.id: merge:Entity/fund 9 is not an open")
    assert [(p["loc"], p["msg"]) for p in bad.json()["errors"]] == [
        (["body", "decisions", 1, "id"], "merge:Entity/fund 9 is not an open question"),
        (["body", "decisions", 2, "verdict"], "verdict 'maybe' — use accept/defer/reject"),
        (["body", "decisions", 3, "id"], "no id"),
        (["body", "decisions", 4, "reason"], "merge:Entity/fund 4 has a verdict but no reason"),
    ]
    assert client.get("/v1/ledger/review").json()["queue"]["decided"] == 0  # nothing written
    typed = client.post(
        "/v1/ledger/review", json={"decisions": [{"id": 5, "verdict": True}]}, headers=answering
    )
    assert typed.status_code == 422 and {p["loc"][-1] for p in typed.json()["errors"]} == {
        "id",
        "verdict",
    }
    blank = client.post(
        "/v1/ledger/review",
        json={"decisions": [{"id": ids[0], "verdict": ""}]},
        headers=answering,
    )
    assert blank.status_code == 422 and "every verdict is blank" in blank.json()["detail"]

    answer = {
        "decisions": [
            {"id": ids[0], "verdict": "reject", "reason": "two funds", "_question": "ignored"},
            {"id": ids[1], "verdict": "defer", "reason": "no prospectus"},
        ]
    }
    done = client.post("/v1/ledger/review", json=answer, headers=answering)
    assert done.json() == {"recorded": 2, "new": 2, "changed": 0, "unchanged": 0}
    again = client.post("/v1/ledger/review", json=answer, headers={"X-API-Key": ADMIN})
    assert again.json() == {"recorded": 2, "new": 0, "changed": 0, "unchanged": 2}
    with Ledger.open(str(tmp_path / "ledger.sqlite3")) as ledger, ledger.engine.connect() as c:
        stored = review.current_decisions(c)
    assert (stored[ids[0]].by, stored[ids[1]].by) == ("rita", "rita")  # the key's name
    deferred = client.get("/v1/ledger/review", params={"status": "deferred"}).json()["items"]
    assert [(q["id"], q["earlier"]["by"]) for q in deferred] == [(ids[1], "rita")]
    queue = client.get("/v1/ledger/review").json()["queue"]
    assert (queue["open"], queue["deferred"], queue["rejected"], queue["decided"]) == (1, 1, 1, 2)


def test_an_answer_is_the_keys_and_dated_by_the_server_never_the_body(client, tmp_path):
    import datetime as dt

    from groundswell.shared.ledger import review
    from groundswell.shared.ledger.resolve import resolve

    with Ledger.open(str(tmp_path / "ledger.sqlite3")) as ledger:
        record(ledger, FUNDS)
        resolve(ledger)
    qid = client.get("/v1/ledger/review").json()["items"][0]["id"]
    answer = {"id": qid, "verdict": "reject", "reason": "two funds"}
    forged = client.post(
        "/v1/ledger/review",
        json={"decisions": [{**answer, "by": "@someone-else", "date": "2020-01-01", "x": 1}]},
        headers={"X-API-Key": REVIEW},
    )
    assert forged.status_code == 422
    said = {p["loc"][-1]: p["msg"] for p in forged.json()["errors"]}
    assert set(said) == {"by", "date", "x"}
    assert "the API key's name" in said["by"] and "the server's" in said["date"]
    # A runs key reads the queue but cannot change merges.
    runs = client.post("/v1/ledger/review", json={"decisions": [answer]})
    assert runs.status_code == 403 and "'review'" in runs.json()["detail"]
    assert client.get("/v1/ledger/review").json()["queue"]["decided"] == 0  # nothing written
    before = dt.datetime.now(dt.UTC).date()
    done = client.post(
        "/v1/ledger/review", json={"decisions": [answer]}, headers={"X-API-Key": REVIEW}
    )
    assert done.status_code == 200, done.text
    after = dt.datetime.now(dt.UTC).date()
    with Ledger.open(str(tmp_path / "ledger.sqlite3")) as ledger, ledger.engine.connect() as c:
        (decision,) = review.current_decisions(c).values()
    assert decision.by == "rita" and decision.date in {before, after}


def test_the_review_routes_need_a_key_with_the_runs_or_the_review_scope(client):
    assert client.get("/v1/ledger/review", headers={"X-API-Key": REVIEW}).status_code == 403
    refused = client.post("/v1/ledger/review", json={"decisions": []})
    assert refused.status_code == 403 and "'review'" in refused.json()["detail"]


def test_the_ledger_exports_streamed_in_every_format(client):
    import csv
    import io
    import json
    import xml.etree.ElementTree as ET

    done = client.get("/v1/ledger/export", params={"format": "jsonld"})
    assert done.status_code == 200 and done.headers["content-type"] == "application/ld+json"
    assert 'filename="ledger.jsonld"' in done.headers["content-disposition"]
    graph = json.loads(done.text)["@graph"]
    statements = [n for n in graph if n.get("@type") == "rdf:Statement"]
    assert sorted(n["quote"] for n in statements) == sorted(c.quote for c in CLAIMS)
    assert all(n["evidence"][0]["tier"] == "exact" for n in statements)
    graphml = ET.fromstring(client.get("/v1/ledger/export", params={"format": "graphml"}).text)
    assert len([e for e in graphml.iter() if e.tag.endswith("edge")]) == 3
    assert (
        client.get("/v1/ledger/export", params={"format": "cypher"}).text.count("MERGE (c:Claim")
        == 3
    )
    edges = list(csv.DictReader(io.StringIO(client.get(
        "/v1/ledger/export", params={"format": "csv-edges"}).text)))  # fmt: skip
    assert sorted(r["claim_id"] for r in edges) == ["k1", "k2", "k3"]
    nodes = list(csv.DictReader(io.StringIO(client.get(
        "/v1/ledger/export", params={"format": "csv-nodes"}).text)))  # fmt: skip
    assert len(nodes) == 3
    assert client.get("/v1/ledger/export", params={"format": "csv"}).status_code == 422


def test_a_fact_history_and_the_state(client, tmp_path):
    from groundswell.shared.ledger.queries import write_facts

    with Ledger.open(str(tmp_path / "ledger.sqlite3")) as ledger:
        record(ledger, [
            C(f"f{i}", "doc", "revenue", str(v), document="doc", quote=f"revenue {v}")
            for i, v in enumerate((5, 6, 7))
        ])  # fmt: skip
        write_facts(ledger, [
            {"claim_id": f"f{i}", "field": "revenue", "key": "2025", "value": v,
             "run_id": f"r{i}", "policy_version": f"default@{i + 1}"}
            for i, v in enumerate((5, 6, 7))
        ])  # fmt: skip
    params = {"document": "doc", "field": "revenue", "fact_key": "2025", "limit": 2}
    first = client.get("/v1/ledger/history", params=params).json()
    assert [h["value"] for h in first["items"]] == [5, 6] and first["has_next_page"]
    rest = client.get("/v1/ledger/history", params={**params, "cursor": first["next_cursor"]})
    assert [(h["value"], h["policy_version"]) for h in rest.json()["items"]] == [(7, "default@3")]
    assert client.get("/v1/ledger/history", params={**params, "cursor": "x"}).status_code == 400
    state = client.get("/v1/ledger/state").json()
    assert state["claims"] == 6 and state["builds_pending"] == 0 and state["backend"] == "sqlite"


def test_an_unreachable_ledger_is_a_503_that_names_no_host_and_only_after_the_key(
    redis_server, tmp_path, caplog
):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        ledger_url=f"postgresql://groundswell:s3cret-pw@127.0.0.1:{port}/ledger",
        api_key_hashes=f"ops:runs:{hash_api_key(RUNS)},rita:review:{hash_api_key(REVIEW)}",
    )
    with TestClient(create_app(settings)) as anonymous:
        for route in ("/v1/ledger/claims", "/v1/ledger/state", "/v1/ledger/review"):
            assert anonymous.get(route).status_code == 401, route
        assert anonymous.post("/v1/ledger/review", json={"decisions": []}).status_code == 401
        other = anonymous.get("/v1/ledger/claims", headers={"X-API-Key": REVIEW})
        assert other.status_code == 403  # the scope is checked before the database is asked
        with caplog.at_level("WARNING", logger="groundswell.api.routes.ledger"):
            down = anonymous.get("/v1/ledger/claims", headers={"X-API-Key": RUNS})
    close_ledgers()
    assert down.status_code == 503
    assert down.json()["detail"] == "ledger database unavailable"
    for secret in ("127.0.0.1", str(port), "s3cret", "groundswell@", "postgresql"):
        assert secret not in down.text
    assert f"127.0.0.1:{port}" in caplog.text or f"port {port}" in caplog.text  # for operators
    assert "s3cret-pw" not in caplog.text


def test_a_path_search_past_its_budget_answers_that_it_stopped(redis_server, tmp_path, monkeypatch):
    from groundswell.shared.ledger import path as path_module
    from tests.shared.ledger.graphs import two_stars

    monkeypatch.setattr(path_module, "PROBE_PAIRS", 0)
    db = tmp_path / "stars.sqlite3"
    with Ledger.open(str(db)) as ledger:
        record(ledger, two_stars(40))
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        ledger_url=f"sqlite:///{db}",
        ledger_path_budget=30,
        api_key_hashes=f"ops:runs:{hash_api_key(RUNS)}",
    )
    with TestClient(create_app(settings), headers={"X-API-Key": RUNS}) as client:
        done = client.get("/v1/ledger/path", params={"start": "Hub A", "goal": "Hub B"})
    close_ledgers()
    assert done.status_code == 200
    body = done.json()
    assert body["found"] is False and body["stopped"] is True
    assert body["reason"].startswith("search stopped: it read 31 claims")


def test_a_ledger_database_that_goes_away_is_a_503_too(redis_server, tmp_path, caplog):
    from groundswell.shared.ledger.pgserver import PostgresServer

    server = PostgresServer(prefix="gs-ledger-gone-")
    url = server.start()
    try:
        settings = Settings(
            broker_url=redis_server.url,
            storage_url=str(tmp_path / "out"),
            ledger_url=url,
            api_key_hashes=f"ops:runs:{hash_api_key(RUNS)}",
        )
        with TestClient(create_app(settings), headers={"X-API-Key": RUNS}) as client:
            assert client.get("/v1/ledger/claims").status_code == 200
            server.stop()
            with caplog.at_level("WARNING", logger="groundswell.api.routes.ledger"):
                gone = [
                    client.get("/v1/ledger/claims"),
                    client.get("/v1/ledger/path", params={"start": "a", "goal": "b"}),
                ]
    finally:
        close_ledgers()
        server.stop()
    port = url.rsplit(":", 1)[1].split("/")[0]
    for answer in gone:
        assert answer.status_code == 503, answer.text
        assert answer.json() == {"detail": "ledger database unavailable"}
        assert port not in answer.text and "127.0.0.1" not in answer.text
    assert port in caplog.text  # the operator's log names the database
