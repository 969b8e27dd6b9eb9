"""/api/v1/procedures: named workflows, with success and failure counts."""

from __future__ import annotations

from engram.api.deps import ActorDep, EngramDep
from engram.api.routers._memories import check_layer, memory_router
from engram.api.schemas import NewProcedure
from engram.models import Layer, Memory
from engram.requests.memories import OutcomeRequest

router = memory_router(Layer.PROCEDURE, NewProcedure, "procedures")


@router.post("/{memory_id}/success", summary="Count a successful run")
def success(
    memory_id: str, engram: EngramDep, actor: ActorDep, body: OutcomeRequest | None = None
) -> Memory:
    check_layer(engram, [memory_id], Layer.PROCEDURE, actor)
    return engram.memories.record_outcome(
        memory_id, actor, success=True, note=body.note if body else ""
    )


@router.post("/{memory_id}/failure", summary="Count a failed run")
def failure(
    memory_id: str, engram: EngramDep, actor: ActorDep, body: OutcomeRequest | None = None
) -> Memory:
    check_layer(engram, [memory_id], Layer.PROCEDURE, actor)
    return engram.memories.record_outcome(
        memory_id, actor, success=False, note=body.note if body else ""
    )
