"""The OAuth authorization server's clients, grants, codes and tokens on SQLite (digests only)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engram.store.accounts import Audit
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord, TokenRecord
from engram.store.sqlite.audit import insert_audit
from engram.store.sqlite.db import SQLiteDatabase

_GRANT = "id, user_id, client_id, client_name, scopes, resource, created_at, revoked_at"
_CODE = "digest, grant_id, code_challenge, redirect_uri, redirect_uri_explicit, expires_at, used_at"
_TOKEN = "digest, grant_id, kind, scopes, expires_at, used_at"


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _at(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _grant(row: Sequence[Any]) -> GrantRecord:
    return GrantRecord(
        id=row[0],
        user_id=row[1],
        client_id=row[2],
        client_name=row[3],
        scopes=tuple(row[4].split()),
        resource=row[5],
        created_at=datetime.fromtimestamp(row[6], UTC),
        revoked_at=_ts(row[7]),
    )


def _code(row: Sequence[Any]) -> CodeRecord:
    return CodeRecord(
        digest=row[0],
        grant_id=row[1],
        code_challenge=row[2],
        redirect_uri=row[3],
        redirect_uri_explicit=bool(row[4]),
        expires_at=datetime.fromtimestamp(row[5], UTC),
        used_at=_ts(row[6]),
    )


def _token(row: Sequence[Any]) -> TokenRecord:
    return TokenRecord(
        digest=row[0],
        grant_id=row[1],
        kind=row[2],
        scopes=tuple(row[3].split()),
        expires_at=datetime.fromtimestamp(row[4], UTC),
        used_at=_ts(row[5]),
    )


class SQLiteOAuthStore:
    """Implements :class:`engram.store.oauth.OAuthStore`."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def put_client(self, client: ClientRecord) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (?, ?, ?)",
                (client.client_id, client.metadata, client.created_at.timestamp()),
            )

    def get_client(self, client_id: str) -> ClientRecord | None:
        row = (
            self._db.reader()
            .execute(
                "SELECT client_id, metadata, created_at FROM oauth_clients WHERE client_id = ?",
                (client_id,),
            )
            .fetchone()
        )
        if row is None:
            return None
        return ClientRecord(row[0], row[1], datetime.fromtimestamp(row[2], UTC))

    def create_grant(self, grant: GrantRecord, code: CodeRecord, audit: Audit = ()) -> None:
        g, c = grant, code
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT INTO oauth_grants ({_GRANT}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    g.id,
                    g.user_id,
                    g.client_id,
                    g.client_name,
                    " ".join(g.scopes),
                    g.resource,
                    g.created_at.timestamp(),
                    _at(g.revoked_at),
                ),
            )
            conn.execute(
                f"INSERT INTO oauth_codes ({_CODE}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    c.digest,
                    c.grant_id,
                    c.code_challenge,
                    c.redirect_uri,
                    int(c.redirect_uri_explicit),
                    c.expires_at.timestamp(),
                    _at(c.used_at),
                ),
            )

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {_GRANT} FROM oauth_grants WHERE id = ?", (grant_id,))
            .fetchone()
        )
        return _grant(row) if row else None

    def list_grants(self, user_id: str | None = None) -> list[GrantRecord]:
        where, args = ("WHERE user_id = ?", (user_id,)) if user_id is not None else ("", ())
        rows = self._db.reader().execute(
            f"SELECT {_GRANT} FROM oauth_grants {where} ORDER BY created_at DESC, id", args
        )
        return [_grant(r) for r in rows]

    def revoke_grant(self, grant_id: str, at: datetime, audit: Audit = ()) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (at.timestamp(), grant_id),
            )
            if cur.rowcount != 1:
                return False
            insert_audit(conn, audit)
            return True

    def get_code(self, digest: str) -> CodeRecord | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {_CODE} FROM oauth_codes WHERE digest = ?", (digest,))
            .fetchone()
        )
        return _code(row) if row else None

    def redeem_code(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_codes SET used_at = ? WHERE digest = ? AND used_at IS NULL",
                (at.timestamp(), digest),
            )
            if cur.rowcount != 1:
                return False
            self._insert_tokens(conn, tokens)
            return True

    def get_token(self, digest: str) -> TokenRecord | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {_TOKEN} FROM oauth_tokens WHERE digest = ?", (digest,))
            .fetchone()
        )
        return _token(row) if row else None

    def rotate_refresh(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_tokens SET used_at = ? "
                "WHERE digest = ? AND kind = 'refresh' AND used_at IS NULL",
                (at.timestamp(), digest),
            )
            if cur.rowcount != 1:
                return False
            self._insert_tokens(conn, tokens)
            return True

    @staticmethod
    def _insert_tokens(conn: Any, tokens: Sequence[TokenRecord]) -> None:
        conn.executemany(
            f"INSERT INTO oauth_tokens ({_TOKEN}) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    t.digest,
                    t.grant_id,
                    t.kind,
                    " ".join(t.scopes),
                    t.expires_at.timestamp(),
                    _at(t.used_at),
                )
                for t in tokens
            ],
        )
