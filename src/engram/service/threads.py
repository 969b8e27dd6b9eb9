"""A listing's thread filter names conversations as the caller knows them.

A memory's ``thread`` holds the Engram id of its conversation (``cnv_…``), or a capture or MCP
session id. A caller names their conversation by their own id everywhere else
(``/conversations/{id}``, ``extract``), so a thread filter takes it too: each value also
matches the conversation the caller holds under that id. Caller ids are scoped per user
(``ConversationStore.find_conversation``), so another user's ids match nothing of theirs.
"""

from __future__ import annotations

from engram.actors import Actor
from engram.models import MemoryFilter
from engram.store.conversations import ConversationStore


def own_threads(flt: MemoryFilter, actor: Actor, conversations: ConversationStore) -> MemoryFilter:
    """``flt`` with each thread value the actor's own id for a conversation also matching
    that conversation's Engram id (the value itself still matches as given)."""
    if not flt.threads:
        return flt
    threads = list(flt.threads)
    for value in flt.threads:
        conv = conversations.find_conversation(actor.user_id, value)
        if conv is not None and conv.id not in threads:
            threads.append(conv.id)
    return flt.model_copy(update={"threads": threads})
