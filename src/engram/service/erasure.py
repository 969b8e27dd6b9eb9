"""Deletion that means it: a conversation (with its messages, and with ``purge`` the memories
extracted from it), and an account (``purge``: everything that is theirs).

Each is one :meth:`Store.erase` transaction, audited with ids and counts only (never text).
What goes and what stays is said in the report: audit entries stay (they hold no content),
and so do backups made before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from engram.accounts import Role, Scope
from engram.actors import Actor
from engram.erasure import Erased
from engram.errors import Conflict, NotFound, PermissionDenied
from engram.extraction.conversation import Conversation
from engram.models import Memory, MemoryFilter, Status
from engram.service.audit import AuditLog
from engram.service.environments import EnvironmentService
from engram.store import Store
from engram.store.protocol import Erasure


class Lookup(Protocol):
    """How the service finds a conversation by the caller's id or Engram's (the extraction
    service's rule), passed in so that this module needs no extraction import."""

    def __call__(self, conversation_id: str, actor: Actor, need: Role) -> Conversation: ...


class ErasureService:
    def __init__(
        self,
        store: Store,
        environments: EnvironmentService,
        audit: AuditLog,
        find_conversation: Lookup,
        files: Callable[[str], int] | None = None,
    ) -> None:
        """``files`` removes a user's files outside the store (their import uploads) and
        says how many."""
        self._store = store
        self._files = files
        self._envs = environments
        self._audit = audit
        self._find = find_conversation

    # -- conversations -------------------------------------------------------------------------
    def delete_conversation(
        self, conversation_id: str, actor: Actor, *, purge: bool = False
    ) -> Erased:
        """Remove a conversation and its messages for good. With ``purge``, the memories
        extracted from it (every version, any status) go too; without, they stay. The
        conversation's own writer may delete it; a purge, and another's conversation, need
        the environment's owner."""
        conv = self._find(conversation_id, actor, Role.WRITER)
        if purge or conv.owner != actor.user_id:
            self._envs.resolve(conv.environment_id, actor, Role.OWNER)
        memories = (
            [m.id for m in self._from_threads(conv.environment_id, {conv.id})] if purge else []
        )
        entry = self._audit.entry(
            actor,
            "conversation.purge" if purge else "conversation.delete",
            environment_id=conv.environment_id,
            targets=[conv.id, *memories],
            memories=len(memories),
        )
        removed = self._store.erase(
            Erasure(memory_ids=memories, conversation_ids=[conv.id]), [entry]
        )
        return Erased(removed=removed, conversations=[conv.id], memories=memories)

    def _from_threads(self, env_id: str, threads: set[str]) -> Iterator[Memory]:
        flt = MemoryFilter(environment_ids=[env_id], threads=sorted(threads), statuses=list(Status))
        yield from self._all(flt)

    def _all(self, flt: MemoryFilter) -> Iterator[Memory]:
        count = self._store.count(flt)
        if count:  # one read: no page boundary for a write in between to shift
            yield from self._store.list_memories(flt, limit=count, order="created_at")

    # -- accounts ------------------------------------------------------------------------------
    def delete_user(self, user_id: str, actor: Actor, *, purge: bool = False) -> Erased:
        """Delete an account (admins; not your own): its keys, memberships and Soul layer.
        With ``purge``, everything that is theirs goes too: the environments they own (with
        every memory, version, vector, conversation, captured session and review in them),
        their conversations in environments others own, and the memories they wrote or that
        were extracted from those conversations. Without ``purge``, an account that owns
        environments or conversations is refused. An environment of theirs that others are
        members of is refused either way: unshare it (or delete it) first."""
        if not actor.can(Scope.ADMIN):
            raise PermissionDenied("deleting an account needs the admin scope")
        if user_id == actor.user_id:
            raise Conflict("you cannot delete the account you are acting as")
        if self._store.accounts.get_user(user_id) is None:
            raise NotFound(f"user {user_id!r} does not exist", user_id=user_id)
        owned = self._store.list_environments(user_id)
        shared = [e.name for e in owned if self._store.accounts.list_members(e.id)]
        if shared:
            raise Conflict(
                f"user {user_id!r} owns environments others are members of: "
                f"{', '.join(sorted(shared))}; unshare or delete them first",
                environments=sorted(shared),
            )
        own_ids = {e.id for e in owned}
        conversations = [
            c
            for c in self._store.conversations.owned_conversations(user_id)
            if (found := self._store.conversations.get_conversation(c)) is not None
            and found.environment_id not in own_ids
        ]
        if not purge and (owned or conversations):
            raise Conflict(
                f"user {user_id!r} owns {len(owned)} environments and {len(conversations)} "
                "conversations elsewhere; delete with purge to remove them for good",
                environments=len(owned),
                conversations=len(conversations),
            )
        memories = self._authored_elsewhere(user_id, own_ids, set(conversations)) if purge else []
        # the counts of what goes: the memories in their own environments as well as those
        # elsewhere (the entry is written with the erasure, in its transaction)
        inside = (
            self._store.count(MemoryFilter(environment_ids=sorted(own_ids), statuses=list(Status)))
            if own_ids
            else 0
        )
        entry = self._audit.entry(
            actor,
            "user.purge" if purge else "user.delete",
            targets=[user_id, *sorted(own_ids), *conversations, *memories],
            environments=len(own_ids),
            conversations_elsewhere=len(conversations),
            memories=inside + len(memories),
            memories_elsewhere=len(memories),
        )
        removed = self._store.erase(
            Erasure(
                memory_ids=memories,
                conversation_ids=conversations,
                environment_ids=sorted(own_ids),
                user_id=user_id,
            ),
            [entry],
        )
        if self._files is not None:
            removed["import_jobs"] = self._files(user_id)
        return Erased(
            removed=removed,
            conversations=conversations,
            memories=memories,
            environments=sorted(own_ids),
            user_id=user_id,
        )

    def _authored_elsewhere(
        self, user_id: str, own: set[str], conversations: set[str]
    ) -> list[str]:
        """Memories in environments the user does not own that they wrote, or that came
        from their conversations."""
        out: list[str] = []
        for member in self._store.accounts.memberships(user_id):
            if member.environment_id in own:
                continue
            flt = MemoryFilter(environment_ids=[member.environment_id], statuses=list(Status))
            out += [
                m.id for m in self._all(flt) if m.author == user_id or m.thread in conversations
            ]
        # their conversations may sit in environments they are no longer a member of
        for conv_id in conversations:
            conv = self._store.conversations.get_conversation(conv_id)
            if conv is not None:
                out += [m.id for m in self._from_threads(conv.environment_id, {conv_id})]
        return list(dict.fromkeys(out))
