"""Where the PostgreSQL store finds its sub-stores (accounts, audit, soul, reviews, ...).

Each lives in its own module ``engram.store.postgres.<attribute>`` and is built with the
:class:`PostgresDatabase`. Every sub-store in :data:`SUB_STORES` has its module; the
:class:`Unavailable` placeholder (raising :class:`StorageError` when used) stands in only for a
module that fails to be found, and goes with this registry when the sub-stores become typed
properties of the store protocol (issue 14, item 1).
"""

from __future__ import annotations

import importlib
from typing import Any

from engram.errors import StorageError
from engram.store.postgres.db import PostgresDatabase

# attribute of the store -> class in engram.store.postgres.<attribute>
SUB_STORES = {
    "accounts": "PostgresAccountStore",
    "audit": "PostgresAuditStore",
    "soul": "PostgresSoulStore",
    "reviews": "PostgresReviewStore",
    "conversations": "PostgresConversationStore",
    "providers": "PostgresProviderStore",
}


class Unavailable:
    """Stands in for a sub-store this version does not implement on PostgreSQL."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise StorageError(f"{self._name} are not supported on the PostgreSQL store yet")


def build(name: str, db: PostgresDatabase) -> Any:
    """The sub-store ``name`` over ``db``, or an :class:`Unavailable` placeholder."""
    module_name = f"engram.store.postgres.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        return Unavailable(name)
    return getattr(module, SUB_STORES[name])(db)
