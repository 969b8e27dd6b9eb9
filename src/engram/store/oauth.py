"""The storage seam for Engram's OAuth authorization server (sign-in of remote MCP clients).

Only digests of codes and tokens are stored (like API keys). A grant is one user's consent to
one client; its codes and tokens stop working the moment the grant is revoked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from engram.store.accounts import Audit

TokenKind = Literal["access", "refresh"]


@dataclass(frozen=True, slots=True)
class ClientRecord:
    """A registered client (RFC 7591); ``metadata`` is its registration as JSON."""

    client_id: str
    metadata: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class GrantRecord:
    """A user's consent to a client, for some scopes, on one resource (the /mcp URL)."""

    id: str
    user_id: str
    client_id: str
    client_name: str
    scopes: tuple[str, ...]
    resource: str
    created_at: datetime
    revoked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class CodeRecord:
    """An authorization code (its digest), redeemable once before ``expires_at``."""

    digest: str
    grant_id: str
    code_challenge: str
    redirect_uri: str
    redirect_uri_explicit: bool
    expires_at: datetime
    used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """An access or refresh token (its digest). A refresh token is ``used`` once rotated."""

    digest: str
    grant_id: str
    kind: TokenKind
    scopes: tuple[str, ...]
    expires_at: datetime
    used_at: datetime | None = None


class OAuthStore(Protocol):
    def put_client(self, client: ClientRecord) -> None: ...

    def get_client(self, client_id: str) -> ClientRecord | None: ...

    def create_grant(self, grant: GrantRecord, code: CodeRecord, audit: Audit = ()) -> None:
        """Store a new grant and its first authorization code in one transaction."""
        ...

    def get_grant(self, grant_id: str) -> GrantRecord | None: ...

    def list_grants(self, user_id: str | None = None) -> list[GrantRecord]:
        """Grants, newest first: one user's, or everyone's."""
        ...

    def revoke_grant(self, grant_id: str, at: datetime, audit: Audit = ()) -> bool:
        """Mark the grant revoked (with the audit entries); False (nothing written) if it is
        already revoked or does not exist."""
        ...

    def get_code(self, digest: str) -> CodeRecord | None: ...

    def redeem_code(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        """Mark the code used and store ``tokens`` in one transaction; False (nothing written)
        if it was already used."""
        ...

    def get_token(self, digest: str) -> TokenRecord | None: ...

    def rotate_refresh(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        """Mark the refresh token used and store its replacements in one transaction; False
        (nothing written) if it was already used."""
        ...
