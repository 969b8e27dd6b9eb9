"""Candidate indexes (:class:`engram.lifecycle.index.CandidateIndex`) per environment, kept in
step with the store for the lifecycle write path.

An index is current at one reading of :meth:`Store.memory_stamp`. The write path holds
:attr:`FactIndexes.lock` around its lookup, decision and commit, so a write moving the stamp by
exactly one is its own and is applied to the index; any other move (a write by another
process, or by any other path in this one: an edit, a delete, maintenance) drops every index,
and the next lookups use the store's keyword search until the environment is indexed again.
Building an index reads every active fact of the environment, so it is built only after
``max(8, size / 200)`` lookups have gone to the store since the last drop (a one-shot CLI
write never builds one; a server builds it on its first few writes). An index dropped before it
served that many lookups did not repay its build: the next build waits twice as long (up to
:data:`MAX_BACKOFF` times), so that several server processes writing to one store (each write
by one drops the others' indexes) do not spend their time rebuilding; an index that lives long
enough resets the wait.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from engram.lifecycle.index import CandidateIndex
from engram.models import Layer, Memory, MemoryFilter, Status
from engram.store import Change, Store

WARM_LOOKUPS = 8
REBUILD_SHARE = 200
"""An index of n facts is rebuilt after n / REBUILD_SHARE lookups through the store."""
MAX_BACKOFF = 64


@dataclass
class _Env:
    index: CandidateIndex | None = None
    misses: int = 0
    size: int = 0
    served: int = 0
    """Lookups the current index answered."""
    backoff: int = 1

    @property
    def worth(self) -> int:
        """Lookups through the store that a build costs about as much as."""
        return max(WARM_LOOKUPS, self.size // REBUILD_SHARE)


class FactIndexes:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.lock = threading.RLock()
        """Held by the write path from lookup to commit."""
        self._envs: dict[str, _Env] = {}
        self._stamp: int | None = None
        self.builds = 0
        """Indexes built so far."""

    def index(self, env_id: str, lookups: int = 1) -> CandidateIndex | None:
        """The environment's index if it is current (call under :attr:`lock`), building it when
        enough lookups have missed; None: look up through the store. ``lookups``: how many the
        caller is about to make (a batch makes one per fact), so a batch that would send more
        lookups to the store than a build costs builds the index first."""
        stamp = self._store.memory_stamp()
        if stamp != self._stamp:
            self._drop(stamp)
        env = self._envs.setdefault(env_id, _Env())
        if env.index is not None:
            env.served += max(lookups, 1)
            return env.index
        env.misses += max(lookups, 1)
        if env.misses < env.worth * env.backoff:
            return None
        flt = MemoryFilter(environment_ids=[env_id], layers=[Layer.FACT], statuses=[Status.ACTIVE])
        total = self._store.count(flt)
        facts = self._store.list_memories(flt, limit=max(total, 1), order="created_at")
        if self._store.memory_stamp() != stamp:  # written meanwhile: try again later
            return None
        env.index, env.misses, env.size = CandidateIndex(facts), 0, len(facts)
        env.served = max(lookups, 1)
        self.builds += 1
        return env.index

    def committed(self, before: int | None, changes: Sequence[Change]) -> None:
        """After the write path's own commit (under :attr:`lock`): ``before`` is the stamp read
        by its lookup. Apply the changes if the commit was the only write since."""
        after = self._store.memory_stamp()
        if before is None or before != self._stamp or after != before + 1:
            self._drop(after)
            return
        self._stamp = after
        latest: dict[str, Memory] = {c.memory.id: c.memory for c in changes}
        for m in latest.values():
            env = self._envs.get(m.environment_id)
            if env is not None and env.index is not None:
                env.index.put(m)

    def failed(self) -> None:
        """A commit failed: nothing it held may stay in an index."""
        self._drop(None)

    @property
    def stamp(self) -> int | None:
        return self._stamp

    def _drop(self, stamp: int | None) -> None:
        for env in self._envs.values():
            if env.index is not None:
                repaid = env.served >= env.worth
                env.backoff = 1 if repaid else min(2 * env.backoff, MAX_BACKOFF)
                env.index, env.misses = None, 0
        self._stamp = stamp
