"""What one SQLite schema migration is: a name, its statements, and optionally a data step in
Python; :mod:`engram.store.sqlite.migrations` lists them and runs them."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]
    # a data step that needs Python (runs after the statements, in the same transaction)
    run: Callable[[sqlite3.Connection], None] | None = None
