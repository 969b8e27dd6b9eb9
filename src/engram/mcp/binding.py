"""Who an MCP request acts as and which environment it addresses by default.

On stdio (and an HTTP server without auth) every call acts as one actor fixed at start-up; over
authenticated HTTP the actor comes from the request's API key, which the token verifier turned
into an :class:`~mcp.server.auth.provider.AccessToken`.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from engram.accounts import Scope
from engram.actors import Actor
from engram.service import Engram

INTERFACE = "mcp"
request_project: ContextVar[str | None] = ContextVar("engram_mcp_project", default=None)
"""The project an HTTP request says it works in (the ``X-Engram-Project`` header)."""


def token_for(actor: Actor) -> AccessToken:
    """The SDK's view of an authenticated Engram key (the secret itself is not kept)."""
    return AccessToken(
        token="egm_…",
        client_id=actor.user_id,
        subject=actor.user_id,
        scopes=sorted(s.value for s in actor.scopes),
        claims={"key_id": actor.key_id},
    )


def actor_of(token: AccessToken) -> Actor:
    key_id = (token.claims or {}).get("key_id")
    return Actor(
        token.subject or token.client_id,  # an OAuth token's client is not its user
        INTERFACE,
        key_id if isinstance(key_id, str) else None,
        frozenset(Scope(s) for s in token.scopes),
    )


@dataclass(frozen=True)
class Binding:
    """What every tool, resource and prompt reaches the service through."""

    engram: Engram
    actor: Actor
    """The actor when the request carries no token (stdio, in-memory, HTTP without auth)."""
    environment: str | None = None
    """The environment used when a call names none (None: the actor's default)."""

    def current_actor(self) -> Actor:
        """The request's actor, working in the project its ``X-Engram-Project`` header names
        (over HTTP), else the one fixed at start-up (stdio: the working directory's)."""
        token = get_access_token()
        actor = self.actor if token is None else actor_of(token)
        project = request_project.get()
        return replace(actor, project=project) if project else actor

    def env(self, explicit: str | None) -> str | None:
        return explicit or self.environment
