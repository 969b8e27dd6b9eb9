"""The storage seam that bounds OAuth dynamic client registration (RFC 7591): anyone may
register a client, so the clients that never got a grant are capped, and those left unused
past a deadline are deleted when the next one registers.

A client is *unclaimed* while no user has consented to it (it has no grant, revoked or not).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from engram.store.oauth import ClientRecord
from engram.store.sql_dialect import Dialect

_UNCLAIMED = "NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)"


class ClientRegistry(Protocol):
    def register(self, client: ClientRecord, *, stale_before: datetime, cap: int) -> bool:
        """In one transaction: delete the unclaimed clients registered before
        ``stale_before``, then store ``client`` unless ``cap`` unclaimed clients remain.
        False (nothing stored) when full."""
        ...

    def unclaimed(self) -> int:
        """How many registered clients have no grant."""
        ...


class SQLClientRegistry(Dialect):
    """:class:`ClientRegistry` in the SQL both backends share."""

    def _serialize(self, conn: Any) -> None:
        """Make concurrent registrations take turns (the count must hold until the insert)."""

    def register(self, client: ClientRecord, *, stale_before: datetime, cap: int) -> bool:
        with self._tx() as conn:
            self._serialize(conn)
            conn.execute(
                self._sql(f"DELETE FROM oauth_clients WHERE created_at < ? AND {_UNCLAIMED}"),
                (self._time(stale_before),),
            )
            row = conn.execute(f"SELECT count(*) FROM oauth_clients WHERE {_UNCLAIMED}").fetchone()
            if row[0] >= cap:
                return False
            conn.execute(
                self._sql(
                    "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (?, ?, ?)"
                ),
                (client.client_id, client.metadata, self._time(client.created_at)),
            )
            return True

    def unclaimed(self) -> int:
        row = self._one(f"SELECT count(*) FROM oauth_clients WHERE {_UNCLAIMED}", ())
        return int(row[0]) if row else 0
