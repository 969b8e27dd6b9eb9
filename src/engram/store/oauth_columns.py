"""The OAuth rows both stores share: the client, grant, code and token columns, the values an
insert writes, and one mapping from rows back to records, which differs between the dialects
only in how a timestamp is encoded and decoded (SQLite stores epoch seconds, PostgreSQL aware
datetimes). The capture counterpart is :mod:`engram.store.capture_columns`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from engram.store.columns import TimedRows
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord, TokenRecord

Encode = Callable[[datetime], Any]
"""A dialect's encoding of a timestamp for a parameter."""

CLIENT_FIELDS = ("client_id", "metadata", "created_at")
GRANT_FIELDS = (
    "id",
    "user_id",
    "client_id",
    "client_name",
    "scopes",
    "resource",
    "created_at",
    "revoked_at",
)
CODE_FIELDS = (
    "digest",
    "grant_id",
    "code_challenge",
    "redirect_uri",
    "redirect_uri_explicit",
    "expires_at",
    "used_at",
)
TOKEN_FIELDS = ("digest", "grant_id", "kind", "scopes", "expires_at", "used_at")
"""The columns of each table, in the order both stores select and insert them."""
CLIENT_COLUMNS = ", ".join(CLIENT_FIELDS)
GRANT_COLUMNS = ", ".join(GRANT_FIELDS)
CODE_COLUMNS = ", ".join(CODE_FIELDS)
TOKEN_COLUMNS = ", ".join(TOKEN_FIELDS)


def insert_sql(table: str, fields: Sequence[str], mark: str) -> str:
    """``INSERT INTO table (fields) VALUES (mark, ...)`` with the dialect's parameter mark."""
    return f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({', '.join([mark] * len(fields))})"


def _maybe(value: datetime | None, time: Encode) -> Any:
    return None if value is None else time(value)


def client_values(c: ClientRecord, time: Encode) -> tuple[Any, ...]:
    """A client insert's values in :data:`CLIENT_FIELDS` order."""
    return (c.client_id, c.metadata, time(c.created_at))


def grant_values(g: GrantRecord, time: Encode) -> tuple[Any, ...]:
    """A grant insert's values in :data:`GRANT_FIELDS` order (scopes space-separated)."""
    return (
        g.id,
        g.user_id,
        g.client_id,
        g.client_name,
        " ".join(g.scopes),
        g.resource,
        time(g.created_at),
        _maybe(g.revoked_at, time),
    )


def code_values(c: CodeRecord, time: Encode) -> tuple[Any, ...]:
    """A code insert's values in :data:`CODE_FIELDS` order."""
    return (
        c.digest,
        c.grant_id,
        c.code_challenge,
        c.redirect_uri,
        c.redirect_uri_explicit,
        time(c.expires_at),
        _maybe(c.used_at, time),
    )


def token_values(t: TokenRecord, time: Encode) -> tuple[Any, ...]:
    """A token insert's values in :data:`TOKEN_FIELDS` order (scopes space-separated)."""
    return (
        t.digest,
        t.grant_id,
        t.kind,
        " ".join(t.scopes),
        time(t.expires_at),
        _maybe(t.used_at, time),
    )


class OAuthRows(TimedRows):
    """OAuth rows to records for one dialect."""

    def client(self, row: Sequence[Any]) -> ClientRecord:
        """A ClientRecord from a row in :data:`CLIENT_FIELDS` order."""
        return ClientRecord(client_id=row[0], metadata=row[1], created_at=self._time(row[2]))

    def grant(self, row: Sequence[Any]) -> GrantRecord:
        """A GrantRecord from a row in :data:`GRANT_FIELDS` order."""
        return GrantRecord(
            id=row[0],
            user_id=row[1],
            client_id=row[2],
            client_name=row[3],
            scopes=tuple(row[4].split()),
            resource=row[5],
            created_at=self._time(row[6]),
            revoked_at=self._maybe_time(row[7]),
        )

    def code(self, row: Sequence[Any]) -> CodeRecord:
        """A CodeRecord from a row in :data:`CODE_FIELDS` order."""
        return CodeRecord(
            digest=row[0],
            grant_id=row[1],
            code_challenge=row[2],
            redirect_uri=row[3],
            redirect_uri_explicit=bool(row[4]),
            expires_at=self._time(row[5]),
            used_at=self._maybe_time(row[6]),
        )

    def token(self, row: Sequence[Any]) -> TokenRecord:
        """A TokenRecord from a row in :data:`TOKEN_FIELDS` order."""
        return TokenRecord(
            digest=row[0],
            grant_id=row[1],
            kind=row[2],
            scopes=tuple(row[3].split()),
            expires_at=self._time(row[4]),
            used_at=self._maybe_time(row[5]),
        )
