"""The MCP server (issue 32 item 7), driven by the ``mcp`` SDK's own client over stdio and
streamable HTTP, on both backends: record (stored as an import stores it), refuse (the
import's reasons, and where the closest span is), warn (a reported claim's asserter),
check_quote, verify (tier and offsets), admit (against the corpus's schema); keys as the
API's (a record scope to record; 401/403 over HTTP without a valid one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from groundswell.shared.ledger.pgserver import free_port
from groundswell.shared.ledger.store import Ledger
from groundswell.shared.settings import hash_api_key
from tests.conftest import wait_until

pytestmark = pytest.mark.integration

AGENT, READER = "gs_agent_key", "gs_reader_key"
DOC = (
    "1.1  Acme Ltd hereby acquires Beta Inc, effective 1 March 2026.\n"
    "2.3  Reuters reports that Beta Inc owns Gamma Holdings. The limit is $7,000.\n"
)
SCHEMA = {"fields": {"limit": {"type": "integer", "unit": "USD"}}}
BIN = Path(sys.executable).parent / "groundswell"


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "documents").mkdir(parents=True)
    (root / "documents" / "contract.txt").write_text(DOC)
    (root / "vocabulary.yaml").write_text("name: deals\nrelations:\n  ACQUIRED:\n  OWNS:\n")
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    return root


@pytest.fixture
def env(redis_server, tmp_path, ledger_url):
    return {
        **os.environ,
        "GROUNDSWELL_REDIS_URL": redis_server.url,
        "GROUNDSWELL_LEDGER_URL": ledger_url,
        "GROUNDSWELL_ALLOWED_CORPORA": str(tmp_path),
        "GROUNDSWELL_API_KEY_HASHES": f"agent:record:{hash_api_key(AGENT)},"
        f"reader:runs:{hash_api_key(READER)}",
        "GROUNDSWELL_API_KEY": AGENT,
    }


def _data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


async def _session(client: Client) -> dict:
    """Every tool once or more; what each answered."""
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools == {"record_claim", "check_quote", "verify", "admit"}
    claim = {"document_id": "contract", "subject": "Acme Ltd", "relation": "ACQUIRED",
             "object": "Beta Inc", "quote": "acme ltd hereby  acquires Beta Inc",
             "asserter": "the agreement", "claim_id": "c1"}  # fmt: skip
    out = {"recorded": _data(await client.call_tool("record_claim", claim))}
    out["again"] = _data(await client.call_tool("record_claim", claim))
    near = {**claim, "quote": "Acme Limited hereby acquires Beta Inc", "claim_id": "c2"}
    out["near"] = _data(await client.call_tool("record_claim", near))
    out["vocab"] = _data(await client.call_tool("record_claim", {**claim, "relation": "SUED"}))
    out["modality"] = _data(
        await client.call_tool("record_claim", {**claim, "modality": "probably", "claim_id": "m"})
    )
    warned = {**claim, "relation": "OWNS", "subject": "Beta Inc", "object": "Gamma Holdings",
              "modality": "reported", "asserter": "Bloomberg", "claim_id": "c3",
              "quote": "Beta Inc owns Gamma Holdings"}  # fmt: skip
    out["warned"] = _data(await client.call_tool("record_claim", warned))
    out["check"] = _data(
        await client.call_tool("check_quote", {"document_id": "contract", "quote": "BETA INC"})
    )
    out["verify"] = _data(
        await client.call_tool(
            "verify", {"document_id": "contract", "quote": "Reuters reports that Beta Inc"}
        )
    )
    candidate = {"id": "a1", "field": "limit", "value": "7000", "unit": "USD",
                 "evidence": {"text": "$7,000"}}  # fmt: skip
    out["admit"] = _data(
        await client.call_tool("admit", {"document_id": "contract", "candidate": candidate})
    )
    missing = await client.call_tool("check_quote", {"document_id": "nope", "quote": "x"})
    assert missing.is_error and "documents/nope.txt" in missing.content[0].text
    return out


def _check(out: dict, ledger_url: str) -> None:
    assert out["recorded"] == {"ok": True, "claim_id": "contract:c1", "created": True,
                               "located_at": [5, 38], "tier": "whitespace", "warnings": []}  # fmt: skip
    assert out["again"]["ok"] and out["again"]["created"] is False
    assert out["near"]["error"] == "quote_not_found"
    assert out["near"]["nearest"]["text"] == "Acme Ltd hereby acquires Beta Inc"
    assert (out["vocab"]["error"], out["vocab"]["field"]) == ("vocabulary", "relation")
    assert (out["modality"]["error"], out["modality"]["field"]) == ("invalid", "modality")
    assert out["warned"]["ok"] and "'Bloomberg'" in out["warned"]["warnings"][0]
    at = DOC.index("Beta Inc")
    assert out["check"] == {"found": True, "start": at, "end": at + 8, "tier": "case"}
    cert = out["verify"]
    assert (cert["verdict"], cert["tier"], cert["start"], cert["end"]) == (
        "grounded", "exact", DOC.index("Reuters"), DOC.index("Reuters") + 29)  # fmt: skip
    (decision,) = out["admit"]["decisions"]
    assert decision["outcome"] == "admitted" and out["admit"]["receipt_sha256"]
    with Ledger.open(ledger_url) as ledger, ledger.engine.connect() as conn:
        from sqlalchemy import text

        rows = conn.execute(text("SELECT id, origin, corpus FROM claims ORDER BY id")).all()
    assert [r[0] for r in rows] == ["contract:c1", "contract:c3"]
    assert rows[0][1] == "recorded by agent:1" and rows[0][2].endswith("corpus")


def test_the_sdk_client_over_stdio(env, corpus, ledger_url):
    server = StdioServerParameters(command=str(BIN), args=["mcp", "--corpus", str(corpus)], env=env)

    async def main() -> dict:
        async with Client(server) as client:
            return await _session(client)

    _check(anyio.run(main), ledger_url)


def test_the_sdk_client_over_streamable_http_with_the_apis_keys(env, corpus, ledger_url):
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN), "mcp", "--corpus", str(corpus), "--http", "--port", str(port)],
        env={k: v for k, v in env.items() if k != "GROUNDSWELL_API_KEY"},
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:

        def up() -> bool:
            try:
                return httpx.get(url, timeout=2).status_code == 401
            except httpx.HTTPError:
                return False

        wait_until(up, 60, "the MCP server")
        assert httpx.post(url, json={}, headers={"X-API-Key": "nope"}).status_code == 403

        async def main(key: str):
            import httpx2

            http = httpx2.AsyncClient(headers={"X-API-Key": key})
            async with Client(streamable_http_client(url, http_client=http)) as client:
                if key == READER:  # a key without the record scope reads, never records
                    refused = await client.call_tool(
                        "record_claim",
                        {
                            "document_id": "contract",
                            "subject": "A",
                            "relation": "OWNS",
                            "object": "B",
                            "quote": "Beta Inc",
                            "asserter": "x",
                        },
                    )
                    assert refused.is_error and "'record'" in refused.content[0].text
                    return _data(await client.call_tool(
                        "check_quote", {"document_id": "contract", "quote": "Beta Inc"}))  # fmt: skip
                return await _session(client)

        assert anyio.run(main, READER)["found"]
        _check(anyio.run(main, AGENT), ledger_url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_each_tool_call_counts_against_the_keys_rate_limit(redis_server, corpus, tmp_path):
    from groundswell.api.mcp import build, find_key
    from groundswell.shared.settings import Settings

    settings = Settings(
        redis_url=redis_server.url,
        ledger_url=str(tmp_path / "ledger.sqlite3"),
        allowed_corpora=str(tmp_path),
        api_key_hashes=f"limited:record:{hash_api_key('gs_limited')}",
        api_rate_per_key="2/minute",
    )
    server = build(settings, str(corpus), find_key(settings, "gs_limited"))
    quote = {"document_id": "contract", "quote": "Beta Inc"}

    async def main() -> list:
        async with Client(server) as client:  # the SDK's client, in process
            return [await client.call_tool("check_quote", quote) for _ in range(3)]

    first, second, third = anyio.run(main)
    assert not first.is_error and not second.is_error
    assert third.is_error and "too many requests" in third.content[0].text
