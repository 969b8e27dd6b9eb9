"""Users, API keys and environment members on SQLite.

Each mutation and the audit entries describing it commit in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.accounts import ApiKey, AuditEntry, Member, Role, Scope, User
from engram.errors import Conflict
from engram.store.sqlite.audit import insert_audit

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase

_USER = "id, name, created_at, is_admin, password_hash IS NOT NULL"
_KEY = "id, user_id, name, prefix, scopes, created_at, last_used_at, revoked_at, replaced_by"
_MEMBER = "environment_id, user_id, role, added_at, added_by"


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _user(row: Sequence[Any]) -> User:
    return User(
        id=row[0],
        name=row[1],
        created_at=datetime.fromtimestamp(row[2], UTC),
        is_admin=bool(row[3]),
        has_password=bool(row[4]),
    )


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        id=row[0],
        user_id=row[1],
        name=row[2],
        prefix=row[3],
        scopes=[Scope(s) for s in json.loads(row[4])],
        created_at=datetime.fromtimestamp(row[5], UTC),
        last_used_at=_dt(row[6]),
        revoked_at=_dt(row[7]),
        replaced_by=row[8],
    )


def _member(row: Sequence[Any]) -> Member:
    return Member(
        environment_id=row[0],
        user_id=row[1],
        role=Role(row[2]),
        added_at=datetime.fromtimestamp(row[3], UTC),
        added_by=row[4],
    )


class SQLiteAccountStore:
    """Implements :class:`engram.store.accounts.AccountStore` on the store's database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    # -- users -------------------------------------------------------------------------------
    def create_user(
        self, user: User, password_hash: str | None, audit: Sequence[AuditEntry] = ()
    ) -> None:
        with self._db.tx() as conn:
            if conn.execute("SELECT 1 FROM users WHERE name = ?", (user.name,)).fetchone():
                raise Conflict(f"user {user.name!r} already exists", name=user.name)
            conn.execute(
                "INSERT INTO users (id, name, created_at, is_admin, password_hash) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    user.id,
                    user.name,
                    user.created_at.timestamp(),
                    int(user.is_admin),
                    password_hash,
                ),
            )
            insert_audit(conn, audit)

    def get_user(self, user_id: str) -> User | None:
        row = self._db.reader().execute(f"SELECT {_USER} FROM users WHERE id = ?", (user_id,))
        found = row.fetchone()
        return _user(found) if found else None

    def find_user(self, name: str) -> User | None:
        row = self._db.reader().execute(f"SELECT {_USER} FROM users WHERE name = ?", (name,))
        found = row.fetchone()
        return _user(found) if found else None

    def list_users(self) -> list[User]:
        rows = self._db.reader().execute(f"SELECT {_USER} FROM users ORDER BY created_at, id")
        return [_user(r) for r in rows]

    def set_password_hash(
        self, user_id: str, password_hash: str, audit: Sequence[AuditEntry] = ()
    ) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id)
            )
            insert_audit(conn, audit)

    def password_hash(self, user_id: str) -> str | None:
        row = self._db.reader().execute("SELECT password_hash FROM users WHERE id = ?", (user_id,))
        found = row.fetchone()
        return None if found is None else found[0]

    # -- keys --------------------------------------------------------------------------------
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
                f"INSERT INTO api_keys ({_KEY}, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.id,
                    key.user_id,
                    key.name,
                    key.prefix,
                    json.dumps([s.value for s in key.scopes]),
                    key.created_at.timestamp(),
                    None,
                    None,
                    None,
                    digest,
                ),
            )
            if replaces is not None:
                conn.execute(
                    "UPDATE api_keys SET revoked_at = ?, replaced_by = ? WHERE id = ?",
                    (key.created_at.timestamp(), key.id, replaces),
                )
            insert_audit(conn, audit)

    def key_by_digest(self, digest: str) -> ApiKey | None:
        row = self._db.reader().execute(f"SELECT {_KEY} FROM api_keys WHERE digest = ?", (digest,))
        found = row.fetchone()
        return _key(found) if found else None

    def get_key(self, key_id: str) -> ApiKey | None:
        row = self._db.reader().execute(f"SELECT {_KEY} FROM api_keys WHERE id = ?", (key_id,))
        found = row.fetchone()
        return _key(found) if found else None

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        sql = f"SELECT {_KEY} FROM api_keys"
        params: tuple[str, ...] = ()
        if user_id is not None:
            sql += " WHERE user_id = ?"
            params = (user_id,)
        rows = self._db.reader().execute(sql + " ORDER BY created_at, id", params)
        return [_key(r) for r in rows]

    def revoke_key(self, key_id: str, at: datetime, audit: Sequence[AuditEntry] = ()) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (at.timestamp(), key_id),
            )
            insert_audit(conn, audit)

    def touch_key(self, key_id: str, at: datetime) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE api_keys SET last_used_at = ? WHERE id = ?", (at.timestamp(), key_id)
            )

    # -- members -----------------------------------------------------------------------------
    def put_member(self, member: Member, audit: Sequence[AuditEntry] = ()) -> None:
        with self._db.tx() as conn:
            conn.execute(
                f"INSERT INTO environment_members ({_MEMBER}) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (environment_id, user_id) DO UPDATE SET role = excluded.role",
                (
                    member.environment_id,
                    member.user_id,
                    member.role.value,
                    member.added_at.timestamp(),
                    member.added_by,
                ),
            )
            insert_audit(conn, audit)

    def remove_member(
        self, environment_id: str, user_id: str, audit: Sequence[AuditEntry] = ()
    ) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "DELETE FROM environment_members WHERE environment_id = ? AND user_id = ?",
                (environment_id, user_id),
            )
            insert_audit(conn, audit)

    def get_member(self, environment_id: str, user_id: str) -> Member | None:
        row = self._db.reader().execute(
            f"SELECT {_MEMBER} FROM environment_members WHERE environment_id = ? AND user_id = ?",
            (environment_id, user_id),
        )
        found = row.fetchone()
        return _member(found) if found else None

    def list_members(self, environment_id: str) -> list[Member]:
        rows = self._db.reader().execute(
            f"SELECT {_MEMBER} FROM environment_members WHERE environment_id = ? "
            "ORDER BY added_at, user_id",
            (environment_id,),
        )
        return [_member(r) for r in rows]

    def memberships(self, user_id: str) -> list[Member]:
        rows = self._db.reader().execute(
            f"SELECT {_MEMBER} FROM environment_members WHERE user_id = ? ORDER BY added_at",
            (user_id,),
        )
        return [_member(r) for r in rows]
