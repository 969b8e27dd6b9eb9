"""Users, API keys and environment members on PostgreSQL.

Each mutation and the audit entries describing it commit in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from engram.accounts import ApiKey, AuditEntry, Member, Role, Scope, User
from engram.errors import Conflict
from engram.store.postgres.audit import insert_audit
from engram.store.postgres.db import PostgresDatabase, retried

_USER = "id, name, created_at, is_admin, password_hash IS NOT NULL"
_KEY = "id, user_id, name, prefix, scopes, created_at, last_used_at, revoked_at, replaced_by"
_MEMBER = "environment_id, user_id, role, added_at, added_by"


def _user(row: Sequence[Any]) -> User:
    return User(id=row[0], name=row[1], created_at=row[2], is_admin=row[3], has_password=row[4])


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        id=row[0],
        user_id=row[1],
        name=row[2],
        prefix=row[3],
        scopes=[Scope(s) for s in row[4]],
        created_at=row[5],
        last_used_at=row[6],
        revoked_at=row[7],
        replaced_by=row[8],
    )


def _member(row: Sequence[Any]) -> Member:
    return Member(
        environment_id=row[0], user_id=row[1], role=Role(row[2]), added_at=row[3], added_by=row[4]
    )


class PostgresAccountStore:
    """Implements :class:`engram.store.accounts.AccountStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def _one(self, query: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._db.reader() as conn:
            return conn.execute(query, params).fetchone()

    def _all(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._db.reader() as conn:
            return conn.execute(query, params).fetchall()

    # -- users -------------------------------------------------------------------------------
    @retried
    def create_user(
        self, user: User, password_hash: str | None, audit: Sequence[AuditEntry] = ()
    ) -> None:
        with self._db.tx() as conn:
            # the unique name decides between concurrent creators; the loser changes nothing
            added = conn.execute(
                "INSERT INTO users (id, name, created_at, is_admin, password_hash) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (user.id, user.name, user.created_at, user.is_admin, password_hash),
            ).rowcount
            if added != 1:
                raise Conflict(f"user {user.name!r} already exists", name=user.name)
            insert_audit(conn, audit)

    def get_user(self, user_id: str) -> User | None:
        row = self._one(f"SELECT {_USER} FROM users WHERE id = %s", (user_id,))
        return _user(row) if row else None

    def find_user(self, name: str) -> User | None:
        row = self._one(f"SELECT {_USER} FROM users WHERE name = %s", (name,))
        return _user(row) if row else None

    def list_users(self) -> list[User]:
        return [_user(r) for r in self._all(f"SELECT {_USER} FROM users ORDER BY created_at, id")]

    @retried
    def set_password_hash(
        self, user_id: str, password_hash: str, audit: Sequence[AuditEntry] = ()
    ) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE users SET password_hash = %s WHERE id = %s", (password_hash, user_id)
            )
            insert_audit(conn, audit)

    def password_hash(self, user_id: str) -> str | None:
        row = self._one("SELECT password_hash FROM users WHERE id = %s", (user_id,))
        return None if row is None else row[0]

    # -- keys --------------------------------------------------------------------------------
    @retried
    def create_key(
        self,
        key: ApiKey,
        digest: str,
        audit: Sequence[AuditEntry] = (),
        *,
        replaces: str | None = None,
    ) -> None:
        with self._db.tx() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({_KEY}, digest) "
                "VALUES (%s, %s, %s, %s, %s, %s, NULL, NULL, NULL, %s)",
                (
                    key.id,
                    key.user_id,
                    key.name,
                    key.prefix,
                    Jsonb([s.value for s in key.scopes]),
                    key.created_at,
                    digest,
                ),
            )
            if replaces is not None:
                conn.execute(
                    "UPDATE api_keys SET revoked_at = %s, replaced_by = %s WHERE id = %s",
                    (key.created_at, key.id, replaces),
                )
            insert_audit(conn, audit)

    def key_by_digest(self, digest: str) -> ApiKey | None:
        row = self._one(f"SELECT {_KEY} FROM api_keys WHERE digest = %s", (digest,))
        return _key(row) if row else None

    def get_key(self, key_id: str) -> ApiKey | None:
        row = self._one(f"SELECT {_KEY} FROM api_keys WHERE id = %s", (key_id,))
        return _key(row) if row else None

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        query = f"SELECT {_KEY} FROM api_keys"
        params: tuple[str, ...] = ()
        if user_id is not None:
            query += " WHERE user_id = %s"
            params = (user_id,)
        return [_key(r) for r in self._all(query + " ORDER BY created_at, id", params)]

    @retried
    def revoke_key(self, key_id: str, at: datetime, audit: Sequence[AuditEntry] = ()) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                (at, key_id),
            )
            insert_audit(conn, audit)

    @retried
    def touch_key(self, key_id: str, at: datetime) -> None:
        with self._db.tx() as conn:
            conn.execute("UPDATE api_keys SET last_used_at = %s WHERE id = %s", (at, key_id))

    # -- members -----------------------------------------------------------------------------
    @retried
    def put_member(self, member: Member, audit: Sequence[AuditEntry] = ()) -> None:
        with self._db.tx() as conn:
            conn.execute(
                f"INSERT INTO environment_members ({_MEMBER}) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (environment_id, user_id) DO UPDATE SET role = excluded.role",
                (
                    member.environment_id,
                    member.user_id,
                    member.role.value,
                    member.added_at,
                    member.added_by,
                ),
            )
            insert_audit(conn, audit)

    @retried
    def remove_member(
        self, environment_id: str, user_id: str, audit: Sequence[AuditEntry] = ()
    ) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "DELETE FROM environment_members WHERE environment_id = %s AND user_id = %s",
                (environment_id, user_id),
            )
            insert_audit(conn, audit)

    def get_member(self, environment_id: str, user_id: str) -> Member | None:
        row = self._one(
            f"SELECT {_MEMBER} FROM environment_members WHERE environment_id = %s AND user_id = %s",
            (environment_id, user_id),
        )
        return _member(row) if row else None

    def list_members(self, environment_id: str) -> list[Member]:
        rows = self._all(
            f"SELECT {_MEMBER} FROM environment_members WHERE environment_id = %s "
            "ORDER BY added_at, user_id",
            (environment_id,),
        )
        return [_member(r) for r in rows]

    def memberships(self, user_id: str) -> list[Member]:
        rows = self._all(
            f"SELECT {_MEMBER} FROM environment_members WHERE user_id = %s ORDER BY added_at",
            (user_id,),
        )
        return [_member(r) for r in rows]
