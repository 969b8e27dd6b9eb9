"""Messages whose facts newer facts superseded: which, and the current fact of each.

A delivered message stays evidence of what was said after a fact read from it is superseded
(the user may always find it); context assembly (``service.context``) packs it as any other,
its line ending with a mark that names the current fact. The superseded facts read from the
messages packing reads together are found in one store read (``Store.superseded_from``), the
facts that replaced them in one read per step of their chains. A chain that reaches no active
fact (its end deleted or archived) marks nothing, nor does a current fact read from the same
message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from engram.extraction.turns import message_id_of, source_ids
from engram.models import Memory, Status
from engram.retrieval.models import ContextItem
from engram.store import Store

CHAIN = 32
"""Replacements followed at most from a superseded fact to the current one."""
MARK = " [superseded on "
"""How the mark on a message whose fact was superseded starts: it ends its line,
``(2023-05-08) Caroline: I live in Porto now. [superseded on 2023-09-02 by: Caroline moved to
Lisbon.]``, and its context item's ``superseded`` lists each."""
QUOTED = 120
"""How much of the current fact a mark quotes."""


class Replaced(NamedTuple):
    """A fact read from a message that a newer fact superseded."""

    fact: str
    """The superseded fact's id."""
    current: Memory
    """The active fact at the end of its replacements."""
    quote: str
    """Its content, whitespace collapsed, cut at ``QUOTED`` characters."""


class SupersededFacts:
    """The facts read from the messages of one assembly that newer ones superseded."""

    def __init__(self, store: Store, environment_id: str) -> None:
        self._store = store
        self._env = environment_id
        self._known: dict[str, Memory] = {}
        self._replaced: dict[str, list[Replaced]] = {}

    def read(self, memories: Sequence[Memory]) -> None:
        """Work out what replaced the facts of the messages among ``memories``."""
        todo = {
            m.id: own
            for m in memories
            if (own := message_id_of(m)) is not None and m.id not in self._replaced
        }
        if not todo:
            return
        threads = [m.thread for m in memories if m.id in todo and m.thread]
        facts = self._store.superseded_from(self._env, threads, list(todo.values()))
        read_from: dict[str, list[Memory]] = {}
        for fact in facts:
            self._known[fact.id] = fact
            for source in source_ids(fact):
                read_from.setdefault(source, []).append(fact)
        ends = self._ends(facts)
        for memory_id, own in todo.items():
            replaced: dict[str, Replaced] = {}
            for fact in read_from.get(own, []):
                end = ends.get(fact.id)
                if end is not None and end.id not in replaced and own not in source_ids(end):
                    replaced[end.id] = Replaced(fact.id, end, _quoted(end.content))
            self._replaced[memory_id] = sorted(
                replaced.values(), key=lambda r: (r.current.created_at, r.fact)
            )

    def of(self, memory: Memory) -> list[Replaced]:
        """The facts read from ``memory`` (once :meth:`read`) that newer ones replaced."""
        return self._replaced.get(memory.id, [])

    def _ends(self, facts: Sequence[Memory]) -> dict[str, Memory]:
        """The active fact at the end of each one's replacements (those that reach one within
        ``CHAIN`` steps), each step one read of the memories not read yet."""
        at = {f.id: f.superseded_by for f in facts if f.superseded_by}
        ends: dict[str, Memory] = {}
        for _ in range(CHAIN):
            wanted = [i for i in dict.fromkeys(at.values()) if i not in self._known]
            if wanted:
                self._known.update((m.id, m) for m in self._store.get(wanted))
            moving: dict[str, str] = {}
            for fact_id, step in at.items():
                memory = self._known.get(step)
                if memory is None or memory.environment_id != self._env:
                    continue
                if memory.status is Status.ACTIVE:
                    ends[fact_id] = memory
                following = memory.superseded_by or memory.merged_into
                if memory.status in (Status.SUPERSEDED, Status.MERGED) and following:
                    moving[fact_id] = following
            if not moving:
                break
            at = moving
        return ends


def _quoted(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"


def compact_line(item: ContextItem, chars: int) -> str:
    """A packed item's line without its bullet, in at most ``chars`` characters: a long one
    is cut before its supersession mark, which it keeps."""
    text = item.text.removeprefix("- ")
    if len(text) <= chars:
        return text
    at = text.rfind(MARK) if item.superseded else -1
    room = chars - (len(text) - at) - 1
    if at < 0 or room <= 0:
        return text[:chars]
    return text[:room] + "…" + text[at:]
