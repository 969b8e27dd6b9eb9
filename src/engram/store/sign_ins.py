"""The storage seam for failed sign-ins, kept in the store so that every server process on it
(``engram serve --workers N``, several servers on one PostgreSQL) counts the same guesses, and a
restart does not reset them. :mod:`engram.service.sign_ins` applies the limits.

A row is a time, a digest of the user name as typed (folded; people do type a password into the
name field) and the client address; no password, nothing else. Rows older than the counting
window are deleted as new ones arrive, and the service stops checking (so stops recording) once
the window holds its server-wide ceiling, so the table stays small.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from engram.store.sql_dialect import Dialect

TABLE = "sign_in_failures"


@dataclass(frozen=True, slots=True)
class SignInFailure:
    at: datetime
    name: str
    """A keyed digest of the user name as typed, stripped and lower-cased."""
    address: str
    """The client address the server saw."""


class SignInFailureStore(Protocol):
    def record(self, failure: SignInFailure, forget_before: datetime) -> None:
        """Count one failure, and forget those before ``forget_before``."""
        ...

    def since(self, after: datetime, limit: int) -> list[SignInFailure]:
        """The failures after ``after``, newest first, at most ``limit``."""
        ...


class SQLSignInFailureStore(Dialect):
    """:class:`SignInFailureStore` in the SQL both backends share."""

    def record(self, failure: SignInFailure, forget_before: datetime) -> None:
        with self._tx() as conn:
            conn.execute(
                self._sql(f"DELETE FROM {TABLE} WHERE at < ?"), (self._time(forget_before),)
            )
            conn.execute(
                self._sql(f"INSERT INTO {TABLE} (at, name, address) VALUES (?, ?, ?)"),
                (self._time(failure.at), failure.name, failure.address),
            )

    def since(self, after: datetime, limit: int) -> list[SignInFailure]:
        rows = self._all(
            f"SELECT at, name, address FROM {TABLE} WHERE at > ? ORDER BY at DESC LIMIT ?",
            (self._time(after), limit),
        )
        return [SignInFailure(self._read_time(r[0]), r[1], r[2]) for r in rows]
