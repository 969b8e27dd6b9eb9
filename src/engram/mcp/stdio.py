"""``engram mcp``: the server on stdin/stdout for a client that launches it.

stdout carries only MCP messages; logs go to stderr. Credentials come from the settings:
``ENGRAM_TOKEN`` (an API key) acts as its owner, else the local owner. The environment is the
one named (``--env``, then ``ENGRAM_ENV``), else the project of the working directory (the
git top-level directory's name, created on first use), else the default.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from engram.actors import LOCAL_USER, Actor
from engram.capture.project import project_environment, project_root
from engram.errors import NotFound
from engram.mcp.binding import INTERFACE, Binding
from engram.mcp.server import build_server
from engram.service import Engram

log = logging.getLogger("engram.mcp")


def actor_from(engram: Engram, token: str | None) -> Actor:
    """The owner of ``token`` (an API key), else the local owner."""
    token = (token or "").strip()
    if token:
        return engram.accounts.authenticate(token, INTERFACE)
    return Actor(LOCAL_USER, INTERFACE)


def choose_environment(engram: Engram, actor: Actor, explicit: str | None, cwd: Path) -> str | None:
    """The session's environment; a project's is created on first use."""
    if explicit:
        return engram.environments.resolve(explicit, actor).name
    name = project_environment(cwd)
    if name is None:
        return engram.environments.resolve(None, actor).name
    try:
        return engram.environments.resolve(name, actor).name
    except NotFound:
        description = f"The project at {project_root(cwd)}"
        env = engram.environments.create(name, actor, description)
        log.info("created environment %s for this project", env.name)
        return env.name


def serve_stdio(engram: Engram, token: str | None, explicit: str | None, cwd: Path) -> None:
    """Bind to the actor and environment, then serve until stdin closes."""
    actor = actor_from(engram, token)
    environment = choose_environment(engram, actor, explicit, cwd)
    log.info("serving MCP on stdio", extra={"environment": environment, "user": actor.user_id})
    server = build_server(Binding(engram, actor, environment))
    server.run("stdio")
    sys.stderr.flush()
