"""Candidate indexes (:class:`engram.lifecycle.index.CandidateIndex`) per environment, kept in
step with the store for the lifecycle write path.

An index is current at one reading of :meth:`Store.memory_stamp`. The write path holds
:attr:`FactIndexes.lock` around its lookup, decision and commit, so a write moving the stamp by
exactly one is its own and is applied to the index; any other move (a write by another
process, or by any other path in this one: an edit, a delete, maintenance) drops every index,
and the next lookups use the store's keyword search until the environment is indexed again.
Building an index reads the text of every active fact of the environment
(:meth:`Store.memory_texts`), so it is built only after ``max(8, size / 400)`` lookups have gone
to the store since the last drop (a one-shot CLI write never builds one; a server builds it on
its first few writes). A write with nothing to look up (``lifecycle: false``, episodes) neither
counts toward a build nor waits for one. An index dropped before it served that many lookups did
not repay its build: the next build waits twice as long (up to :data:`MAX_BACKOFF` times), so
that several server processes writing to one store (each write by one drops the others'
indexes) do not spend their time rebuilding; an index that lives long enough resets the wait.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from engram.lifecycle.index import CandidateIndex
from engram.models import Layer, Memory, MemoryFilter, Status
from engram.store import Change, Store

WARM_LOOKUPS = 8
REBUILD_SHARE = 400
"""An index of n facts is rebuilt after n / REBUILD_SHARE lookups through the store: about what
the build costs (reading n texts and their words) in lookups through the store's keyword search,
as measured at 10k and 100k facts."""
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


@contextmanager
def _no_collection() -> Iterator[None]:
    """No cyclic garbage collection while an index is built: it makes a few long-lived objects
    per fact, none of them in a cycle, so the collector's passes over them (about a third of
    the build at 100k facts) would find nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
        lookups to the store than a build costs builds the index first; 0 never builds."""
        stamp = self._store.memory_stamp()
        if stamp != self._stamp:
            self._drop(stamp)
        env = self._envs.setdefault(env_id, _Env())
        if lookups <= 0:
            return env.index
        if env.index is not None:
            env.served += lookups
            return env.index
        env.misses += lookups
        if env.misses < env.worth * env.backoff:
            return None
        flt = MemoryFilter(environment_ids=[env_id], layers=[Layer.FACT], statuses=[Status.ACTIVE])
        with _no_collection():
            facts = self._store.memory_texts(flt)
            if self._store.memory_stamp() != stamp:  # written meanwhile: try again later
                return None
            env.index, env.misses, env.size = CandidateIndex(facts), 0, len(facts)
        env.served = lookups
        self.builds += 1
        return env.index

    def committed(
        self,
        before: int | None,
        changes: Sequence[Change],
        words: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        """After the write path's own commit (under :attr:`lock`): ``before`` is the stamp read
        by its lookup. Apply the changes as if the commit was the only write since, without
        reading the stamp again: the commit moved it by exactly one, so the next :meth:`index`
        reads ``before + 1`` only if no other write came before or after it, and drops every
        index otherwise. ``words``: word sets the write already has, by text."""
        if not changes:  # nothing committed: the stamp did not move
            return
        if before is None or before != self._stamp:
            self._drop(None)
            return
        self._stamp = before + 1
        latest: dict[str, Memory] = {c.memory.id: c.memory for c in changes}
        for m in latest.values():
            env = self._envs.get(m.environment_id)
            if env is not None and env.index is not None:
                env.index.put(m, None if words is None else words.get(m.content))

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
