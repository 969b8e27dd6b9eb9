"""engram hooks install|uninstall|status|flush: wire coding agents' lifecycle hooks to Engram."""

from __future__ import annotations

import os
import shutil
import sys
from enum import StrEnum
from typing import Annotated

import typer

from engram.capture.events import Agent
from engram.cli.common import state
from engram.hooks import install as installer
from engram.hooks.paths import hooks_dir
from engram.hooks.spool import Spool

app = typer.Typer(
    help="Capture coding-agent sessions: wire Claude Code, Codex, Gemini CLI, Cursor and "
    "OpenCode to Engram through their lifecycle hooks.",
    no_args_is_help=True,
)


class AgentChoice(StrEnum):
    CLAUDE = "claude"
    CODEX = "codex"
    GEMINI = "gemini"
    CURSOR = "cursor"
    OPENCODE = "opencode"
    ALL = "all"


_BINARIES = {
    Agent.CLAUDE: "claude",
    Agent.CODEX: "codex",
    Agent.GEMINI: "gemini",
    Agent.CURSOR: "cursor-agent",
    Agent.OPENCODE: "opencode",
}
AgentOption = typer.Option(
    "--agent",
    "-a",
    help="An agent (repeatable) or 'all'; default: the agents found (their config folder or "
    "command exists).",
)


def _chosen(agents: list[AgentChoice] | None) -> list[Agent]:
    if agents and AgentChoice.ALL in agents:
        return list(Agent)
    if agents:
        return [Agent(a.value) for a in agents]
    env = os.environ
    found = [
        a
        for a in Agent
        if installer.config_path(a, env).parent.exists() or shutil.which(_BINARIES[a])
    ]
    if not found:
        raise typer.BadParameter("no coding agent found here; name one with --agent")
    return found


@app.command("install")
def install_cmd(
    ctx: typer.Context,
    agent: Annotated[list[AgentChoice] | None, AgentOption] = None,
    url: Annotated[
        str | None,
        typer.Option(
            envvar="ENGRAM_URL",
            help="The Engram server (default: the port of the installed 'engram service', "
            "else 127.0.0.1:8765), as 'engram setup' wires it.",
        ),
    ] = None,
) -> None:
    """Add Engram's hooks to each agent's configuration (merged: other hooks are kept; the file
    is backed up first). The hooks post to a running 'engram serve'; while it is down they
    spool locally and deliver later."""
    from engram.setup.session import hook_settings, server_of

    server = server_of(url, os.environ, sys.platform)
    settings = hook_settings(state(ctx).settings.home, server)
    for a in _chosen(agent):
        change = installer.install(a, os.environ, settings=settings)
        backup = f" (backup: {change.backup})" if change.backup else ""
        typer.echo(f"{a.value}: {change.action} {change.path}{backup}")


@app.command("uninstall")
def uninstall_cmd(agent: Annotated[list[AgentChoice] | None, AgentOption] = None) -> None:
    """Remove Engram's hooks (only those; the file is backed up first)."""
    for a in _chosen(agent):
        change = installer.uninstall(a, os.environ)
        backup = f" (backup: {change.backup})" if change.backup else ""
        if change.action == "absent":
            typer.echo(f"{a.value}: no Engram hooks in {change.path}")
        elif a is Agent.OPENCODE:  # the plugin file is Engram's own
            typer.echo(f"{a.value}: removed Engram's plugin {change.path}{backup}")
        else:
            typer.echo(f"{a.value}: removed Engram's hooks from {change.path} (other settings "
                       f"kept){backup}")  # fmt: skip


@app.command("status")
def status_cmd(
    ctx: typer.Context, agent: Annotated[list[AgentChoice] | None, AgentOption] = None
) -> None:
    """Which agents' events are wired to Engram, how many events wait in the spool, and where
    the spool and the hook log are."""
    for a in _chosen(agent) if agent else list(Agent):
        st = installer.status(a, os.environ)
        if st.error is not None:
            typer.echo(f"{a.value}: {st.error}, then engram hooks install --agent {a.value}")
            continue
        wired = ", ".join(st.installed) if st.installed else "not installed"
        typer.echo(f"{a.value}: {wired} ({st.path})")
    directory = hooks_dir({"ENGRAM_HOME": str(state(ctx).settings.home)})
    spool = os.path.join(directory, "spool")
    spooled = Spool(spool)
    typer.echo(f"spool: {spooled.count()} events in {spool}")
    refused = spooled.count_rejected()
    if refused:
        typer.echo(
            f"rejected: {refused} events the server refused for good, in "
            f"{spooled.rejected_dir} (the reasons are in the log)"
        )
    typer.echo(f"log: {os.path.join(directory, 'hook.log')}")


@app.command("flush")
def flush_cmd(ctx: typer.Context) -> None:
    """Deliver the spooled events to the server now (they are also sent with the next event
    any hook captures), and say why any were not: an event the server refuses for good (an
    environment that does not exist, an event that is not valid) is set aside in
    <home>/hooks/rejected/ with the reason; exit 1 when any was not delivered."""
    from collections import Counter

    from engram.hooks.client import flush

    env = {**os.environ, "ENGRAM_HOME": str(state(ctx).settings.home)}
    done = flush(env)
    typer.echo(f"delivered {done.sent} spooled events; {done.left} left")
    if done.refused:
        rejected = Spool(os.path.join(hooks_dir(env), "spool")).rejected_dir
        typer.echo(f"refused for good, set aside in {rejected}: {len(done.refused)} events")
        for reason, n in Counter(done.refused).most_common():
            typer.echo(f"  {n} x {reason}")
    if done.left:
        typer.echo(f"not delivered: {done.error or 'the server did not take them'}")
    if done.left or done.refused:
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="hooks")
