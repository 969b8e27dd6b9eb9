"""engram mcp (the MCP server on stdio) and engram mcp-config (registration snippets)."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from engram.cli.common import EnvOption, state
from engram.config import DEFAULT_HOST, DEFAULT_PORT
from engram.service import Engram
from engram.setup.mcp_entries import WHERE, Launch, McpClient, snippet


def mcp(
    ctx: typer.Context,
    env: Annotated[str | None, EnvOption] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "warning",
) -> None:
    """Serve MCP on stdin/stdout, for a client that launches Engram (logs go to stderr).

    Acts as the owner of ENGRAM_TOKEN if set, else the local owner. The environment is --env,
    then ENGRAM_ENV, then the git project around the working directory (created on first use),
    then the default."""
    from engram.servers import run_stdio

    logging.basicConfig(stream=sys.stderr, level=log_level.upper())
    st = state(ctx)
    with Engram.open(st.settings) as engram:
        engram.start_indexer()
        run_stdio(engram, st.settings.token, env or st.env_override, Path.cwd())


def mcp_config(
    ctx: typer.Context,
    client: Annotated[McpClient, typer.Argument(help="The client to register Engram in.")],
    http: Annotated[
        bool, typer.Option("--http", help="Connect to a running 'engram serve' instead.")
    ] = False,
    url: Annotated[str | None, typer.Option(help="The server's MCP URL (with --http).")] = None,
    env: Annotated[str | None, EnvOption] = None,
) -> None:
    """Print the snippet that registers Engram in an MCP client (stdio by default; --http for a
    running server, the API key read from ENGRAM_TOKEN by the client)."""
    home = state(ctx).settings.home
    command = shutil.which("engram") or sys.argv[0]
    launch = Launch(
        command=str(Path(command).resolve()) if command else "engram",
        args=("mcp", *(("--env", env) if env else ())),
        env={"ENGRAM_HOME": str(home)},
        url=url or f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp",
    )
    typer.echo(f"# {client.value}: {WHERE[client]}", err=True)
    typer.echo(snippet(client, launch, http=http))


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.command("mcp-config")(mcp_config)
