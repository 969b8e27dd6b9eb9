"""Engram's id of a captured session, and the time an event says it happened."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime


def session_key(environment_id: str, agent: str, session_id: str) -> str:
    """One id per (environment, agent, the agent's own session id)."""
    digest = hashlib.sha256(f"{environment_id}\0{agent}\0{session_id}".encode()).hexdigest()
    return f"ses_{digest[:24]}"


def parse_at(value: str, fallback: datetime) -> datetime:
    """An event's ISO 8601 time (UTC when it names no zone), or ``fallback`` when unreadable."""
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return fallback
    return at if at.tzinfo else at.replace(tzinfo=UTC)
