"""Engram: a self-hosted persistent memory layer for AI.

The public API is small and pinned by ``tests/test_public_api.py``::

    from engram import Engram, Settings, NewMemory
    with Engram.open(Settings.load()) as engram:
        engram.memories.add(NewMemory(content="I prefer tabs"), LOCAL)
"""

from typing import TYPE_CHECKING

from engram.actors import LOCAL, Actor
from engram.config import Settings
from engram.errors import (
    Conflict,
    EngramError,
    InvalidInput,
    MissingDependency,
    NotFound,
    PermissionDenied,
    StorageError,
    Unauthenticated,
)
from engram.models import (
    Environment,
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryVersion,
    NewMemory,
    ProcedureDetails,
    Source,
    Status,
)

if TYPE_CHECKING:
    from engram.service import Engram

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Engram (the service stack: numpy, argon2, the stores) loads on first use, so that
    # ``import engram.sdk`` and the data models stay light
    if name == "Engram":
        from engram.service import Engram

        return Engram
    raise AttributeError(f"module 'engram' has no attribute {name!r}")


__all__ = [
    "LOCAL",
    "Actor",
    "Conflict",
    "Engram",
    "EngramError",
    "Environment",
    "EpisodeDetails",
    "InvalidInput",
    "Layer",
    "Memory",
    "MemoryFilter",
    "MemoryPatch",
    "MemoryVersion",
    "MissingDependency",
    "NewMemory",
    "NotFound",
    "PermissionDenied",
    "ProcedureDetails",
    "Settings",
    "Source",
    "Status",
    "StorageError",
    "Unauthenticated",
    "__version__",
]
