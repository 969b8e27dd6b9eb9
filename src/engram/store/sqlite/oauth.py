"""The OAuth authorization server's clients, grants, codes and tokens on SQLite (digests only).
Columns, insert values and row mappers are shared with PostgreSQL
(:mod:`engram.store.oauth_columns`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

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
from engram.store.sqlite.audit import insert_audit
from engram.store.sqlite.db import SQLiteDatabase

ROWS = OAuthRows(time=lambda value: datetime.fromtimestamp(value, UTC))
"""Rows to records: timestamps are stored as epoch seconds."""


def _epoch(value: datetime) -> float:
    return value.timestamp()


class SQLiteOAuthStore:
    """Implements :class:`engram.store.oauth.OAuthStore`."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def put_client(self, client: ClientRecord) -> None:
        with self._db.tx() as conn:
            conn.execute(
                insert_sql("oauth_clients", CLIENT_FIELDS, "?"), client_values(client, _epoch)
            )

    def get_client(self, client_id: str) -> ClientRecord | None:
        row = (
            self._db.reader()
            .execute(
                f"SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE client_id = ?", (client_id,)
            )
            .fetchone()
        )
        return None if row is None else ROWS.client(row)

    def create_grant(self, grant: GrantRecord, code: CodeRecord, audit: Audit = ()) -> None:
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(insert_sql("oauth_grants", GRANT_FIELDS, "?"), grant_values(grant, _epoch))
            conn.execute(insert_sql("oauth_codes", CODE_FIELDS, "?"), code_values(code, _epoch))

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE id = ?", (grant_id,))
            .fetchone()
        )
        return ROWS.grant(row) if row else None

    def list_grants(self, user_id: str | None = None) -> list[GrantRecord]:
        where, args = ("WHERE user_id = ?", (user_id,)) if user_id is not None else ("", ())
        rows = self._db.reader().execute(
            f"SELECT {GRANT_COLUMNS} FROM oauth_grants {where} ORDER BY created_at DESC, id", args
        )
        return [ROWS.grant(r) for r in rows]

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
            .execute(f"SELECT {CODE_COLUMNS} FROM oauth_codes WHERE digest = ?", (digest,))
            .fetchone()
        )
        return ROWS.code(row) if row else None

    def redeem_code(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_codes SET used_at = ? WHERE digest = ? AND used_at IS NULL",
                (at.timestamp(), digest),
            )
            if cur.rowcount != 1:
                return False
            _insert_tokens(conn, tokens)
            return True

    def get_token(self, digest: str) -> TokenRecord | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {TOKEN_COLUMNS} FROM oauth_tokens WHERE digest = ?", (digest,))
            .fetchone()
        )
        return ROWS.token(row) if row else None

    def rotate_refresh(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE oauth_tokens SET used_at = ? "
                "WHERE digest = ? AND kind = 'refresh' AND used_at IS NULL",
                (at.timestamp(), digest),
            )
            if cur.rowcount != 1:
                return False
            _insert_tokens(conn, tokens)
            return True


def _insert_tokens(conn: sqlite3.Connection, tokens: Sequence[TokenRecord]) -> None:
    conn.executemany(
        insert_sql("oauth_tokens", TOKEN_FIELDS, "?"), [token_values(t, _epoch) for t in tokens]
    )
