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
    "progress": {"planned": 0, "done": 0, "failed": 0, "planning_done": False, "fraction": 0.0},
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
