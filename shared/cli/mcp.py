"""``groundswell mcp``: the MCP server agents record claims through (see groundswell.api.mcp)."""

from __future__ import annotations

import click

from groundswell.shared.cli.app import main


@main.command("mcp")
@click.option(
    "--corpus",
    required=True,
    help="The corpus the tools read documents (and vocabulary.yaml, schema.json) from: a "
    "folder or s3://bucket/prefix under GROUNDSWELL_ALLOWED_CORPORA.",
)
@click.option(
    "--http",
    "http",
    is_flag=True,
    help="Serve streamable HTTP at http://HOST:PORT/mcp (each request's X-API-Key); "
    "without it, stdio (the key is GROUNDSWELL_API_KEY).",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8001, show_default=True, type=int)
def mcp_cmd(corpus: str, http: bool, host: str, port: int) -> None:
    """An MCP server with the tools record_claim, check_quote, verify and admit: an agent
    cannot record a claim without quoting its source."""
    import os

    from groundswell.shared.cli.runs import _settings
    from groundswell.shared.settings import NotConfigured

    settings = _settings()
    try:
        settings.state_redis_url  # noqa: B018 (the keys' rate limits are counted there)
    except NotConfigured as exc:
        raise click.UsageError(
            f"`groundswell mcp` counts each key's calls in Redis: {exc}"
        ) from None
    if settings.allowed_root(corpus) is None:
        raise click.UsageError(
            f"{corpus} is not under GROUNDSWELL_ALLOWED_CORPORA, the folders and "
            "s3://bucket/prefixes the API and this server may read"
        )
    if not corpus.startswith("s3://"):
        corpus = os.path.realpath(corpus.removeprefix("file://"))
    if http:
        import uvicorn

        from groundswell.api.mcp import http_app

        uvicorn.run(http_app(settings, corpus), host=host, port=port, log_level="warning")
        return
    from groundswell.api.mcp import build, find_key

    presented = settings.api_key.get_secret_value() if settings.api_key else None
    key = find_key(settings, presented)
    if key is None:
        raise click.UsageError(
            "stdio needs GROUNDSWELL_API_KEY, a key of GROUNDSWELL_API_KEY_HASHES (with the "
            "record scope to record claims)"
        )
    if not key.sees(corpus):
        raise click.UsageError(f"{corpus} is not among the corpora of the API key {key.name!r}")
    build(settings, corpus, key).run("stdio")
