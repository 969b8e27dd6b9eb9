"""Import and export. Import: upload another product's export (ChatGPT, Claude, Gemini, CSV,
agent transcripts; detected by content), see what it would store and how much is already
there, then commit it through the lifecycle. Export: memories, conversations or the Soul in
each format. Uploads are held in a private temporary directory until committed or replaced,
at most the request body limit (8 MiB)."""

from __future__ import annotations

import logging
import secrets
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from engram.errors import EngramError, InvalidInput, NotFound
from engram.portability.report import ImportPreview, ImportReport
from engram.portability.writers import CONVERSATION_FORMATS, MEMORY_FORMATS
from engram.service.exporting import SOUL_FORMATS
from engram.web.pages import Posted, Signed, Viewer, redirect, render

router = APIRouter()
log = logging.getLogger("engram.web")
KINDS = {"memories": MEMORY_FORMATS, "conversations": CONVERSATION_FORMATS, "soul": SOUL_FORMATS}
MEDIA = {
    "json": ("application/json", "json"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
    "pdf": ("application/pdf", "pdf"),
}


@dataclass(frozen=True)
class Upload:
    user_id: str
    path: Path
    name: str


@dataclass
class Job:
    """An import running in the background: its progress, then its report or its error."""

    user_id: str
    file: str
    done: int = 0
    total: int = 0
    report: ImportReport | None = None
    error: str = ""

    @property
    def finished(self) -> bool:
        return self.report is not None or bool(self.error)


class Uploads:
    """Uploaded files waiting for their commit, one per user (a new upload replaces it)."""

    def __init__(self) -> None:
        self._by_id: dict[str, Upload] = {}
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def job(self, job_id: str, user_id: str) -> Job:
        with self._lock:
            found = self._jobs.get(job_id)
        if found is None or found.user_id != user_id:
            raise NotFound(f"no import {job_id!r}")
        return found

    def start(self, upload_id: str, viewer: Viewer) -> str:
        """Commit an upload in a background thread; returns the job's id."""
        upload = self.get(upload_id, viewer.user.id)
        job_id = secrets.token_urlsafe(12)
        job = Job(viewer.user.id, upload.name)
        with self._lock:
            self._jobs = {k: j for k, j in self._jobs.items() if not j.finished}  # keep few
            self._jobs[job_id] = job

        def progress(done: int, total: int) -> None:
            job.done, job.total = done, total

        def run() -> None:
            imports = viewer.engram.imports
            try:
                bundle = imports.read(upload.path)
                job.report = imports.commit(
                    bundle,
                    viewer.actor,
                    viewer.environment.id,
                    file=upload.name,
                    progress=progress,
                )
            except EngramError as exc:
                job.error = exc.message
            except Exception:  # a failed job answers on its page, not in a log-less thread
                log.exception("import failed")
                job.error = "the import failed unexpectedly; see the server log"
            finally:
                self.done(upload_id)

        threading.Thread(target=run, name=f"engram-import-{job_id}", daemon=True).start()
        return job_id

    def put(self, user_id: str, name: str, data: bytes) -> str:
        folder = Path(tempfile.mkdtemp(prefix="engram-upload-"))  # 0700
        safe = Path(name).name or "upload"
        path = folder / safe
        path.write_bytes(data)
        upload_id = secrets.token_urlsafe(16)
        with self._lock:
            for old in [k for k, u in self._by_id.items() if u.user_id == user_id]:
                self._drop(old)
            self._by_id[upload_id] = Upload(user_id, path, safe)
        return upload_id

    def get(self, upload_id: str, user_id: str) -> Upload:
        with self._lock:
            found = self._by_id.get(upload_id)
        if found is None or found.user_id != user_id:
            raise NotFound("that upload is gone (committed or replaced): upload the file again")
        return found

    def done(self, upload_id: str) -> None:
        with self._lock:
            self._drop(upload_id)

    def _drop(self, upload_id: str) -> None:
        found = self._by_id.pop(upload_id, None)
        if found is not None:
            shutil.rmtree(found.path.parent, ignore_errors=True)


def _uploads(request: Request) -> Uploads:
    uploads: Uploads = request.app.state.web_uploads
    return uploads


def _page(request: Request, viewer: Viewer, status: int = 200, **context: object) -> HTMLResponse:
    return render(request, viewer, "transfer.html", status, kinds=KINDS, **context)


@router.get("/transfer")
def transfer(request: Request, viewer: Signed) -> HTMLResponse:
    return _page(request, viewer)


@router.post("/transfer/import")
async def upload(request: Request, viewer: Posted, file: UploadFile) -> HTMLResponse:
    """Read the upload and show what committing it would store."""
    data = await file.read()
    if not data:
        raise InvalidInput("the file is empty", field="file")
    upload_id = _uploads(request).put(viewer.user.id, file.filename or "upload", data)
    found = _uploads(request).get(upload_id, viewer.user.id)

    def preview() -> ImportPreview:
        bundle = viewer.engram.imports.read(found.path)
        return viewer.engram.imports.preview(
            bundle, viewer.actor, viewer.environment.id, file=found.name
        )

    return _page(request, viewer, preview=await run_in_threadpool(preview), upload_id=upload_id)


@router.post("/transfer/commit")
def commit(
    request: Request, viewer: Posted, upload_id: Annotated[str, Form(max_length=100)]
) -> RedirectResponse:
    """Store the previewed upload in the background (items an earlier import brought are
    skipped); the browser follows its progress."""
    job_id = _uploads(request).start(upload_id, viewer)
    return redirect(f"/transfer/jobs/{job_id}")


@router.get("/transfer/jobs/{job_id}")
def job(request: Request, viewer: Signed, job_id: str) -> HTMLResponse:
    """An import's progress (the page reloads itself each second until it is done), then its
    report."""
    found = _uploads(request).job(job_id, viewer.user.id)
    return _page(request, viewer, job=found)


@router.post("/transfer/export")
def export(
    viewer: Posted,
    what: Annotated[str, Form(max_length=20)],
    fmt: Annotated[str, Form(max_length=20)],
    scope: Annotated[str, Form(max_length=20)] = "environment",
) -> Response:
    """A download of this environment's (or every readable environment's) data."""
    if what not in KINDS or fmt not in KINDS[what]:
        raise InvalidInput(f"{what} exports as {', '.join(KINDS.get(what, ()))}; got {fmt!r}")
    engram, actor = viewer.engram, viewer.actor
    env = viewer.environment.id if scope == "environment" or what == "soul" else None
    if what == "memories":
        data = engram.exports.memories(fmt, actor, env)
    elif what == "conversations":
        data = engram.exports.conversations(fmt, actor, env)
    else:
        data = engram.exports.soul(fmt, actor, env)
    media, suffix = MEDIA[fmt]
    name = f"engram-{what}.{suffix}"
    return Response(
        data, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )
