"""The import-job calls of the SDK (``client.imports``): upload an export, read the job and
its preview, commit it, follow it by polling :meth:`ImportCalls.get` (the server also streams
it as Server-Sent Events at ``/api/v1/imports/{id}/events``)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from engram.portability.report import ImportJob
from engram.sdk._calls import Call, seg

_BASE = "/api/v1/imports"


class ImportCalls:
    def upload(
        self,
        data: bytes,
        filename: str = "upload",
        environment: str | None = None,
        csv_map: Mapping[str, str] | None = None,
    ) -> Call[ImportJob]:
        """A new job for the export ``data`` (its bytes), with its preview; nothing stored."""
        params: dict[str, object] = {"filename": filename}
        if environment is not None:
            params["environment"] = environment
        if csv_map:
            params["map"] = [f"{k}={v}" for k, v in csv_map.items()]
        return Call("POST", _BASE, ImportJob, params, content=data)

    def get(self, job_id: str) -> Call[ImportJob]:
        return Call("GET", f"{_BASE}/{seg(job_id)}", ImportJob)

    def list(self) -> Call[builtins.list[ImportJob]]:
        return Call("GET", _BASE, builtins.list[ImportJob])

    def commit(self, job_id: str) -> Call[ImportJob]:
        """Start storing the job's file (a failed or interrupted job resumes)."""
        return Call("POST", f"{_BASE}/{seg(job_id)}/commit", ImportJob)

    def delete(self, job_id: str) -> Call[ImportJob]:
        return Call("DELETE", f"{_BASE}/{seg(job_id)}", ImportJob)
