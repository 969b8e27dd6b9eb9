"""Group commit, shared by the stores: concurrent writers in one process queue their writes, and
whoever holds the leader lock commits every queued write in one transaction, so throughput
grows with the number of writers (one transaction, one WAL flush or fsync per group). A group
that fails is committed again one write at a time, so a failing write never takes the others
down; each writer gets its own write's error."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from engram.accounts import AuditEntry
from engram.store.idempotency import CURRENT, InFlight
from engram.store.protocol import Change


@dataclass(eq=False)
class WriteJob:
    """One :meth:`Store.write` call waiting for its group."""

    changes: Sequence[Change]
    audit: Sequence[AuditEntry]
    inflight: InFlight | None = field(default_factory=CURRENT.get)
    """The idempotent request that queued it: whoever commits the group marks its key."""
    done: bool = False
    error: Exception | None = None


class GroupCommit:
    """``commit(jobs)`` writes jobs in one transaction (raising if it failed, with nothing of it
    kept); ``alone(job)`` writes one job (default: ``commit([job])``; a store may retry it);
    ``leader()`` is held while a group commits (default: a lock of this process)."""

    def __init__(
        self,
        commit: Callable[[list[WriteJob]], None],
        alone: Callable[[WriteJob], None] | None = None,
        leader: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        lock = threading.Lock()
        self._leader = leader or (lambda: lock)
        self._commit = commit
        self._alone = alone or (lambda job: commit([job]))
        self._queue: list[WriteJob] = []
        self._queue_lock = threading.Lock()

    def write(self, job: WriteJob) -> None:
        """Queue ``job`` and return once it is committed (by this thread or the leader of its
        group); raise its error if it failed."""
        with self._queue_lock:
            self._queue.append(job)
        with self._leader():
            if not job.done:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit_batch(batch)
        if job.error is not None:
            raise job.error

    def _commit_batch(self, batch: list[WriteJob]) -> None:
        try:
            if len(batch) == 1:
                self._alone(batch[0])
            else:
                self._commit(batch)
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
            else:
                for job in batch:  # isolate the failure: each write alone
                    try:
                        self._alone(job)
                    except Exception as single:
                        job.error = single
        for job in batch:
            job.done = True
