"""Who is acting: recorded on every version and in the audit log."""

from __future__ import annotations

from dataclasses import dataclass

from engram.accounts import ALL_SCOPES, Scope


@dataclass(frozen=True, slots=True)
class Actor:
    """A user acting through one interface (``local``, ``api``, ``mcp``...), with the key they
    authenticated with and that key's scopes (all scopes when acting locally)."""

    user_id: str
    interface: str = "api"
    key_id: str | None = None
    scopes: frozenset[Scope] = ALL_SCOPES
    project: str | None = None
    """The project the caller works in (``engram.capture.which``): the environment used when a
    call names none, created on first use. None: the user's default environment."""

    @property
    def label(self) -> str:
        return self.user_id if self.key_id is None else f"{self.user_id}/{self.key_id}"

    def can(self, scope: Scope) -> bool:
        return scope in self.scopes


LOCAL_USER = "local"
LOCAL = Actor(LOCAL_USER, "local")
