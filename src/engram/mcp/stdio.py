"""``engram mcp``: the server on stdin/stdout for a client that launches it.

stdout carries only MCP messages; logs go to stderr. Credentials come from the settings:
``ENGRAM_TOKEN`` (an API key) acts as its owner, else the local owner. The environment follows
the one rule of :mod:`engram.capture.which`: ``--env``, ``ENGRAM_ENV``, the project of the
working directory (its ``.engram.toml``, else its git root's name; created on first use), the
one chosen with ``engram env use``, else the default — the same as every CLI command run there.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import replace

from engram.actors import LOCAL_USER, Actor
from engram.mcp.binding import INTERFACE, Binding
from engram.mcp.server import build_server
from engram.service import Engram
from engram.service.environments import is_bare

log = logging.getLogger("engram.mcp")


def actor_from(engram: Engram, token: str | None) -> Actor:
    """The owner of ``token`` (an API key), else the local owner."""
    token = (token or "").strip()
    if token:
        return engram.accounts.authenticate(token, INTERFACE)
    return Actor(LOCAL_USER, INTERFACE)


def choose_environment(
    engram: Engram, actor: Actor, explicit: str | None, project: str | None
) -> tuple[Actor, str]:
    """The session's actor (working in ``project``) and environment: ``explicit`` if named,
    else the project's (created on first use), else the default."""
    actor = replace(actor, project=project)
    env = engram.environments.resolve(explicit, actor)
    if explicit and env.owner != actor.user_id and is_bare(explicit):
        # someone else's, by a bare name: kept as given, so its writes are refused, as the
        # CLI's and REST's are, with the way to name it
        return actor, explicit
    # else its id: a name that may later mean another environment stays this one
    return actor, env.id


def serve_stdio(
    engram: Engram, token: str | None, explicit: str | None, project: str | None
) -> None:
    """Bind to the actor and environment, then serve until stdin closes."""
    actor, environment = choose_environment(engram, actor_from(engram, token), explicit, project)
    log.info("serving MCP on stdio", extra={"environment": environment, "user": actor.user_id})
    server = build_server(Binding(engram, actor, environment))
    server.run("stdio")
    sys.stderr.flush()
