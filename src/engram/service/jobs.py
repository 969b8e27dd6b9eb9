"""What ``engram serve`` runs beside the API: the embedding indexer and scheduled maintenance.

Maintenance sweeps every environment in the store as its owner, one environment at a time; a
run that another process already holds is skipped (the lifecycle service coordinates runs
through the store), so any number of servers can share one database.
"""

from __future__ import annotations

import logging
import threading

from engram.actors import Actor
from engram.errors import EngramError
from engram.service.engram import Engram

log = logging.getLogger("engram.jobs")


class BackgroundJobs:
    def __init__(self, engram: Engram, maintenance_every_s: float) -> None:
        self._engram = engram
        self._every = maintenance_every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._engram.start_indexer()
        if self._every > 0 and self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="engram-maintenance", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def run_maintenance(self) -> int:
        """One sweep over every environment; returns how many were maintained."""
        done = 0
        for env in self._engram.store.list_environments():
            if self._stop.is_set():
                break
            try:
                report = self._engram.lifecycle.maintain(Actor(env.owner, "scheduler"), env.id)
            except EngramError as exc:  # e.g. already running in another process
                log.info("maintenance skipped", extra={"environment": env.id, "why": exc.message})
                continue
            done += 1
            log.info(
                "maintenance done",
                extra={"environment": env.id, "report": report.model_dump(mode="json")},
            )
        return done

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self.run_maintenance()
            except Exception:  # keep the scheduler alive; the next run retries
                log.exception("maintenance sweep failed")
