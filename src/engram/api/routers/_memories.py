"""The routes every memory layer shares; ``facts``, ``episodes`` and ``procedures`` each build
their router from here (procedures add their outcome routes).

No ``from __future__ import annotations`` here: the request body type is the layer's input model,
a closure variable FastAPI must see as a real object when it reads the signatures.
"""

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Body, Query, status

from engram.accounts import Role
from engram.actors import Actor
from engram.api.deps import ActorDep, EngramDep
from engram.api.schemas import BulkPatch, IdsBody, MemoryQuery, Purged
from engram.errors import NotFound
from engram.lifecycle.report import StoredMemory
from engram.limits import MAX_BULK, MAX_ENVIRONMENT_REF_CHARS, MAX_REASON_CHARS
from engram.models import Layer, Memory, MemoryPatch, MemoryVersion, NewMemory, Page
from engram.requests.memories import RestoreRequest
from engram.service import Engram

EnvQuery = Annotated[
    str | None,
    Query(
        max_length=MAX_ENVIRONMENT_REF_CHARS,
        description="Environment name or id (default: your default environment); one shared "
        "with you by 'owner/name' or its id to write to it",
    ),
]
Reason = Annotated[
    str, Query(max_length=MAX_REASON_CHARS, description="Why: kept in the version history")
]


def check_layer(
    engram: Engram, ids: Sequence[str], layer: Layer, actor: Actor, need: Role = Role.WRITER
) -> None:
    """A memory of another layer is not found under this layer's path."""
    for memory_id in ids:
        found = engram.memories.get(memory_id, actor, need).layer
        if found is not layer:
            raise NotFound(
                f"memory {memory_id!r} is a {found.value}, not a {layer.value} "
                f"(it is at /api/v1/{found.value}s/{memory_id})",
                memory_id=memory_id,
            )


def memory_router(layer: Layer, new_model: type[NewMemory], tag: str) -> APIRouter:
    """CRUD, bulk, listing with filters, history, restore and purge for one layer."""
    router = APIRouter(tags=[tag])
    noun = layer.value

    # static paths first, so '/bulk' is never read as a memory id
    @router.post("/bulk", status_code=status.HTTP_201_CREATED, summary=f"Create many {noun}s")
    def bulk_create(
        items: Annotated[list[new_model], Body(max_length=MAX_BULK)],  # type: ignore[valid-type]
        engram: EngramDep,
        actor: ActorDep,
        environment: EnvQuery = None,
    ) -> list[StoredMemory]:
        """One transaction: all stored or none. Facts go through dedup and contradiction
        (each item's `outcome` says what happened; a later item sees the earlier ones) unless
        an item sets `"lifecycle": false`."""
        return [o.stored() for o in engram.lifecycle.remember_many(items, actor, environment)]

    @router.patch("/bulk", summary=f"Edit many {noun}s atomically")
    def bulk_update(body: BulkPatch, engram: EngramDep, actor: ActorDep) -> list[Memory]:
        check_layer(engram, [i.id for i in body.items], layer, actor)
        pairs = [(i.id, i.patch) for i in body.items]
        return engram.memories.update_many(pairs, actor, body.reason)

    @router.post("/bulk-delete", summary=f"Soft-delete many {noun}s")
    def bulk_delete(body: IdsBody, engram: EngramDep, actor: ActorDep) -> list[Memory]:
        check_layer(engram, body.ids, layer, actor)
        return engram.memories.delete_many(body.ids, actor, body.reason)

    @router.post("/purge", summary=f"Remove {noun}s for good (environment owners only)")
    def purge(body: IdsBody, engram: EngramDep, actor: ActorDep) -> Purged:
        check_layer(engram, body.ids, layer, actor)
        return Purged(purged=engram.memories.purge(body.ids, actor))

    @router.post("", status_code=status.HTTP_201_CREATED, summary=f"Create a {noun}")
    def create(
        body: new_model,  # type: ignore[valid-type]
        engram: EngramDep,
        actor: ActorDep,
        environment: EnvQuery = None,
    ) -> StoredMemory:
        """A fact goes through dedup and contradiction unless the body sets
        `"lifecycle": false`: the answer is the memory that now holds it (for a merge, the
        existing fact that absorbed it) with `outcome`: created, merged, superseded or
        queued."""
        return engram.lifecycle.remember(body, actor, environment).stored()

    @router.get("", summary=f"List {noun}s with filters")
    def list_(query: Annotated[MemoryQuery, Query()], engram: EngramDep, actor: ActorDep) -> Page:
        return engram.memories.list_memories(
            actor,
            query.to_filter(layer),
            environment=query.environment,
            limit=query.limit,
            offset=query.offset,
            order=query.order,
        )

    @router.get("/{memory_id}", summary=f"Get a {noun}")
    def get(memory_id: str, engram: EngramDep, actor: ActorDep) -> Memory:
        check_layer(engram, [memory_id], layer, actor, Role.READER)
        return engram.memories.get(memory_id, actor)

    @router.patch(
        "/{memory_id}",
        summary=f"Edit a {noun} (a new version)",
        description="Only the fields given change; an edit that changes nothing (no fields, "
        "or the values it already has) writes no version and returns the memory as it is.",
    )
    def update(
        memory_id: str, patch: MemoryPatch, engram: EngramDep, actor: ActorDep, reason: Reason = ""
    ) -> Memory:
        check_layer(engram, [memory_id], layer, actor)
        return engram.memories.update(memory_id, patch, actor, reason)

    @router.delete("/{memory_id}", summary=f"Soft-delete a {noun} (restorable)")
    def delete(memory_id: str, engram: EngramDep, actor: ActorDep, reason: Reason = "") -> Memory:
        check_layer(engram, [memory_id], layer, actor)
        return engram.memories.delete(memory_id, actor, reason)

    @router.get("/{memory_id}/history", summary="Every version, oldest first")
    def history(memory_id: str, engram: EngramDep, actor: ActorDep) -> list[MemoryVersion]:
        check_layer(engram, [memory_id], layer, actor, Role.READER)
        return engram.memories.history(memory_id, actor)

    @router.post("/{memory_id}/restore", summary="Undelete, or bring back a version")
    def restore(memory_id: str, body: RestoreRequest, engram: EngramDep, actor: ActorDep) -> Memory:
        check_layer(engram, [memory_id], layer, actor)
        return engram.memories.restore(memory_id, actor, body.version, body.reason)

    return router
