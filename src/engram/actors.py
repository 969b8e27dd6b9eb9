"""Who is acting: recorded on every version and (with the server) in the audit log."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Actor:
    user_id: str
    interface: str = "api"
    key_id: str | None = None

    @property
    def label(self) -> str:
        return self.user_id if self.key_id is None else f"{self.user_id}/{self.key_id}"


LOCAL_USER = "local"
LOCAL = Actor(LOCAL_USER, "local")
