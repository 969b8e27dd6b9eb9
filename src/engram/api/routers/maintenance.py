"""/api/v1/maintenance: run the lifecycle's maintenance over one environment.

One run per environment at a time across every server process on the store; a request made
while one is going gets 409 ("already running").
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field, StrictBool

from engram.api.deps import ActorDep, EngramDep
from engram.lifecycle.report import MaintenanceReport
from engram.limits import InputModel

router = APIRouter(tags=["maintenance"])


class MaintenanceRequest(InputModel):
    environment: str | None = Field(
        default=None, max_length=200, description="Id or name; the default if unset"
    )
    dry_run: StrictBool = Field(
        default=False, description="Report what would change; write nothing"
    )


@router.post("", summary="Merge duplicates, supersede contradictions, flag decay, compact")
def maintain(body: MaintenanceRequest, engram: EngramDep, actor: ActorDep) -> MaintenanceReport:
    return engram.lifecycle.maintain(actor, body.environment, dry_run=body.dry_run)
