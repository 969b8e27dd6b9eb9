from __future__ import annotations

import engram


def test_public_api_is_pinned() -> None:
    assert sorted(engram.__all__) == sorted(
        [
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
    )
    for name in engram.__all__:
        assert hasattr(engram, name), name
