"""The storage seam for the dashboard's browser sessions, kept in the store so that a restart
signs no one out and every server process on the store knows every session.

Only an HMAC digest of a session's token is stored (like API keys), with its user, when it
ends and the environment it switched to. Deleting a user deletes their sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from engram.store.sql_dialect import Dialect

TABLE = "web_sessions"


@dataclass(frozen=True, slots=True)
class WebSessionRecord:
    digest: str
    user_id: str
    created_at: datetime
    expires_at: datetime
    environment: str | None = None
    """The environment the user switched to (None: their default)."""


class WebSessionStore(Protocol):
    def put(self, session: WebSessionRecord, expired_before: datetime) -> None:
        """Store a new session, and delete those that expired before ``expired_before``."""
        ...

    def get(self, digest: str) -> WebSessionRecord | None: ...

    def switch(self, digest: str, environment: str | None) -> None: ...

    def delete(self, digest: str) -> bool:
        """End one session; False if it did not exist."""
        ...

    def delete_for_user(self, user_id: str) -> int:
        """End every session of ``user_id``; how many ended."""
        ...


_COLUMNS = "digest, user_id, created_at, expires_at, environment"


class SQLWebSessionStore(Dialect):
    """:class:`WebSessionStore` in the SQL both backends share."""

    def put(self, session: WebSessionRecord, expired_before: datetime) -> None:
        s = session
        with self._tx() as conn:
            conn.execute(
                self._sql(f"DELETE FROM {TABLE} WHERE expires_at < ?"),
                (self._time(expired_before),),
            )
            conn.execute(
                self._sql(f"INSERT INTO {TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)"),
                (
                    s.digest,
                    s.user_id,
                    self._time(s.created_at),
                    self._time(s.expires_at),
                    s.environment,
                ),
            )

    def get(self, digest: str) -> WebSessionRecord | None:
        row = self._one(f"SELECT {_COLUMNS} FROM {TABLE} WHERE digest = ?", (digest,))
        if row is None:
            return None
        return WebSessionRecord(
            digest=row[0],
            user_id=row[1],
            created_at=self._read_time(row[2]),
            expires_at=self._read_time(row[3]),
            environment=row[4],
        )

    def switch(self, digest: str, environment: str | None) -> None:
        self._run(f"UPDATE {TABLE} SET environment = ? WHERE digest = ?", (environment, digest))

    def delete(self, digest: str) -> bool:
        return self._run(f"DELETE FROM {TABLE} WHERE digest = ?", (digest,)) == 1

    def delete_for_user(self, user_id: str) -> int:
        return self._run(f"DELETE FROM {TABLE} WHERE user_id = ?", (user_id,))
