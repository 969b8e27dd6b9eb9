"""The OAuth authorization server's clients, grants, codes and tokens on PostgreSQL (digests
only). Columns, insert values and row mappers are shared with SQLite
(:mod:`engram.store.oauth_columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import Connection

from engram.store.accounts import Audit
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord, TokenRecord
from engram.store.oauth_columns import (
    CLIENT_COLUMNS,
    CLIENT_FIELDS,
    CODE_COLUMNS,
    CODE_FIELDS,
    GRANT_COLUMNS,
    GRANT_FIELDS,
    TOKEN_COLUMNS,
    TOKEN_FIELDS,
    OAuthRows,
    client_values,
    code_values,
    grant_values,
    insert_sql,
    token_values,
)
from engram.store.postgres.audit import insert_audit
from engram.store.postgres.db import PostgresDatabase, retried

ROWS = OAuthRows(time=lambda value: value)
"""Rows to records: psycopg returns timestamps as aware UTC datetimes."""


def _aware(value: datetime) -> datetime:
    return value


class PostgresOAuthStore:
    """Implements :class:`engram.store.oauth.OAuthStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def put_client(self, client: ClientRecord) -> None:
        with self._db.tx() as conn:
            conn.execute(
                insert_sql("oauth_clients", CLIENT_FIELDS, "%s"), client_values(client, _aware)
            )

    def get_client(self, client_id: str) -> ClientRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = %s", (client_id,)
            ).fetchone()
        return None if row is None else ROWS.client(row)

    @retried
    def create_grant(self, grant: GrantRecord, code: CodeRecord, audit: Audit = ()) -> None:
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                insert_sql("oauth_grants", GRANT_FIELDS, "%s"), grant_values(grant, _aware)
            )
            conn.execute(insert_sql("oauth_codes", CODE_FIELDS, "%s"), code_values(code, _aware))

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE id = %s", (grant_id,)
            ).fetchone()
        return ROWS.grant(row) if row else None

    def list_grants(self, user_id: str | None = None) -> list[GrantRecord]:
        where, args = ("WHERE user_id = %s", (user_id,)) if user_id is not None else ("", ())
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {GRANT_COLUMNS} FROM oauth_grants {where} ORDER BY created_at DESC, id",
                args,
            ).fetchall()
        return [ROWS.grant(r) for r in rows]

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
                f"SELECT {CODE_COLUMNS} FROM oauth_codes WHERE digest = %s", (digest,)
            ).fetchone()
        return None if row is None else ROWS.code(row)

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
                f"SELECT {TOKEN_COLUMNS} FROM oauth_tokens WHERE digest = %s", (digest,)
            ).fetchone()
        return ROWS.token(row) if row else None

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
            insert_sql("oauth_tokens", TOKEN_FIELDS, "%s"),
            [token_values(t, _aware) for t in tokens],
        )
