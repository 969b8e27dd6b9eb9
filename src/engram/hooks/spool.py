"""The local spool: events the server could not take, one owner-only file each, named by the
event's idempotency key. They are delivered with the next event that reaches the server and
deleted once it answers 2xx; the server stores each key once, so a delivery repeated after a
crash stores nothing twice."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from engram.hooks.paths import private_dir

TYPE_CHECKING = False  # typing is not imported: the hook client starts faster
if TYPE_CHECKING:
    from typing import Any

MAX_BATCH = 200
"""Spooled events sent along with one live event."""
MAX_FILES = 100_000
"""Beyond this many spooled events new ones are dropped (and logged), never the disk filled."""


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def put(self, event: dict[str, Any]) -> bool:
        """Keep ``event`` (already scrubbed) until it can be delivered; False when full."""
        directory = private_dir(self.directory)
        if self.count() >= MAX_FILES:
            return False
        final = directory / f"{event['key']}.json"
        tmp = directory / f".{event['key']}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(event, f, ensure_ascii=False)
        os.replace(tmp, final)  # readers see whole files only
        return True

    def count(self) -> int:
        try:
            return sum(1 for n in os.listdir(self.directory) if n.endswith(".json"))
        except FileNotFoundError:
            return 0

    def take(self, limit: int = MAX_BATCH) -> list[tuple[Path, dict[str, Any]]]:
        """Up to ``limit`` spooled events, oldest first (unreadable files are set aside)."""
        try:
            entries = [e for e in os.scandir(self.directory) if e.name.endswith(".json")]
        except FileNotFoundError:
            return []
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        out: list[tuple[Path, dict[str, Any]]] = []
        for entry in entries[:limit]:
            path = Path(entry.path)
            try:
                out.append((path, json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError):
                with contextlib.suppress(OSError):
                    path.rename(path.with_suffix(".bad"))
        return out

    @staticmethod
    def delivered(paths: list[Path]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
