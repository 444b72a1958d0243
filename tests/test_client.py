"""groundswell's HTTP client and the CLI commands over it, against a transport that records
what is sent (the API itself is tested on a real uvicorn in tests/api)."""

from __future__ import annotations

import json

import httpx
from click.testing import CliRunner

import groundswell.client
from groundswell.client import Client
from groundswell.shared.cli.app import main

RUN = {
    "id": "20261201T040000Z-0a1b2c3d4",
    "state": "queued",
    "corpus": "/data/c",
    "policy": {"ref": "default@1"},
    "created_at": "2026-12-01T04:00:00Z",
    "output": None,
    "engines": {},
    "only": "missing",
    "dry_run": False,
    "previous_run": None,
    "schedule": None,
    "started_at": None,
    "finished_at": None,
    "progress": {
        "planned": 0,
        "done": 0,
        "failed": 0,
        "planning_done": False,
        "fraction": 0.0,
        "units": {},
    },
    "links": {"self": "/v1/runs/r", "summary": "/v1/runs/r/summary", "receipts": "/r"},
}


def recording() -> tuple[list[dict], httpx.MockTransport]:
    sent: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(202, json=RUN)

    return sent, httpx.MockTransport(answer)


def test_submit_sends_ledger_only_when_asked():
    sent, transport = recording()
    with Client("http://api", "k", transport=transport) as client:
        assert client.submit("/data/c", "default@1").id == RUN["id"]
        client.submit("/data/c", ledger=True)
    assert "ledger" not in sent[0] and sent[0]["policy"] == "default@1"
    assert sent[1]["ledger"] is True and "policy" not in sent[1]


def test_submit_sends_a_format_only_when_named():
    sent, transport = recording()
    with Client("http://api", "k", transport=transport) as client:
        client.submit("/data/lx", format="langextract")
        client.submit("/data/c")
    assert sent[0]["format"] == "langextract" and "format" not in sent[1]


def test_the_submit_command_takes_ledger(monkeypatch, tmp_path):
    sent, transport = recording()

    class Recorded(Client):
        def __init__(self, url: str, api_key: str | None = None) -> None:
            super().__init__(url, api_key, transport=transport)

    monkeypatch.setattr(groundswell.client, "Client", Recorded)
    env = {"GROUNDSWELL_API_URL": "http://api", "GROUNDSWELL_API_KEY": "k"}
    done = CliRunner().invoke(main, ["submit", str(tmp_path), "--ledger"], env=env)
    assert done.exit_code == 0, done.output
    assert done.stdout.strip().endswith(RUN["id"])
    assert sent == [{"corpus": str(tmp_path.resolve()), "only": "missing", "dry_run": False,
                     "ledger": True}]  # fmt: skip


# -- the Python client: settings, errors, and every route of the app ------------------------


def test_client_reads_the_settings_the_cli_reads(monkeypatch):
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=RUN)

    monkeypatch.setenv("GROUNDSWELL_API_URL", "http://configured:9999")
    monkeypatch.setenv("GROUNDSWELL_API_KEY", "gs_from_the_environment")
    with Client(transport=httpx.MockTransport(answer)) as client:
        assert client.status(RUN["id"]).terminal is False
    assert str(seen[0].url) == f"http://configured:9999/v1/runs/{RUN['id']}"
    assert seen[0].headers["X-API-Key"] == "gs_from_the_environment"


def test_every_failure_is_an_api_error(monkeypatch):
    from groundswell.client import APIError
    from groundswell.workers.embedded import free_port

    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with Client(down, "k", timeout=5) as client:
        try:
            client.runs()
        except APIError as exc:
            assert exc.status is None and exc.detail is None
            assert exc.message.startswith(f"cannot reach the API at {down}")
        else:
            raise AssertionError("no APIError")

    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"detail": "no run x"})

    with Client("http://api", "k", transport=httpx.MockTransport(refuse)) as client:
        try:
            client.status("x")
        except APIError as exc:
            assert (exc.status, exc.detail) == (404, "no run x")
            assert exc.message == "GET /v1/runs/x: 404 no run x"
        else:
            raise AssertionError("no APIError")


def app_operations() -> set[tuple[str, str]]:
    from groundswell.api.main import create_app

    paths = create_app().openapi()["paths"]
    return {(method.upper(), path) for path, ops in paths.items() for method in ops}


def test_every_operation_of_the_api_has_a_client_method():
    from groundswell.client import covered_routes

    operations, covered = app_operations(), covered_routes()
    assert len(operations) >= 35
    missing = sorted(operations - set(covered))
    assert not missing, f"routes without a Client method: {missing}"
    assert not set(covered) - operations, "Client methods of routes the app does not have"
