"""The local spool: events the server could not take, one owner-only file each, named by the
event's idempotency key. They are delivered with the next event that reaches the server and
deleted once it answers 2xx; the server stores each key once, so a delivery repeated after a
crash stores nothing twice."""

from __future__ import annotations

import os

from engram.capture.jsonio import dumps, loads
from engram.hooks.paths import private_dir

TYPE_CHECKING = False  # typing is not imported: the hook client starts faster
if TYPE_CHECKING:
    from typing import Any

MAX_BATCH = 200
"""Spooled events sent along with one live event."""
MAX_FILES = 100_000
"""Beyond this many spooled events new ones are dropped (and logged), never the disk filled."""


class Spool:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)

    def put(self, event: dict[str, Any]) -> bool:
        """Keep ``event`` (already scrubbed) until it can be delivered; False when full."""
        directory = private_dir(self.directory)
        if self.count() >= MAX_FILES:
            return False
        final = os.path.join(directory, f"{event['key']}.json")
        tmp = os.path.join(directory, f".{event['key']}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(event))
        os.replace(tmp, final)  # readers see whole files only
        return True

    def count(self) -> int:
        try:
            return sum(1 for n in os.listdir(self.directory) if n.endswith(".json"))
        except FileNotFoundError:
            return 0

    def take(self, limit: int = MAX_BATCH) -> list[tuple[str, dict[str, Any]]]:
        """Up to ``limit`` spooled events, oldest first (unreadable files are set aside)."""
        try:
            entries = [e for e in os.scandir(self.directory) if e.name.endswith(".json")]
        except FileNotFoundError:
            return []
        entries.sort(key=lambda e: e.stat().st_mtime_ns)
        out: list[tuple[str, dict[str, Any]]] = []
        for entry in entries[:limit]:
            path = entry.path
            try:
                with open(path, "rb") as f:
                    out.append((path, loads(f.read())))
            except (OSError, ValueError):
                try:  # noqa: SIM105 (contextlib costs the hook's start milliseconds)
                    os.rename(path, path[: -len(".json")] + ".bad")
                except OSError:
                    pass
        return out

    @staticmethod
    def delivered(paths: list[str]) -> None:
        for path in paths:
            try:  # noqa: SIM105 (contextlib costs the hook's start milliseconds)
                os.unlink(path)
            except FileNotFoundError:
                pass
