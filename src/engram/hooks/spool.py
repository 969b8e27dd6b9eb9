"""The local spool: events the server could not take, one owner-only file each, named by the
event's idempotency key. They are delivered with the next event that reaches the server and
deleted once it answers 2xx; the server stores each key once, so a delivery repeated after a
crash stores nothing twice.

An event the server refuses for good (:class:`~engram.hooks.wire.Refused`: an environment that
does not exist, an event that is not valid) is moved to ``rejected/`` beside the spool, with
the server's reason, so that it never holds back the events behind it."""

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

    @property
    def rejected_dir(self) -> str:
        """Where events the server refused for good are kept (owner-only), beside the spool."""
        return os.path.join(os.path.dirname(self.directory.rstrip(os.sep)), "rejected")

    def put(self, event: dict[str, Any]) -> bool:
        """Keep ``event`` (already scrubbed) until it can be delivered; False when full."""
        if self.count() >= MAX_FILES:
            return False
        _write(private_dir(self.directory), event["key"], event)
        return True

    def reject(self, path: str | None, event: dict[str, Any], reason: str) -> bool:
        """Set ``event`` aside in :attr:`rejected_dir` with the server's ``reason`` and remove
        its spool file (``path``, None for an event never spooled); False when that folder is
        full (the event is dropped)."""
        kept = _count(self.rejected_dir) < MAX_FILES
        if kept:
            key = str(event.get("key") or "")
            if not (key and key.replace("-", "").replace("_", "").isalnum()):
                key = os.urandom(16).hex()  # never a path from what the event says
            _write(private_dir(self.rejected_dir), key, {"reason": reason, "event": event})
        if path is not None:
            self.delivered([path])
        return kept

    def count(self) -> int:
        return _count(self.directory)

    def count_rejected(self) -> int:
        return _count(self.rejected_dir)

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


def _count(directory: str) -> int:
    try:
        return sum(1 for n in os.listdir(directory) if n.endswith(".json"))
    except FileNotFoundError:
        return 0


def _write(directory: str, key: str, data: dict[str, Any]) -> None:
    final = os.path.join(directory, f"{key}.json")
    tmp = os.path.join(directory, f".{key}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(dumps(data))
    os.replace(tmp, final)  # readers see whole files only
