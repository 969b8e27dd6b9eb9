"""The OAuth authorization server's clients, grants, codes and tokens on PostgreSQL (digests
only)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import Connection

from engram.store.accounts import Audit
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord, TokenRecord
from engram.store.postgres.audit import insert_audit
from engram.store.postgres.db import PostgresDatabase, retried

_GRANT = "id, user_id, client_id, client_name, scopes, resource, created_at, revoked_at"
_CODE = "digest, grant_id, code_challenge, redirect_uri, redirect_uri_explicit, expires_at, used_at"
_TOKEN = "digest, grant_id, kind, scopes, expires_at, used_at"


def _grant(row: Sequence[Any]) -> GrantRecord:
    return GrantRecord(
        id=row[0],
        user_id=row[1],
        client_id=row[2],
        client_name=row[3],
        scopes=tuple(row[4].split()),
        resource=row[5],
        created_at=row[6],
        revoked_at=row[7],
    )


def _token(row: Sequence[Any]) -> TokenRecord:
    return TokenRecord(
        digest=row[0],
        grant_id=row[1],
        kind=row[2],
        scopes=tuple(row[3].split()),
        expires_at=row[4],
        used_at=row[5],
    )


class PostgresOAuthStore:
    """Implements :class:`engram.store.oauth.OAuthStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def put_client(self, client: ClientRecord) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (%s, %s, %s)",
                (client.client_id, client.metadata, client.created_at),
            )

    def get_client(self, client_id: str) -> ClientRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                "SELECT client_id, metadata, created_at FROM oauth_clients WHERE client_id = %s",
                (client_id,),
            ).fetchone()
        return None if row is None else ClientRecord(row[0], row[1], row[2])

    @retried
    def create_grant(self, grant: GrantRecord, code: CodeRecord, audit: Audit = ()) -> None:
        g, c = grant, code
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT INTO oauth_grants ({_GRANT}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    g.id,
                    g.user_id,
                    g.client_id,
                    g.client_name,
                    " ".join(g.scopes),
                    g.resource,
                    g.created_at,
                    g.revoked_at,
                ),
            )
            conn.execute(
                f"INSERT INTO oauth_codes ({_CODE}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    c.digest,
                    c.grant_id,
                    c.code_challenge,
                    c.redirect_uri,
                    c.redirect_uri_explicit,
                    c.expires_at,
                    c.used_at,
                ),
            )

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_GRANT} FROM oauth_grants WHERE id = %s", (grant_id,)
            ).fetchone()
        return _grant(row) if row else None

    def list_grants(self, user_id: str | None = None) -> list[GrantRecord]:
        where, args = ("WHERE user_id = %s", (user_id,)) if user_id is not None else ("", ())
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {_GRANT} FROM oauth_grants {where} ORDER BY created_at DESC, id", args
            ).fetchall()
        return [_grant(r) for r in rows]

    @retried
    def revoke_grant(self, grant_id: str, at: datetime, audit: Audit = ()) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_grants SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                (at, grant_id),
            )
            if cur.rowcount != 1:
                return False
            insert_audit(conn, audit)
            return True

    def get_code(self, digest: str) -> CodeRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_CODE} FROM oauth_codes WHERE digest = %s", (digest,)
            ).fetchone()
        return None if row is None else CodeRecord(*row)

    @retried
    def redeem_code(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_codes SET used_at = %s WHERE digest = %s AND used_at IS NULL",
                (at, digest),
            )
            if cur.rowcount != 1:
                return False
            _insert_tokens(conn, tokens)
            return True

    def get_token(self, digest: str) -> TokenRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_TOKEN} FROM oauth_tokens WHERE digest = %s", (digest,)
            ).fetchone()
        return _token(row) if row else None

    @retried
    def rotate_refresh(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_tokens SET used_at = %s "
                "WHERE digest = %s AND kind = 'refresh' AND used_at IS NULL",
                (at, digest),
            )
            if cur.rowcount != 1:
                return False
            _insert_tokens(conn, tokens)
            return True


def _insert_tokens(conn: Connection[Any], tokens: Sequence[TokenRecord]) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO oauth_tokens ({_TOKEN}) VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (t.digest, t.grant_id, t.kind, " ".join(t.scopes), t.expires_at, t.used_at)
                for t in tokens
            ],
        )
