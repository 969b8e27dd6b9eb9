"""Engram: a self-hosted persistent memory layer for AI.

The public API is small and pinned by ``tests/test_public_api.py``::

    from engram import Engram, Settings, NewMemory
    with Engram.open(Settings.load()) as engram:
        engram.memories.add(NewMemory(content="I prefer tabs"), LOCAL)

The names are imported on first use (PEP 562), so a process that needs one small module (the
hook client, ``engram.hooks``) does not load the service stack.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself is not imported: the hook client starts faster
if TYPE_CHECKING:
    from typing import Any

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
    from engram.service import Engram

__version__ = "0.1.0"


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


_HOMES = {
    "LOCAL": "engram.actors",
    "Actor": "engram.actors",
    "Settings": "engram.config",
    "Engram": "engram.service",
    **dict.fromkeys(
        (
            "Conflict",
            "EngramError",
            "InvalidInput",
            "MissingDependency",
            "NotFound",
            "PermissionDenied",
            "StorageError",
            "Unauthenticated",
        ),
        "engram.errors",
    ),
    **dict.fromkeys(
        (
            "Environment",
            "EpisodeDetails",
            "Layer",
            "Memory",
            "MemoryFilter",
            "MemoryPatch",
            "MemoryVersion",
            "NewMemory",
            "ProcedureDetails",
            "Source",
            "Status",
        ),
        "engram.models",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'engram' has no attribute {name!r}")
    __import__(home)  # not importlib: it imports warnings, milliseconds of the hook's start
    value = getattr(sys.modules[home], name)
    globals()[name] = value
    return value
