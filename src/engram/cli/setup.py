"""engram setup, engram service and engram doctor: wire the installed agents to Engram, run
the server at login, and check that it all works (the logic lives in :mod:`engram.setup`)."""

from __future__ import annotations

import os
import sys
import urllib.parse
from pathlib import Path
from typing import Annotated

import typer

from engram.cli.common import service, state
from engram.config import DEFAULT_HOST, DEFAULT_PORT
from engram.errors import InvalidInput
from engram.private_files import write_private
from engram.setup import doctor as checks
from engram.setup import model, session, unit
from engram.setup.agents import AGENTS, AgentId, parse_agent

AgentOpt = typer.Option(
    "--agent",
    "-a",
    help="Only this agent (repeatable): claude, codex, gemini, cursor, opencode, vscode, "
    "claude-desktop, windsurf. Default: every agent found (its command on PATH or its "
    "configuration folder).",
)
UrlOpt = typer.Option(
    "--url",
    envvar="ENGRAM_URL",
    help="The Engram server. On this machine (http://127.0.0.1:PORT, localhost): clients "
    "launch 'engram mcp', the hooks post there. Elsewhere (https://host[:port]): clients "
    "connect over HTTP with the key from ENGRAM_TOKEN, hooks post there. Default: the port "
    "of the installed 'engram service', else 127.0.0.1:8765.",
)


def _agents(names: list[str] | None) -> list[AgentId] | None:
    return [parse_agent(n) for n in names] if names else None


def _say(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


def setup(
    ctx: typer.Context,
    agent: Annotated[list[str] | None, AgentOpt] = None,
    plan_only: Annotated[
        bool, typer.Option("--plan", help="Print the plan; change nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Apply the whole plan without asking.")
    ] = False,
    uninstall: Annotated[
        bool, typer.Option("--uninstall", help="Remove what setup added (only that).")
    ] = False,
    url: Annotated[str | None, UrlOpt] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="The API key for --url (default: ENGRAM_TOKEN); stored in <home>/token (0600) "
            "for the hooks. MCP clients read it from ENGRAM_TOKEN.",
        ),
    ] = None,
    trust: Annotated[
        list[Path] | None,
        typer.Option(
            "--trust",
            help="A folder Gemini CLI should trust (repeatable; it loads MCP servers only in "
            "trusted folders). Default: the git repository around the working directory.",
        ),
    ] = None,
    no_trust: Annotated[bool, typer.Option("--no-trust", help="Add no trusted folder.")] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Show each file's change as a diff.")
    ] = False,
    no_model: Annotated[
        bool, typer.Option("--no-model", help="Do not prepare the embedding model now.")
    ] = False,
) -> None:
    """Wire the coding agents installed here to Engram: MCP registration and lifecycle hooks.

    Prints a plan — each file to create or change and what goes in — then asks: y for all, or
    the numbers of the agents to wire. Every change is merged (other tools' servers and hooks
    are kept) and each file is backed up first (<file>.engram-backup-<time>); a second run
    changes nothing. Locally it also creates the data directory and owner token and prepares
    the embedding model, so the first MCP call does not wait for it."""
    st = state(ctx)
    env, platform, home = dict(os.environ), sys.platform, st.settings.home
    server = session.server_of(url, env, platform)
    url = None if session.is_local(server) else server  # remote: clients use HTTP
    key = key or (st.settings.token if url else None)
    names = session.chosen(_agents(agent), env, platform)
    if not names:
        raise InvalidInput(
            "no coding agent found here (PATH, config folders); name one with --agent"
        )
    if uninstall:
        plans = session.build_uninstall(names, env, platform, home)
        plans = [p for p in plans if p.pending] if not agent else plans
    else:
        folders = list(trust or [])
        root = session.git_root(Path.cwd())
        if not folders and not no_trust and root is not None:
            folders = [root]
        trusted = [f.expanduser().resolve() for f in folders]
        wiring = session.make_wiring(home, server, trusted, env)
        plans = session.build(names, wiring, env, platform)
    typer.echo(("Remove Engram from:" if uninstall else "Engram setup plan") + f" (data: {home})")
    _say(session.render(plans, env, diff=diff) or ["  nothing of Engram's is installed"])
    extra = (
        []
        if uninstall
        else _home_steps(home, url, key, st.settings.embedder, st.settings.model_cache, no_model)
    )
    _say([f"   {line}" for line in extra])
    pending = [p for p in plans if p.pending]
    if plan_only:
        return
    if url and key:
        _check_key_slot(home / "token", key)
    if not pending and not extra:
        typer.echo("Nothing to change.")
        return
    chosen = pending
    if pending and not yes:
        answer = typer.prompt(
            "Apply? y = all, numbers = only those agents (e.g. 1 3), n = cancel", default="n"
        )
        chosen = session.pick(plans, answer)
        chosen = [p for p in chosen if p.pending]
        if not chosen:
            typer.echo("Nothing changed.")
            return
    for change, backup in session.apply(chosen, home, uninstall=uninstall):
        saved = f" (backup: {backup})" if backup else ""
        typer.echo(f"{change.action}d {change.path}{saved}")
    if not uninstall:
        _prepare_home(ctx, url, key, no_model)
        hooked = any(AGENTS[p.agent].hooks is not None for p in plans)
        if not url and hooked:  # a desktop app alone launches 'engram mcp': no server needed
            port = urllib.parse.urlsplit(server).port
            keep = "engram service install" + (f" --port {port}" if port != DEFAULT_PORT else "")
            typer.echo(f"Hooks post to the local server {server}: keep it running with '{keep}'.")
        else:
            typer.echo(
                "MCP clients send the key from ENGRAM_TOKEN: export it in your shell profile."
            )
        typer.echo("Check it all with 'engram doctor'.")


def _home_steps(
    home: Path, url: str | None, key: str | None, embedder: str, cache: Path, no_model: bool
) -> list[str]:
    """What setup does besides the agents' files (empty when all is in place)."""
    steps = []
    token = home / "token"
    if url:
        if key and (not token.exists() or token.read_text().strip() != key):
            steps.append(f"store the key for {url} in {token} (mode 0600)")
        return steps
    if not token.exists():
        steps.append(f"create the data directory, database and owner token ({token})")
    st = model.state(embedder, cache)
    if not st.ready and not no_model:
        steps.append(f"prepare the embedding model (about 75 s once): {st.detail}")
    return steps


def _check_key_slot(token: Path, key: str) -> None:
    """Refuse (before anything is written) to replace another key in ``token``."""
    if token.exists() and token.read_text().strip() not in ("", key):
        raise InvalidInput(
            f"{token} already holds another key; use --home for a separate data directory"
        )


def _prepare_home(ctx: typer.Context, url: str | None, key: str | None, no_model: bool) -> None:
    from engram.cli.keys import bootstrap

    st = state(ctx)
    home = st.settings.home
    if url:
        if key:
            _check_key_slot(home / "token", key)
            home.mkdir(parents=True, exist_ok=True)
            write_private(home / "token", key + "\n")
        return
    with service(ctx) as (engram, _st):
        engram.environments.ensure_default(st.actor)
        if bootstrap(engram, home) is not None:
            typer.echo(f"created the owner token {home / 'token'} (mode 0600)")
    current = model.state(st.settings.embedder, st.settings.model_cache)
    if not current.ready and not no_model:
        typer.echo("preparing the embedding model (once; about 75 s)…")
        ready, took = model.prepare(
            st.settings.embedder, st.settings.model_cache, st.settings.embeddings_api_key
        )
        typer.echo(f"model: {ready.detail} in {took:.0f} s")


service_app = typer.Typer(
    help="Run 'engram serve' as a per-user service started at login (a systemd --user unit on "
    "Linux, a launchd agent on macOS).",
    no_args_is_help=True,
)


def _report(result: unit.ServiceResult) -> None:
    saved = f" (backup: {result.backup})" if result.backup else ""
    typer.echo(f"{result.path}: {result.action}{saved}")
    typer.echo(f"{'service' if result.ok else 'warning'}: {result.manager}", err=not result.ok)


@service_app.command("install")
def service_install(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port.")] = DEFAULT_PORT,
) -> None:
    """Write the unit (or plist) that runs 'engram serve' on this data directory, then enable
    and start it. Without a service manager (no user session, a container) the file is still
    written and the warning says how to start the server."""
    home = state(ctx).settings.home
    env = dict(os.environ)
    spec = unit.ServiceSpec(session.engram_executable(), home, host, port, unit.spec_env(home, env))
    _report(unit.install(spec, env))


@service_app.command("status")
def service_status() -> None:
    """Whether the unit is installed and running (exit 1 if not)."""
    result = unit.status(dict(os.environ))
    _report(result)
    if not result.ok:
        raise typer.Exit(1)


@service_app.command("uninstall")
def service_uninstall() -> None:
    """Stop and disable the service, and remove its file (backed up)."""
    _report(unit.uninstall(dict(os.environ)))


def doctor(
    ctx: typer.Context,
    agent: Annotated[list[str] | None, AgentOpt] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", envvar="ENGRAM_URL", help="The server (default: the local one)."),
    ] = None,
) -> None:
    """Check the server (reachable, token accepted), the embedding model, the hooks' spool, and
    each wired agent's wiring (present, pointing at files that exist, hooks answering in time).
    Each problem is printed with the command that fixes it; exit 1 if there is one. An agent
    found here but not wired is listed (skip), events the server refused are a warning."""
    st = state(ctx)
    env = dict(os.environ)
    base = session.server_of(url, env, sys.platform)
    token, token_from = st.settings.token or "", checks.ENV_TOKEN
    if not token and (st.settings.home / "token").exists():
        token = (st.settings.home / "token").read_text().strip()
        token_from = str(st.settings.home / "token")
    remote = not session.is_local(base)
    target = checks.Target(
        base,
        token,
        remote,
        st.settings.home,
        st.settings.embedder,
        st.settings.model_cache,
        token_from,
    )
    agents = session.chosen(_agents(agent), env, sys.platform)
    wired = {a for a in agents if checks.is_wired(a, env, sys.platform)}
    # a local server only the hooks need: clients wired by stdio launch 'engram mcp' themselves
    needed = remote or any(AGENTS[a].hooks is not None for a in wired) or not wired
    results = [*checks.server_checks(target, needed=needed), checks.model_check(target)]
    results += checks.spool_checks(target)
    for a, found in agents.items():
        if not agent and found and a not in wired:
            results.append(checks.not_wired(a, found))  # found here, but not chosen at setup
        else:
            results += checks.agent_checks(a, env, sys.platform, Path.cwd())
    for c in results:
        typer.echo(f"{c.label:<4} {c.name}: {c.detail}")
        if c.label != "ok" and c.fix:
            typer.echo(f"     fix: {c.fix}")
    bad = [c for c in results if not c.ok]
    typer.echo(f"{len(bad)} problem(s)" if bad else "All good.")
    if bad:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)
    app.command("doctor")(doctor)
    app.add_typer(service_app, name="service")
