"""Ids and cursors are checked at the boundary (issue 25, item 5): a policy name, a run id or a
cursor the API never made is a 4xx, decided before anything is listed or read, never a 500.
In process (FastAPI's TestClient) over a real Redis, a real finished run of the sample corpus
in a local output store, and a SQLite ledger."""

from __future__ import annotations

import base64
import json

import pytest
from fastapi.testclient import TestClient

from groundswell.api.main import create_app
from groundswell.api.routes.ledger import close_ledgers
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.settings import Settings, hash_api_key
from groundswell.shared.storage.local import LocalStore
from tests.shared.ledger.graphs import C, record
from tests.shared.test_review_store import drive_run

pytestmark = pytest.mark.integration

ADMIN = "gs_boundaries_admin"
DOTS = "%2E%2E"  # what `curl --path-as-is .../..` reaches the route as: the name ".."


def cursor_of(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.fixture
def stack(redis_server, tmp_path):
    import redis

    redis.Redis.from_url(redis_server.url).flushall()
    db = tmp_path / "ledger.sqlite3"
    with Ledger.open(str(db)) as ledger:
        record(ledger, [C("k1", "Acme Ltd", "ACQUIRED", "Beta Inc", quote="Acme acquires Beta")])
    settings = Settings(
        broker_url=redis_server.url,
        storage_url=str(tmp_path / "out"),
        ledger_url=f"sqlite:///{db}",
        api_key_hashes=f"ada:admin:{hash_api_key(ADMIN)}",
    )
    _, run = drive_run(settings)
    with TestClient(create_app(settings), headers={"X-API-Key": ADMIN}) as client:
        yield client, run
    close_ledgers()


@pytest.fixture
def listed(monkeypatch) -> list[str]:
    """The prefixes every local store lists while the test runs."""
    prefixes: list[str] = []
    original = LocalStore.list_pages

    def spy(self, prefix, **kwargs):
        prefixes.append(prefix)
        return original(self, prefix, **kwargs)

    monkeypatch.setattr(LocalStore, "list_pages", spy)
    return prefixes


def test_a_policy_name_outside_the_pattern_is_a_404_before_any_listing(stack, listed):
    client, _ = stack
    for path in (
        f"/v1/policies/{DOTS}",
        f"/v1/policies/{DOTS}/versions/1",
        "/v1/policies/Default",
        "/v1/policies/a%00b",
    ):
        listed.clear()
        answer = client.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert "policy name" in answer.json()["detail"]
        assert listed == [], path  # refused before the store is listed
    assert client.get("/v1/policies/default").status_code == 200


def test_a_run_id_outside_the_pattern_is_a_404_on_every_route(stack, listed):
    client, run = stack
    for method, path in (
        ("GET", f"/v1/runs/{DOTS}"),
        ("GET", f"/v1/runs/{DOTS}/summary"),
        ("GET", f"/v1/runs/{DOTS}/report"),
        ("GET", f"/v1/runs/{DOTS}/receipts"),
        ("GET", f"/v1/runs/{DOTS}/documents/d/receipts"),
        ("GET", f"/v1/runs/{DOTS}/diff/{run.id}"),
        ("GET", f"/v1/runs/{run.id}/diff/{DOTS}"),
        ("POST", f"/v1/runs/{DOTS}/cancel"),
        ("GET", f"/v1/runs/{DOTS}/review/measures"),
        ("POST", f"/v1/runs/{DOTS}/review/resolve"),
        ("GET", f"/v1/runs/{DOTS}/review/resolution"),
        ("GET", "/v1/review/tasks?run=.."),
        ("GET", "/v1/review/tasks?run=../../etc"),
    ):
        listed.clear()
        answer = client.request(method, path)
        assert answer.status_code == 404, (method, path, answer.text)
        assert "no run" in answer.json()["detail"], path
        assert not [p for p in listed if ".." in p], path
    assert client.get(f"/v1/runs/{run.id}/summary").status_code == 200


@pytest.mark.parametrize(
    "crafted",
    [
        [10**30],
        {"k": {"a": 1}},
        {"k": [10**30, "verify"]},
        {"k": "ab"},
        {"s": ["x"], "o": 0},
        {"s": None, "o": 10**30},
        {"s": None, "o": -1},
        {"s": None, "o": "7"},
        {"k": ["a", "verify"], "x": 1},
    ],
    ids=repr,
)
def test_a_crafted_receipts_cursor_is_a_400(stack, crafted):
    client, run = stack
    answer = client.get(f"/v1/runs/{run.id}/receipts", params={"cursor": cursor_of(crafted)})
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"] == "invalid cursor"
    first = client.get(f"/v1/runs/{run.id}/receipts", params={"limit": 3}).json()
    rest = client.get(f"/v1/runs/{run.id}/receipts", params={"cursor": first["next_cursor"]})
    assert rest.status_code == 200 and rest.json()["items"][0] != first["items"][0]


LEDGER_PAGES = [
    "/v1/ledger/claims",
    "/v1/ledger/disagreements",
    "/v1/ledger/disagreements?kind=objects",
    "/v1/ledger/disagreements?kind=facts",
    "/v1/ledger/search?q=acme",
    "/v1/ledger/history?document=d&field=f",
    "/v1/ledger/review",
]


@pytest.mark.parametrize(
    "crafted",
    [[10**30], [2**63], [-(10**30)], [{}], [[1]], [{"a": 1}, 1], [["x"], "y"], [1e308 * 10]],
    ids=repr,
)
def test_a_crafted_ledger_cursor_is_a_400_on_every_page(stack, crafted):
    client, _ = stack
    text = cursor_of(crafted)
    for path in LEDGER_PAGES:
        joined = "&" if "?" in path else "?"
        answer = client.get(f"{path}{joined}cursor={text}")
        assert answer.status_code == 400, (path, crafted, answer.text)
        assert answer.json()["detail"] == "invalid cursor"
