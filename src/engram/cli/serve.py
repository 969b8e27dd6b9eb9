"""engram serve: the REST API and MCP over HTTP (see :mod:`engram.servers`)."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from engram.cli.common import state
from engram.config import DEFAULT_HOST, DEFAULT_PORT, ServerSettings
from engram.service import Engram


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind; non-loopback needs auth.")] = (
        DEFAULT_HOST
    ),
    port: Annotated[int, typer.Option(help="Port (0 picks a free one).")] = DEFAULT_PORT,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="Let every request act as the owner (loopback only)."),
    ] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "info",
    maintenance_every: Annotated[
        float,
        typer.Option(help="Hours between lifecycle maintenance sweeps (0: never)."),
    ] = 6.0,
    public_url: Annotated[
        str | None,
        typer.Option(
            help="Where clients reach the server (behind a proxy): named in the MCP auth "
            "metadata, and its host accepted on /mcp (default: ENGRAM_PUBLIC_URL).",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host (name or name:port) that /mcp accepts besides the loopback names; "
            "repeatable (default: ENGRAM_ALLOWED_HOSTS, comma-separated). On a non-loopback "
            "address with none given, /mcp accepts any Host (every request needs a key).",
        ),
    ] = None,
) -> None:
    """Serve the REST API (docs at /docs, health at /healthz and /readyz, metrics at /metrics).

    New memories are embedded in the background (searchable by keyword at once, by meaning
    within seconds) and every environment is maintained on a schedule (dedup, contradiction,
    decay, compaction; see 'engram maintain'). Logs are JSON lines on stderr. SIGINT/SIGTERM
    stop accepting connections, finish in-flight requests (up to 10 s) and close the database.
    """
    from engram import servers
    from engram.cli.keys import bootstrap

    settings = state(ctx).settings
    hosts = [h for value in allowed_host or [] for h in value.split(",") if h]
    server_settings = ServerSettings(
        host=host,
        port=port,
        auth=not no_auth,
        log_level=log_level,
        public_url=public_url or settings.public_url,
        allowed_hosts=tuple(hosts) or settings.allowed_hosts,
    )
    servers.configure_logging(log_level)
    with Engram.open(settings) as engram:
        engram.environments.ensure_default(state(ctx).actor)
        if bootstrap(engram, settings.home) is not None:
            logging.getLogger("engram.api").info(
                "owner token written", extra={"path": str(settings.home / "token")}
            )
        servers.run_http(engram, server_settings, maintenance_every=maintenance_every * 3600)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
