"""/api/v1/context: the system-prompt block for a query (the Soul first, then memories). The
body is :class:`engram.requests.retrieval.ContextRequest`, the model of the MCP tools
``get_context`` and ``preview_context``."""

from __future__ import annotations

from fastapi import APIRouter

from engram.api.deps import ActorDep, EngramDep
from engram.requests.retrieval import ContextRequest
from engram.retrieval.models import AssembledContext

router = APIRouter(tags=["context"])


@router.post("/assemble", summary="Assemble the context block (counts as an access)")
def assemble(body: ContextRequest, engram: EngramDep, actor: ActorDep) -> AssembledContext:
    return engram.context.assemble(actor, body.query, **body.options())


@router.post("/preview", summary="What would be assembled, without counting accesses")
def preview(body: ContextRequest, engram: EngramDep, actor: ActorDep) -> AssembledContext:
    return engram.context.assemble(actor, body.query, **body.options(), preview=True)
