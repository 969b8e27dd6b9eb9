"""engram mcp (the MCP server on stdio) and engram mcp-config (registration snippets)."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

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
    url: Annotated[
        str | None,
        typer.Option(
            help="The server's URL (with --http); without a path '/mcp' is appended, so "
            "http://host:8765 and http://host:8765/mcp give the same snippet."
        ),
    ] = None,
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
        url=mcp_url(url or f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"),
        headers=headers,
    )
    typer.echo(f"# {client.value}: {WHERE[client]}", err=True)
    typer.echo(snippet(client, launch, http=http))


def mcp_url(url: str) -> str:
    """A server's URL as its MCP endpoint: '/mcp' when it names no path (the root answers an
    MCP request 405); a URL with a path is kept as given (a proxy may mount MCP elsewhere)."""
    parts = urlsplit(url.strip())
    if parts.path not in ("", "/"):
        return url.strip()
    return urlunsplit(parts._replace(path="/mcp"))


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
    app.command("mcp-config")(mcp_config)
