"""The storage seam for accounts, keys, environment members and the audit log.

Every mutating method takes the audit entries that describe it and writes them in the same
transaction as the change, so the log never misses (or invents) a change to these tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from engram.accounts import ApiKey, AuditEntry, AuditQuery, Member, User

Audit = Sequence[AuditEntry]


class AccountStore(Protocol):
    """Users, API keys (stored as digests) and environment members."""

    # -- users -------------------------------------------------------------------------------
    def create_user(self, user: User, password_hash: str | None, audit: Audit = ()) -> None: ...

    def get_user(self, user_id: str) -> User | None: ...

    def find_user(self, name: str) -> User | None: ...

    def list_users(self) -> list[User]: ...

    def set_password_hash(self, user_id: str, password_hash: str, audit: Audit = ()) -> None: ...

    def password_hash(self, user_id: str) -> str | None: ...

    # -- keys --------------------------------------------------------------------------------
    def create_key(
        self, key: ApiKey, digest: str, audit: Audit = (), *, replaces: str | None = None
    ) -> None:
        """Store a key; with ``replaces``, revoke that key in the same transaction (rotation)."""
        ...

    def key_by_digest(self, digest: str) -> ApiKey | None: ...

    def get_key(self, key_id: str) -> ApiKey | None: ...

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]: ...

    def revoke_key(self, key_id: str, at: datetime, audit: Audit = ()) -> None: ...

    def touch_key(self, key_id: str, at: datetime) -> None:
        """Record a use of the key (no audit: a read is not a mutation)."""
        ...

    # -- members -----------------------------------------------------------------------------
    def put_member(self, member: Member, audit: Audit = ()) -> None:
        """Add the member, or change their role."""
        ...

    def remove_member(self, environment_id: str, user_id: str, audit: Audit = ()) -> None: ...

    def get_member(self, environment_id: str, user_id: str) -> Member | None: ...

    def list_members(self, environment_id: str) -> list[Member]: ...

    def memberships(self, user_id: str) -> list[Member]:
        """Every environment shared with the user (not those the user owns)."""
        ...


class AuditStore(Protocol):
    """The append-only audit log."""

    def append(self, entries: Audit) -> None: ...

    def query(self, q: AuditQuery) -> list[AuditEntry]: ...
