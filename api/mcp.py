"""The MCP server (``groundswell mcp``, issue 32 item 7): an agent records claims through the
ledger and cannot assert without quoting its source.

Tools, over one corpus (``--corpus``, a folder or s3:// prefix under
``GROUNDSWELL_ALLOWED_CORPORA``, as for the API):

- ``record_claim``: a claim about a document of the corpus, checked and stored exactly as
  ``POST /v1/ledger/claims`` does (:mod:`groundswell.shared.ledger.record`: the import's
  refusals, ``nearest`` for a near miss, the reported-asserter warning, ids
  ``<document>:<claim_id>``, create-once); needs a key with the ``record`` scope;
- ``check_quote``: whether a quote is in a document, as ``record_claim`` would locate it;
- ``verify``: a quotation against a document under a verification policy (the
  certificate: verdict, tier, offsets into the original text);
- ``admit``: a candidate against a document and the corpus's ``schema.json`` (the decision
  and its codes; the receipt's digest).

Authenticated like the API: over streamable HTTP every request carries ``X-API-Key`` (401
without, 403 with an unknown key, 429 past the per-key and failed-key limits, counted as the
API counts them); over stdio the key is ``GROUNDSWELL_API_KEY``, checked at start. Each tool
call is counted against the key's rate limit, and a team's key may use only its corpora.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from groundswell.shared.ledger.record import NoDocument, Source, check_quote, open_source
from groundswell.shared.ledger.record import record_claim as record
from groundswell.shared.settings import ApiKey, Settings, hash_api_key

API_KEY_HEADER = "x-api-key"


class Refused(ToolError):
    """A tool call refused (no key, no scope, no document...): its message is the error the
    client is shown (the SDK shows only a ToolError's)."""


def find_key(settings: Settings, presented: str | None) -> ApiKey | None:
    from groundswell.api.session import find_key as find

    return find(settings, hash_api_key(presented)) if presented else None


class Tools:
    """The tools over one corpus and one ledger; ``key_of(ctx)`` is the calling key."""

    def __init__(self, settings: Settings, corpus: str, stdio_key: ApiKey | None) -> None:
        from groundswell.api.guards import limits_for
        from groundswell.shared.ledger.store import Ledger

        self.settings = settings
        self.corpus = corpus
        self.stdio_key = stdio_key
        self.limits = limits_for(settings)
        self.ledger = Ledger.open(settings.ledger_database_url)

    def key(self, ctx: Any, scope: str | None = None) -> ApiKey:
        """The calling key, its call counted; Refused without ``scope`` or the corpus."""
        key = self.stdio_key
        request = getattr(getattr(ctx, "request_context", None), "request", None)
        if request is not None:  # streamable HTTP: the request's own key
            key = find_key(self.settings, request.headers.get(API_KEY_HEADER))
        if key is None:
            raise Refused("no valid API key (the X-API-Key header, or GROUNDSWELL_API_KEY)")
        try:
            self.limits.hit(self.limits.per_key, "key", key.digest)
        except HTTPException as exc:
            raise Refused(str(exc.detail)) from None
        if scope is not None and not key.allows(scope):
            raise Refused(f"the API key {key.name!r} has no {scope!r} scope (nor admin)")
        if not key.sees(self.corpus):
            raise Refused(f"the corpus is not among the corpora of the API key {key.name!r}")
        return key

    def source(self, document_id: str) -> Source:
        try:
            return open_source(self.corpus, document_id)
        except NoDocument as exc:
            raise Refused(str(exc)) from None


def build(settings: Settings, corpus: str, stdio_key: ApiKey | None = None):
    """The MCP server's tools over ``corpus`` (checked by the caller)."""
    tools = Tools(settings, corpus, stdio_key)
    server = MCPServer(
        "groundswell",
        instructions="Record claims about the corpus's documents: every claim quotes its "
        "document verbatim (check_quote first); a reported claim's quote names its asserter.",
    )

    @server.tool()
    def record_claim(
        document_id: str,
        subject: str,
        relation: str,
        object: str,
        quote: str,
        asserter: str,
        ctx: Context,
        modality: str = "assertion",
        polarity: str = "affirmed",
        hedge_markers: list[str] | None = None,
        subject_type: str | None = None,
        object_type: str | None = None,
        qualifier: str | None = None,
        confidence: float = 0.0,
        claim_id: str | None = None,
    ) -> dict[str, Any]:
        """Record a claim about a document: refused unless its quote is in the document
        (then ``nearest`` says where the closest span is), its relation and types in the
        corpus's vocabulary and its modality one of assertion, reported, conjecture,
        rejected, declined, question. A reported claim whose quote does not name its
        asserter is stored, with a warning. Recording the same claim again changes nothing."""
        key = tools.key(ctx, "record")
        line: dict[str, Any] = {
            "relation": relation,
            "subject_id": subject,
            "object_id": object,
            "quote": quote,
            "asserter": asserter,
            "modality": modality,
            "polarity": polarity,
            "hedge_markers": hedge_markers or [],
            "confidence": confidence,
        }
        optional = {"subject_type": subject_type, "object_type": object_type}
        optional |= {"qualifier": qualifier, "claim_id": claim_id}
        line |= {k: v for k, v in optional.items() if v is not None}
        return record(tools.ledger, tools.source(document_id), line, recorder=key.name).as_dict()

    @server.tool(name="check_quote")
    def check_quote_tool(document_id: str, quote: str, ctx: Context) -> dict[str, Any]:
        """Whether ``quote`` is in the document, as record_claim locates it (exact, then any
        case, then any spacing; never fuzzy): its offsets and pass, or the closest span."""
        tools.key(ctx)
        return check_quote(tools.source(document_id), quote)

    @server.tool()
    def verify(
        document_id: str, quote: str, ctx: Context, policy: str = "default"
    ) -> dict[str, Any]:
        """Verify a quotation against the document under a verification policy (strict,
        default, permissive): the verdict, the tier it was found at and its offsets into the
        original text."""
        from groundswell.shared.verify import Verifier, get_verify_policy

        tools.key(ctx)
        source = tools.source(document_id)
        try:
            chosen = get_verify_policy(policy)
        except ValueError as exc:
            raise Refused(str(exc)) from None
        return Verifier(source.text, chosen).verify(quote).as_dict()

    @server.tool()
    def admit(document_id: str, candidate: dict[str, Any], ctx: Context) -> dict[str, Any]:
        """Admit one candidate (a groundgate candidate: field, value, evidence) against the
        document and the corpus's schema.json: its outcome, codes and the receipt's digest."""
        from groundswell.shared.admit import PacketError
        from groundswell.shared.admit import admit as admit_candidates
        from groundswell.shared.storage import open_store

        tools.key(ctx)
        source = tools.source(document_id)
        try:
            schema = json.loads(open_store(tools.corpus).get("schema.json"))
        except KeyError:
            raise Refused("the corpus has no schema.json to admit against") from None
        try:
            receipt = admit_candidates(source.text, schema, [candidate], document_id=document_id)
        except PacketError as exc:
            raise Refused(f"not a candidate: {exc}") from None
        return {
            "decisions": receipt.get("decisions"),
            "receipt_sha256": receipt.get("receipt_sha256"),
        }

    return server


def http_app(settings: Settings, corpus: str):
    """The streamable HTTP app (``/mcp``), behind the API's authentication and rate limits."""
    from starlette.responses import JSONResponse

    from groundswell.api.guards import client_address, limits_for

    server = build(settings, corpus)
    app = server.streamable_http_app()
    limits = limits_for(settings)

    class Authenticated:
        def __init__(self, app: Any) -> None:
            self.inner = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await self.inner(scope, receive, send)
                return
            from starlette.requests import Request

            request = Request(scope)
            presented = request.headers.get(API_KEY_HEADER)
            address = client_address(request)
            try:
                limits.hit(limits.per_address, "address", address)
                if not presented:
                    limits.failed(address, None)
                    raise HTTPException(401, "missing API key: send it in the X-API-Key header")
                key = find_key(settings, presented)
                if key is None:
                    limits.failed(address, hash_api_key(presented))
                    raise HTTPException(403, "invalid API key")
            except HTTPException as exc:
                response = JSONResponse(
                    {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
                )
                await response(scope, receive, send)
                return
            await self.inner(scope, receive, send)

    app.add_middleware(Authenticated)
    return app
