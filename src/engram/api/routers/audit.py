"""/api/v1/audit: the log of every mutation, newest first."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engram.accounts import AuditEntry, AuditQuery
from engram.api.deps import ActorDep, EngramDep

router = APIRouter(tags=["audit"])


@router.get("", summary="Audit entries matching the filters (admins: everyone's; else yours)")
def query(
    q: Annotated[AuditQuery, Query()], engram: EngramDep, actor: ActorDep
) -> list[AuditEntry]:
    return engram.audit.query(q, actor)
