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

RUNS, REVIEW = "gs_runs_key", "gs_review_only"
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
        api_key_hashes=f"ops:runs:{hash_api_key(RUNS)},rita:review:{hash_api_key(REVIEW)}",
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
