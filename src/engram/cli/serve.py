"""engram serve: the REST API and MCP over HTTP (see :mod:`engram.servers`)."""

from __future__ import annotations

import logging
import os
from typing import Annotated

import typer

from engram.cli.common import state
from engram.config import DEFAULT_HOST, DEFAULT_MAX_IN_FLIGHT, DEFAULT_PORT, ServerSettings
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
    workers: Annotated[
        int,
        typer.Option(
            min=0,
            help="Server processes over the one store (0: one per core). Each answers any "
            "request; the first also embeds and maintains. With several, MCP over HTTP is "
            "stateless and a dashboard sign-in holds only in the worker that made it.",
        ),
    ] = 1,
    max_in_flight: Annotated[
        int,
        typer.Option(
            min=0,
            help="Requests in flight per process beyond which a request is answered 429 with "
            "Retry-After (0: unbounded).",
        ),
    ] = DEFAULT_MAX_IN_FLIGHT,
) -> None:
    """Serve the REST API (docs at /docs, health at /healthz and /readyz, metrics at /metrics).

    New memories are embedded in the background (searchable by keyword at once, by meaning
    within seconds) and every environment is maintained on a schedule (dedup, contradiction,
    decay, compaction; see 'engram maintain'). Logs are JSON lines on stderr. SIGINT/SIGTERM
    stop accepting connections, finish in-flight requests (up to 10 s) and close the database.
    With several workers, each is a process of its own on the one port.
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
        workers=workers or os.cpu_count() or 1,
        max_in_flight=max_in_flight,
    )
    servers.configure_logging(log_level)
    every = maintenance_every * 3600
    with Engram.open(settings) as engram:
        engram.environments.ensure_default(state(ctx).actor)
        if bootstrap(engram, settings.home) is not None:
            logging.getLogger("engram.api").info(
                "owner token written", extra={"path": str(settings.home / "token")}
            )
        if server_settings.workers == 1:
            servers.run_http(engram, server_settings, maintenance_every=every)
            return
    # the workers open the store themselves: nothing of it may cross the fork
    code = servers.run_workers(settings, server_settings, maintenance_every=every)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
