"""Accounts, API keys, environment membership and the audit log: the value objects.

Secrets never appear here: an :class:`ApiKey` carries only its id, name, prefix and scopes; the
token itself is shown once, in :class:`IssuedKey`, and stored only as an HMAC digest.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engram.limits import Timestamp

KEY_PREFIX = "egm_"
"""Every API token starts with this, so a leaked one is recognisable (and greppable)."""
USER_ID_PREFIX = "usr_"
"""How the id of a user made with 'users add' starts (the owner's is 'local')."""


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


ALL_SCOPES: frozenset[Scope] = frozenset(Scope)


class Role(StrEnum):
    """A user's role in an environment. Owners manage members and delete; writers change
    memories; readers only read."""

    OWNER = "owner"
    WRITER = "writer"
    READER = "reader"

    def allows(self, needed: Role) -> bool:
        return _RANK[self] >= _RANK[needed]


_RANK = {Role.READER: 1, Role.WRITER: 2, Role.OWNER: 3}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class User(_Frozen):
    id: str
    name: str
    created_at: datetime
    is_admin: bool = False
    has_password: bool = False


class ApiKey(_Frozen):
    """A key's public description; the secret is never stored or returned after creation."""

    id: str
    user_id: str
    name: str
    prefix: str = Field(description="The first characters of the token, to recognise it.")
    scopes: list[Scope]
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    replaced_by: str | None = None


class IssuedKey(_Frozen):
    """A newly created (or rotated) key and its token, shown this once."""

    key: ApiKey
    token: str


class Member(_Frozen):
    environment_id: str
    user_id: str
    role: Role
    added_at: datetime
    added_by: str | None = None


class AuditEntry(_Frozen):
    """One mutation: who (user, key, interface), what (action, targets), when, and the versions
    of each target before and after (``None`` where a target did not exist)."""

    id: str
    at: datetime
    user_id: str
    key_id: str | None = None
    interface: str
    action: str
    environment_id: str | None = None
    targets: list[str] = Field(default_factory=list)
    before: dict[str, int | None] = Field(default_factory=dict)
    after: dict[str, int | None] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)


class AuditQuery(BaseModel):
    """Filters over the audit log; unset fields match anything."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    key_id: str | None = None
    interface: str | None = None
    action: str | None = Field(default=None, description="exact, or a prefix ending in '.'")
    environment_id: str | None = None
    target: str | None = None
    since: Timestamp | None = None
    until: Timestamp | None = None
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=1_000_000_000)


class Grant(BaseModel):
    """A client's access to /mcp on a user's behalf, as listed and revoked by the user."""

    model_config = ConfigDict(frozen=True)

    id: str
    user_id: str
    client_id: str
    client_name: str = Field(description="The name the client registered under.")
    scopes: list[str] = Field(description="'read', and 'write' if granted.")
    resource: str = Field(description="The MCP URL the tokens are bound to (their audience).")
    created_at: datetime
    revoked_at: datetime | None = None
