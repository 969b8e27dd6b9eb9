"""The Markdown vault (format in :mod:`engram.portability.vault`): export the memories of one
or every environment as files, and sync edits both ways.

Sync compares each file and each memory with what the last export or sync wrote (the state
file keeps every file's SHA-256 and the memory's version then):

- a file edited while its memory stayed the same becomes a new version ("edited in the vault");
- a memory changed in Engram while its file stayed the same is written to the file;
- a file deleted while its memory stayed the same soft-deletes the memory;
- a new file (no id) becomes a new memory through the lifecycle (dedup may merge it);
- when both sides changed, nothing is overwritten: the file gets Engram's version and the
  vault's edit is kept beside it as ``<id>.conflict.md``, and the conflict is reported.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engram.accounts import Role
from engram.actors import Actor
from engram.errors import EngramError, InvalidInput, NotFound
from engram.models import Environment, Layer, Memory, MemoryFilter, MemoryPatch, NewMemory, Status
from engram.portability import vault as fmt
from engram.service.environments import EnvironmentService, validation_message
from engram.service.lifecycle import LifecycleService
from engram.service.memories import MemoryService
from engram.store import Store

EDITED = "edited in the vault"
DELETED = "deleted in the vault"
_RELATED_MAX = 20
_ALL = 1_000_000_000


@dataclass
class SyncReport:
    written: list[str] = field(default_factory=list)
    """Files written from Engram (new or changed memories)."""
    updated: list[str] = field(default_factory=list)
    """Memories given a new version from an edited file."""
    created: list[str] = field(default_factory=list)
    """Memories made from new files."""
    deleted: list[str] = field(default_factory=list)
    """Memories soft-deleted because their file was deleted."""
    removed: list[str] = field(default_factory=list)
    """Files removed because their memory is no longer active."""
    conflicts: list[str] = field(default_factory=list)
    """Both sides changed: what was kept where."""
    errors: list[str] = field(default_factory=list)
    """Files that could not be read back (left as they are)."""

    def as_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.__dict__.items()}


class VaultService:
    def __init__(
        self,
        store: Store,
        environments: EnvironmentService,
        memories: MemoryService,
        lifecycle: LifecycleService,
    ) -> None:
        self._store = store
        self._envs = environments
        self._memories = memories
        self._lifecycle = lifecycle

    # -- export --------------------------------------------------------------------------------
    def export(self, folder: Path, actor: Actor, environment: str | None = None) -> SyncReport:
        """Write the active memories of ``environment`` (default: every environment you can
        read) into ``folder``: a file per memory, index pages and the state file."""
        envs = (
            [self._envs.resolve(environment, actor, Role.READER)]
            if environment
            else self._envs.list(actor)
        )
        state = {"environments": {fmt.folder_name(e.name): e.id for e in envs}, "files": {}}
        report = SyncReport()
        self._write_all(folder, envs, state, report)
        return report

    def _write_all(
        self,
        folder: Path,
        envs: list[Environment],
        state: dict[str, Any],
        report: SyncReport,
        keep: dict[str, Any] | None = None,
    ) -> None:
        """Write every active memory's file (except those in ``keep``, files that could not be
        read back: their entries stay as given), the index pages and the state file."""
        keep = keep or {}
        files: dict[str, Any] = dict(keep)
        top: list[tuple[str, list[Memory]]] = []
        for env in sorted(envs, key=lambda e: e.name):
            name = fmt.folder_name(env.name)
            active = self._active(env.id)
            by_thread: dict[str, list[Memory]] = defaultdict(list)
            for m in active:
                if m.thread:
                    by_thread[m.thread].append(m)
            for m in active:
                path = fmt.memory_path(name, m)
                if path in keep:
                    continue
                text = fmt.render(m, _related(m, by_thread))
                if _write(folder / path, text):
                    report.written.append(path)
                files[path] = {"id": m.id, "version": m.version, "sha256": fmt.digest(text)}
            sections = [
                (f"{layer.value}s", [m for m in active if m.layer is layer]) for layer in Layer
            ]
            _write(folder / name / fmt.INDEX, fmt.index_page(env.name, sections))
            top.append((env.name, []))
        lines = ["# Engram vault", ""] + [f"- [[{n}/index|{n}]]" for n, _ in top] + [""]
        _write(folder / fmt.INDEX, "\n".join(lines))
        state["files"] = dict(sorted(files.items()))
        _write(folder / fmt.STATE_FILE, json.dumps(state, indent=1, sort_keys=True) + "\n")

    def _active(self, env_id: str) -> list[Memory]:
        flt = MemoryFilter(environment_ids=[env_id], statuses=[Status.ACTIVE])
        found = self._store.list_memories(flt, limit=_ALL, order="created_at")
        return sorted(found, key=lambda m: (m.created_at, m.id))

    # -- sync ----------------------------------------------------------------------------------
    def sync(self, folder: Path, actor: Actor) -> SyncReport:
        """Bring the vault's edits into Engram and Engram's changes into the vault."""
        state_path = folder / fmt.STATE_FILE
        if not state_path.is_file():
            raise InvalidInput(
                f"{folder}: not an Engram vault (no {fmt.STATE_FILE}); "
                "write one first with engram export --format vault DIR"
            )
        state = json.loads(state_path.read_text())
        env_by_folder: dict[str, str] = state["environments"]
        envs = {f: self._envs.resolve(e, actor, Role.WRITER) for f, e in env_by_folder.items()}
        report = SyncReport()
        known: dict[str, Any] = state["files"]
        seen_paths = set(known)
        keep: dict[str, Any] = {}
        for path, entry in known.items():
            if not self._sync_known(folder, path, entry, actor, report):
                keep[path] = entry
        for env_folder, env in envs.items():
            for file in sorted((folder / env_folder).glob("*s/*.md")):
                rel = file.relative_to(folder).as_posix()
                if rel in seen_paths or ".conflict" in file.name:
                    continue
                self._sync_new(file, rel, env, actor, report)
        self._write_all(folder, list(envs.values()), state, report, keep)
        return report

    def _sync_known(
        self, folder: Path, path: str, entry: dict[str, Any], actor: Actor, report: SyncReport
    ) -> bool:
        """Sync one file the state knows; False if it could not be read back (it is then
        left as it is, and not overwritten)."""
        file = folder / path
        try:
            memory: Memory | None = self._memories.get(entry["id"], actor)
        except NotFound:
            memory = None
        store_changed = memory is None or (
            memory.version != entry["version"] or memory.status is not Status.ACTIVE
        )
        if not file.exists():
            if memory is None or memory.status is not Status.ACTIVE:
                return True
            if store_changed:
                report.conflicts.append(
                    f"{path}: deleted in the vault but changed in Engram; written back"
                )
                return True
            self._memories.delete(memory.id, actor, DELETED)
            report.deleted.append(memory.id)
            return True
        text = file.read_text()
        file_changed = fmt.digest(text) != entry["sha256"]
        if not file_changed:
            if memory is None or memory.status is not Status.ACTIVE:
                file.unlink()
                report.removed.append(path)
            return True  # a changed memory is written by _write_all
        if store_changed:
            kept = file.with_name(f"{entry['id']}.conflict.md")
            kept.write_text(text)
            report.conflicts.append(
                f"{path}: changed in the vault and in Engram; Engram's version is in the "
                f"file, the vault's edit kept in {kept.relative_to(folder).as_posix()}"
            )
            return True
        assert memory is not None
        try:
            patch = _patch(fmt.parse(text, path), memory)
            if patch is not None:
                self._memories.update(memory.id, patch, actor, EDITED)
                report.updated.append(memory.id)
        except (EngramError, ValidationError) as exc:
            report.errors.append(f"{path}: {_message(exc)}; left as it is")
            entry["sha256"] = fmt.digest(text)  # not retried until it changes again
            return False
        return True

    def _sync_new(
        self, file: Path, rel: str, env: Environment, actor: Actor, report: SyncReport
    ) -> None:
        try:
            parsed = fmt.parse(file.read_text(), rel)
            layer = Layer(file.parent.name.removesuffix("s"))
            if parsed.id is not None:
                existing = self._memories.get(parsed.id, actor)
                patch = _patch(parsed, existing)
                if patch is not None:
                    self._memories.update(existing.id, patch, actor, EDITED)
                    report.updated.append(existing.id)
                if rel != fmt.memory_path(file.parent.parent.name, existing):
                    file.unlink()
                return
            if not parsed.content:
                report.errors.append(f"{rel}: empty; left as it is")
                return
            editable = {k: parsed.fields[k] for k in fmt.EDITABLE if k in parsed.fields}
            extra = fmt.details(layer, parsed.fields)
            new = NewMemory(layer=layer, content=parsed.content, **editable, **extra)
            outcome = self._lifecycle.remember(new, actor, env.id)
        except (EngramError, ValidationError, ValueError) as exc:
            report.errors.append(f"{rel}: {_message(exc)}; left as it is")
            return
        file.unlink()  # rewritten under its id (or its merge target's) by _write_all
        report.created.append(outcome.memory.id)


def _patch(parsed: fmt.VaultFile, memory: Memory) -> MemoryPatch | None:
    """The changes a file makes to its memory, or None."""
    changes: dict[str, Any] = {}
    if parsed.content and parsed.content != memory.content.strip():
        changes["content"] = parsed.content
    for key in fmt.EDITABLE:
        if key in parsed.fields and parsed.fields[key] != getattr(memory, key):
            changes[key] = parsed.fields[key]
    if "tags" in changes and list(changes["tags"] or []) == list(memory.tags):
        del changes["tags"]
    changes.update(fmt.details(memory.layer, parsed.fields, memory))
    return MemoryPatch(**changes) if changes else None


def _related(memory: Memory, by_thread: dict[str, list[Memory]]) -> list[Memory]:
    """Memories of the same conversation or session in another layer (an extracted fact and
    its episode), in a stable order."""
    if not memory.thread:
        return []
    others = [m for m in by_thread[memory.thread] if m.layer is not memory.layer]
    return others[:_RELATED_MAX]


def _write(path: Path, text: str) -> bool:
    """Write ``text`` unless the file already holds it; True if written."""
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return validation_message(exc)
    if isinstance(exc, EngramError):
        return exc.message
    return str(exc)
