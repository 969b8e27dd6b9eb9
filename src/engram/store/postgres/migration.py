"""What one PostgreSQL schema migration is: a name and its statements;
:mod:`engram.store.postgres.migrations` lists them and runs them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]
