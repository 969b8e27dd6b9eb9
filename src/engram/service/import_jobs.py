"""Import jobs, as the REST API runs them: upload a file, see its preview, commit it in the
background, follow its progress (a status and a stream of updates).

A job is a folder under the jobs root (``<home>/imports/<job id>/``) holding the uploaded file
and ``job.json`` (its state, the preview's sample scrubbed), so a job outlives the server
process; once done, the upload is removed. The commit is
:meth:`ImportService.commit`, exactly as ``engram import`` runs it: every item's key goes into
the import ledger once stored, so a job that failed or was cut off by a restart can be
committed again and resumes where it stopped, adding nothing twice.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import BinaryIO

from engram.accounts import Scope
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import Conflict, EngramError, InvalidInput, NotFound
from engram.ids import new_id
from engram.portability.reading import DEFAULT_LIMITS, Limits
from engram.portability.report import ImportJob, JobState
from engram.private_files import DIR_MODE, open_private, private_dir, write_private
from engram.service.environments import require_scope
from engram.service.portability import ImportService

JOB_PREFIX = "imp_"
_JOB_ID = re.compile(r"imp_[0-9a-z]{26}")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_SAVE_EVERY = 0.5
"""Seconds between two writes of a running job's progress to its ``job.json``."""


class ImportJobs:
    def __init__(
        self,
        imports: ImportService,
        clock: Clock,
        root: Path | None = None,
    ) -> None:
        self._imports = imports
        self._clock = clock
        self._root = root or Path(tempfile.mkdtemp(prefix="engram-imports-"))
        self._lock = threading.Condition()
        self._jobs: dict[str, ImportJob] = {}
        self._threads: dict[str, threading.Thread] = {}

    @property
    def root(self) -> Path:
        """The folder of the jobs (one sub-folder each: the upload and ``job.json``)."""
        return self._root

    # -- upload and preview --------------------------------------------------------------------
    def upload(
        self,
        filename: str,
        data: BinaryIO,
        actor: Actor,
        environment: str | None = None,
        *,
        csv_map: Mapping[str, str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> ImportJob:
        """Keep ``data`` as a new job's file and read it; answer the job with its preview.
        A file that is no known export, or a hostile one, is refused and nothing is kept."""
        name = _SAFE_NAME.sub("_", Path(filename or "upload").name).strip("._") or "upload"
        job_id = new_id(JOB_PREFIX)
        folder = self._root / job_id
        private_dir(self._root)
        folder.mkdir(mode=DIR_MODE)
        try:
            path = folder / name
            with open_private(path) as out:
                shutil.copyfileobj(data, out, 1 << 20)
            if path.stat().st_size == 0:
                raise InvalidInput(f"{name}: the upload is empty", file=name)
            with _named(path, name):
                bundle = self._imports.read(path, csv_map=csv_map, limits=limits)
            preview = self._imports.preview(bundle, actor, environment, file=name)  # scrubbed
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        now = self._clock()
        job = ImportJob(
            id=job_id,
            file=name,
            environment=preview.environment,
            state=JobState.PREVIEWED,
            created_at=now,
            updated_at=now,
            total=sum(s.memories + s.messages for s in preview.sources),
            preview=preview,
            csv_map=dict(csv_map or {}),
            user_id=actor.user_id,
        )
        self._save(job)
        return job

    # -- commit --------------------------------------------------------------------------------
    def commit(self, job_id: str, actor: Actor) -> ImportJob:
        """Start storing the job's file in the background; answer at once (state running).
        A job that failed (or was cut off) resumes; a running or finished one is refused."""
        require_scope(actor, Scope.WRITE)
        with self._lock:
            job = self._get(job_id, actor)
            self._imports.target(job.environment, actor)  # refused now, not in the background
            if job.state is JobState.RUNNING:
                raise Conflict(f"import job {job_id} is already running")
            if job.state is JobState.DONE:
                raise Conflict(f"import job {job_id} is done; upload the file again to re-import")
            job = self._update(job, state=JobState.RUNNING, error=None, done=0)
            thread = threading.Thread(
                target=self._run, args=(job, actor), name=f"import {job_id}", daemon=True
            )
            self._threads[job_id] = thread
        thread.start()
        return job

    def _run(self, job: ImportJob, actor: Actor) -> None:
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            with self._lock:
                current = self._jobs[job.id].model_copy(update={"done": done, "total": total})
                self._jobs[job.id] = current
                self._lock.notify_all()
                if now - last >= _SAVE_EVERY:
                    last = now
                    self._save(current)

        try:
            path = self._root / job.id / job.file
            with _named(path, job.file):
                bundle = self._imports.read(path, csv_map=job.csv_map)
            report = self._imports.commit(
                bundle, actor, job.environment, file=job.file, progress=progress
            )
        except EngramError as exc:
            self._finish(job.id, state=JobState.FAILED, error=exc.message)
        except Exception as exc:  # a job records why it stopped
            self._finish(job.id, state=JobState.FAILED, error=f"{type(exc).__name__}: {exc}")
        else:
            # done: the raw upload (unscrubbed text) is not kept; the job and its report stay
            (self._root / job.id / job.file).unlink(missing_ok=True)
            self._finish(job.id, state=JobState.DONE, report=report)

    def _finish(self, job_id: str, **changes: object) -> None:
        with self._lock:
            job = self._jobs[job_id]
            if changes["state"] is JobState.DONE:
                changes["done"] = job.total
            self._update(job, **changes)
            self._threads.pop(job_id, None)

    # -- reading -------------------------------------------------------------------------------
    def get(self, job_id: str, actor: Actor) -> ImportJob:
        require_scope(actor, Scope.READ)
        with self._lock:
            return self._get(job_id, actor)

    def list(self, actor: Actor) -> list[ImportJob]:
        """The caller's jobs, newest first."""
        require_scope(actor, Scope.READ)
        if not self._root.is_dir():
            return []
        ids = sorted(p.name for p in self._root.iterdir() if _JOB_ID.fullmatch(p.name))
        out = []
        with self._lock:
            for job_id in reversed(ids):
                job = self._load(job_id)
                if job is not None and job.user_id == actor.user_id:
                    out.append(job)
        return out

    def follow(
        self, job_id: str, actor: Actor, *, heartbeat: float = 15.0
    ) -> Iterator[ImportJob | None]:
        """The job now, then again each time it changes, until it is no longer running; None
        when ``heartbeat`` seconds pass without a change (so a stream can keep alive)."""
        require_scope(actor, Scope.READ)
        with self._lock:
            job = self._get(job_id, actor)
        yield job
        while job.state is JobState.RUNNING:
            with self._lock:
                changed = self._lock.wait_for(partial(self._changed, job), heartbeat)
                current = self._jobs[job_id]
            if not changed:
                yield None
                continue
            job = current
            yield job

    def _changed(self, seen: ImportJob) -> bool:
        return self._jobs[seen.id] != seen

    def delete(self, job_id: str, actor: Actor) -> ImportJob:
        """Remove a job and its uploaded file (not what it imported). A running job is
        refused."""
        require_scope(actor, Scope.WRITE)
        with self._lock:
            job = self._get(job_id, actor)
            if job.state is JobState.RUNNING:
                raise Conflict(f"import job {job_id} is running; wait for it to finish")
            shutil.rmtree(self._root / job_id, ignore_errors=True)
            self._jobs.pop(job_id, None)
        return job

    def forget_user(self, user_id: str) -> int:
        """Remove every job of ``user_id`` and its uploaded file (an account purge); return how
        many. A running job is stopped from being found again, its upload removed."""
        removed = 0
        with self._lock:
            for job in self.list(Actor(user_id, "local")):  # every scope: the purge's own
                shutil.rmtree(self._root / job.id, ignore_errors=True)
                self._jobs.pop(job.id, None)
                removed += 1
        return removed

    def wait(self, job_id: str, timeout: float | None = None) -> None:
        """Block until the job's background commit (if any) ends: for tests and shutdown."""
        thread = self._threads.get(job_id)
        if thread is not None:
            thread.join(timeout)

    # -- state ---------------------------------------------------------------------------------
    def _get(self, job_id: str, actor: Actor) -> ImportJob:
        job = self._load(job_id) if _JOB_ID.fullmatch(job_id) else None
        if job is None or job.user_id != actor.user_id:
            raise NotFound(f"no import job {job_id}")
        return job

    def _load(self, job_id: str) -> ImportJob | None:
        job = self._jobs.get(job_id)
        if job is not None:
            return job
        path = self._root / job_id / "job.json"
        if not path.is_file():
            return None
        job = ImportJob.model_validate_json(path.read_bytes())
        if job.state is JobState.RUNNING and job_id not in self._threads:
            # its process stopped while it ran: what it stored is in the ledger
            job = job.model_copy(
                update={"state": JobState.FAILED, "error": "interrupted; commit again to resume"}
            )
        self._jobs[job_id] = job
        return job

    def _update(self, job: ImportJob, **changes: object) -> ImportJob:
        job = job.model_copy(update={**changes, "updated_at": self._clock()})
        self._save(job)
        return job

    def _save(self, job: ImportJob) -> None:
        self._jobs[job.id] = job
        folder = self._root / job.id
        tmp = folder / "job.json.tmp"
        write_private(tmp, job.model_dump_json(indent=1))
        tmp.replace(folder / "job.json")
        with self._lock:
            self._lock.notify_all()


@contextmanager
def _named(path: Path, name: str) -> Iterator[None]:
    """Errors about the kept upload name the file as the user sent it, never the server's
    folder."""
    try:
        yield
    except EngramError as exc:
        where = str(path)
        details = {
            k: v.replace(where, name) if isinstance(v, str) else v for k, v in exc.details.items()
        }
        raise type(exc)(exc.message.replace(where, name), **details) from None


def event_lines(job: ImportJob | None) -> str:
    """One Server-Sent Event: ``progress`` while running, then ``done`` or ``failed`` (the job
    as JSON in ``data``); a comment line as a heartbeat."""
    if job is None:
        return ": keep-alive\n\n"
    kind = {JobState.DONE: "done", JobState.FAILED: "failed"}.get(job.state, "progress")
    data = json.dumps(job.model_dump(mode="json", exclude={"preview"}), sort_keys=True)
    return f"event: {kind}\nid: {job.id}:{job.done}\ndata: {data}\n\n"
