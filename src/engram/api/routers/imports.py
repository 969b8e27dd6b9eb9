"""/api/v1/imports: import jobs. Upload an export (the file as the request body), read its
preview, commit it as a background job, follow it by its status or by Server-Sent Events.

The formats, the preview and the commit are those of ``engram import`` (detected by content;
through scrubbing, extraction and the lifecycle; the import ledger makes a repeat add nothing
and a failed or interrupted job resume when committed again).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Annotated, Any, BinaryIO, cast

from fastapi import APIRouter, Path, Query, Request, status
from fastapi.responses import StreamingResponse
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from engram.api.deps import ActorDep, EngramDep
from engram.errors import InvalidInput
from engram.limits import MAX_IMPORT_BYTES
from engram.portability.report import ImportJob
from engram.portability.tabular import FIELDS, parse_mapping
from engram.service.import_jobs import event_lines

router = APIRouter(tags=["imports"])

_MAP_PATTERN = rf"^[^=]*\S[^=]*=\s*({'|'.join(FIELDS)})\s*$"

JobPath = Annotated[
    str, Path(pattern=r"^imp_[0-9a-z]{26}$", description="An import job's id ('imp_…')")
]

_UPLOAD: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The export itself, as bytes: a zip, a JSON, JSONL, CSV, HTML or text "
        f"file (at most {MAX_IMPORT_BYTES} bytes). Its format is detected by content.",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}
_EVENTS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events: 'progress' while the job runs (data: the job as "
        "JSON, with done and total), then one 'done' (with the report) or 'failed' (with the "
        "error), and the stream ends. A ': keep-alive' comment every 15 s without change.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    summary="Upload an export: the job with its preview (nothing stored yet)",
    openapi_extra=_UPLOAD,
)
async def upload(
    request: Request,
    engram: EngramDep,
    actor: ActorDep,
    filename: Annotated[
        str, Query(max_length=255, description="The file's name, as shown in the job")
    ] = "upload",
    environment: Annotated[
        str | None, Query(max_length=200, description="Target environment (default: yours)")
    ] = None,
    map_: Annotated[
        list[Annotated[str, Field(pattern=_MAP_PATTERN, max_length=300)]] | None,
        Query(
            alias="map",
            max_length=50,
            description="CSV: COLUMN=FIELD (content, layer, category, importance, confidence, "
            "tags, created_at, environment). Repeatable.",
        ),
    ] = None,
) -> ImportJob:
    csv_map = parse_mapping(map_ or [])
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_IMPORT_BYTES:
                raise InvalidInput(f"{filename}: the upload is over {MAX_IMPORT_BYTES} bytes")
            spool.write(chunk)
        spool.seek(0)
        return await run_in_threadpool(
            engram.import_jobs.upload,
            filename,
            cast(BinaryIO, spool),
            actor,
            environment,
            csv_map=csv_map,
        )


@router.get("", summary="Your import jobs, newest first")
def list_(engram: EngramDep, actor: ActorDep) -> list[ImportJob]:
    return engram.import_jobs.list(actor)


@router.get("/{job_id}", summary="An import job: its state, progress, preview and report")
def get(job_id: JobPath, engram: EngramDep, actor: ActorDep) -> ImportJob:
    return engram.import_jobs.get(job_id, actor)


@router.post(
    "/{job_id}/commit",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Store the upload in the background (a failed or interrupted job resumes)",
)
def commit(job_id: JobPath, engram: EngramDep, actor: ActorDep) -> ImportJob:
    return engram.import_jobs.commit(job_id, actor)


@router.get(
    "/{job_id}/events",
    summary="The job's progress as Server-Sent Events, until it is done or failed",
    response_class=StreamingResponse,
    responses=_EVENTS,
)
def events(job_id: JobPath, engram: EngramDep, actor: ActorDep) -> StreamingResponse:
    updates = engram.import_jobs.follow(job_id, actor)
    first = next(updates)  # an unknown job is a 404 here, before the stream starts

    def lines() -> Iterator[str]:
        yield event_lines(first)
        for job in updates:
            yield event_lines(job)

    return StreamingResponse(
        lines(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.delete("/{job_id}", summary="Remove a job and its uploaded file (not what it imported)")
def delete(job_id: JobPath, engram: EngramDep, actor: ActorDep) -> ImportJob:
    return engram.import_jobs.delete(job_id, actor)
