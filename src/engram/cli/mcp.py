"""engram mcp (the MCP server on stdio) and engram mcp-config (registration snippets)."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from engram.capture.which import PROJECT_HEADER
from engram.cli.common import EnvOption, state
from engram.config import DEFAULT_HOST, DEFAULT_PORT
from engram.errors import NotFound
from engram.service import Engram
from engram.setup.mcp_entries import WHERE, Launch, McpClient, snippet


def mcp(
    ctx: typer.Context,
    env: Annotated[str | None, EnvOption] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "warning",
) -> None:
    """Serve MCP on stdin/stdout, for a client that launches Engram (logs go to stderr).

    Acts as the owner of ENGRAM_TOKEN if set, else the local owner. The environment is the one
    every command run here uses ('engram env which'): --env, then ENGRAM_ENV, then the project of
    the working directory (its .engram.toml, else its git root; created on first use), then the
    one chosen with 'env use', then 'default'. Refuses to start (exit 3) when the data
    directory does not exist, rather than serve an empty store."""
    from engram.servers import run_stdio

    logging.basicConfig(stream=sys.stderr, level=log_level.upper())
    st = state(ctx)
    home = st.settings.home
    if not home.is_dir():
        raise NotFound(
            f"the Engram home {home} does not exist: run 'engram init' (or point "
            "ENGRAM_HOME or --home at your data directory in the client's configuration)"
        )
    with Engram.open(st.settings) as engram:
        engram.start_indexer()
        run_stdio(engram, st.settings.token, st.current_environment(env), st.actor.project)


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
    running server, the API key read from ENGRAM_TOKEN by the client). With --http the snippet
    sends X-Engram-Project, the project of the working directory (or --env), so HTTP sessions
    use the environment 'engram list' uses here: put it in the project's own client config."""
    st = state(ctx)
    home = st.settings.home
    project = env or st.choice.ref
    headers = {PROJECT_HEADER: project} if http and project else {}
    command = shutil.which("engram") or sys.argv[0]
    launch = Launch(
        command=str(Path(command).resolve()) if command else "engram",
        args=("mcp", *(("--env", env) if env else ())),
        env={"ENGRAM_HOME": str(home)},
        url=url or f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp",
        headers=headers,
    )
    typer.echo(f"# {client.value}: {WHERE[client]}", err=True)
    typer.echo(snippet(client, launch, http=http))


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.command("mcp-config")(mcp_config)
