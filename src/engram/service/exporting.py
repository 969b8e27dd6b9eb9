"""Exports a person can read or take elsewhere: memories (JSON with every version, Markdown,
XLSX, DOCX, PDF), conversations (Markdown, DOCX, PDF) and the Soul (JSON, Markdown), with
filters. The writers are in :mod:`engram.portability.writers`; access is checked here."""

from __future__ import annotations

import json

from engram.actors import Actor
from engram.errors import InvalidInput
from engram.models import Environment, Memory, MemoryFilter
from engram.portability.writers import (
    ConversationExport,
    MemoryExport,
    writer_for,
)
from engram.service.environments import EnvironmentService
from engram.service.soul import SoulService
from engram.service.threads import own_threads
from engram.store import Store
from engram.store.conversations import ConversationStore

SOUL_FORMATS = ("json", "markdown")
_PAGE = 1000


class ExportService:
    def __init__(
        self,
        store: Store,
        environments: EnvironmentService,
        conversations: ConversationStore,
        soul: SoulService,
    ) -> None:
        self._store = store
        self._envs = environments
        self._conversations = conversations
        self._soul = soul

    def _scope(self, actor: Actor, environment: str | None) -> list[Environment]:
        """One environment when named, else every one the actor can read."""
        if environment is not None:
            return [self._envs.resolve(environment, actor)]
        return sorted(self._envs.list(actor), key=lambda e: e.name)

    def memory_data(
        self, actor: Actor, environment: str | None = None, flt: MemoryFilter | None = None
    ) -> MemoryExport:
        envs = self._scope(actor, environment)
        base = (flt or MemoryFilter()).model_copy(update={"environment_ids": [e.id for e in envs]})
        base = own_threads(base, actor, self._conversations)
        memories: list[Memory] = []
        if envs:
            while page := self._store.list_memories(
                base, limit=_PAGE, offset=len(memories), order="created_at"
            ):
                memories.extend(page)
        return MemoryExport(
            environments=envs,
            memories=memories,
            versions={m.id: self._store.versions(m.id) for m in memories},
        )

    def memories(
        self,
        fmt: str,
        actor: Actor,
        environment: str | None = None,
        flt: MemoryFilter | None = None,
    ) -> bytes:
        """Memories matching ``flt`` (any status listed in it; active by default) in one
        environment or all the actor can read, as ``fmt``."""
        write = writer_for("memories", fmt)
        return write(self.memory_data(actor, environment, flt))

    def conversations(self, fmt: str, actor: Actor, environment: str | None = None) -> bytes:
        write = writer_for("conversations", fmt)
        envs = {e.id: e.name for e in self._scope(actor, environment)}
        found = []
        for cid in self._store.export.conversation_ids():
            conv = self._conversations.get_conversation(cid)
            if conv is not None and conv.environment_id in envs:
                found.append((conv, self._conversations.messages(cid)))
        return write(ConversationExport(environments=envs, conversations=found))

    def soul(self, fmt: str, actor: Actor, environment: str | None = None) -> bytes:
        """The Soul as the actor's assistant sees it in ``environment``: every block with its
        effective text and its history."""
        if fmt not in SOUL_FORMATS:
            raise InvalidInput(f"Soul export formats are {', '.join(SOUL_FORMATS)}; got {fmt!r}")
        view = self._soul.view(actor, environment)
        if fmt == "json":
            return (
                json.dumps(view.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
            ).encode()
        rendered = self._soul.render(actor, environment, 100_000)
        return f"# Soul\n\n{rendered.text}\n".encode()
