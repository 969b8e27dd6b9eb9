"""/api/v1/soul: the versioned identity every session starts from.

Two meanings of ``environment``, as in :class:`~engram.service.soul.SoulService`: the effective
reads (the view, one block, render) show the Soul *as an environment sees it* (default: your
default environment); everything else addresses one *layer*: omitted, your global Soul; given,
that environment's overrides.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status
from pydantic import BaseModel, Field

from engram.api.deps import ActorDep, EngramDep
from engram.limits import MAX_ENVIRONMENT_REF_CHARS, InputModel
from engram.requests.fields import Reason
from engram.requests.soul import BlockRequest, BlockRestoreRequest, SnapshotRequest
from engram.service.soul import DEFAULT_SOUL_TOKENS
from engram.soul.blocks import BLOCK_NAME_PATTERN
from engram.soul.model import (
    EffectiveBlock,
    RenderedSoul,
    SoulBlock,
    SoulBlockVersion,
    SoulSnapshot,
    SoulUpdate,
    SoulView,
)
from engram.soul.presets import PRESETS, Preset

router = APIRouter(tags=["soul"])

Seen = Annotated[
    str | None,
    Query(description="The environment whose effective Soul to read (default: your default)"),
]
LayerRef = Annotated[
    str | None,
    Query(
        max_length=MAX_ENVIRONMENT_REF_CHARS,
        description="Omit for your global Soul; an environment name or id for its overrides",
    ),
]


class _Body(InputModel):
    """A request body: unknown fields refused, text checked (see InputModel)."""


class SnapshotRestoreIn(_Body):
    reason: Reason = ""


class SoulDiff(BaseModel):
    diff: str = Field(description="A unified diff; empty when nothing differs")


# static paths first, so they are never read as a block name or snapshot id
@router.get("", summary="The effective Soul: global blocks with the environment's overrides")
def view(engram: EngramDep, actor: ActorDep, environment: Seen = None) -> SoulView:
    return engram.soul.view(actor, environment)


@router.get("/render", summary="The Soul as XML within a token budget")
def render(
    engram: EngramDep,
    actor: ActorDep,
    environment: Seen = None,
    max_tokens: Annotated[int, Query(ge=1, le=1_000_000)] = DEFAULT_SOUL_TOKENS,
) -> RenderedSoul:
    return engram.soul.render(actor, environment, max_tokens)


@router.get("/layer", summary="The blocks stored in one layer (not inherited ones)")
def layer(engram: EngramDep, actor: ActorDep, environment: LayerRef = None) -> list[SoulBlock]:
    return engram.soul.layer(actor, environment)


@router.get("/presets", summary="Ready-made personalities for the style blocks")
def presets(engram: EngramDep, actor: ActorDep) -> list[Preset]:
    return engram.soul.presets()


@router.post("/presets/{preset}/apply", summary="Apply a preset (after an automatic snapshot)")
def apply_preset(
    preset: Annotated[str, Path(pattern=f"^({'|'.join(PRESETS)})$", description="A preset's name")],
    engram: EngramDep,
    actor: ActorDep,
    environment: LayerRef = None,
) -> SoulUpdate:
    return engram.soul.apply_preset(preset, actor, environment)


@router.get("/snapshots", summary="One layer's snapshots, oldest first")
def snapshots(
    engram: EngramDep, actor: ActorDep, environment: LayerRef = None
) -> list[SoulSnapshot]:
    return engram.soul.snapshots(actor, environment)


@router.post("/snapshots", status_code=status.HTTP_201_CREATED, summary="Snapshot one layer")
def snapshot(
    body: SnapshotRequest, engram: EngramDep, actor: ActorDep, environment: LayerRef = None
) -> SoulSnapshot:
    return engram.soul.snapshot(actor, environment, body.label)


@router.get("/snapshots/{snapshot_id}", summary="A snapshot and every block it recorded")
def get_snapshot(snapshot_id: str, engram: EngramDep, actor: ActorDep) -> SoulSnapshot:
    return engram.soul.get_snapshot(snapshot_id, actor)


@router.get("/snapshots/{snapshot_id}/diff", summary="A snapshot against now (or another one)")
def diff_snapshot(
    snapshot_id: str,
    engram: EngramDep,
    actor: ActorDep,
    other: Annotated[str | None, Query(description="Another snapshot's id")] = None,
) -> SoulDiff:
    return SoulDiff(diff=engram.soul.diff_snapshot(snapshot_id, actor, other))


@router.post("/snapshots/{snapshot_id}/restore", summary="Return the layer to a snapshot")
def restore_snapshot(
    snapshot_id: str, body: SnapshotRestoreIn, engram: EngramDep, actor: ActorDep
) -> SoulUpdate:
    return engram.soul.restore_snapshot(snapshot_id, actor, body.reason)


@router.get("/blocks/{name}", summary="One block as the environment sees it")
def get_block(
    name: str, engram: EngramDep, actor: ActorDep, environment: Seen = None
) -> EffectiveBlock:
    return engram.soul.get_block(name, actor, environment)


@router.put("/blocks/{name}", summary="Change a block in one layer (a new version)")
def set_block(
    name: Annotated[str, Path(pattern=BLOCK_NAME_PATTERN, description="The block's name")],
    body: BlockRequest,
    engram: EngramDep,
    actor: ActorDep,
    environment: LayerRef = None,
) -> SoulBlock:
    return engram.soul.set_block(
        name,
        actor,
        body.text,
        environment=environment,
        mode=body.mode,
        priority=body.priority,
        enabled=body.enabled,
        section=body.section,
        reason=body.reason,
    )


@router.get("/blocks/{name}/history", summary="Every version of a block in one layer")
def history(
    name: str, engram: EngramDep, actor: ActorDep, environment: LayerRef = None
) -> list[SoulBlockVersion]:
    return engram.soul.history(name, actor, environment)


@router.get("/blocks/{name}/diff", summary="A block between two versions (default: the last two)")
def diff(
    name: str,
    engram: EngramDep,
    actor: ActorDep,
    from_version: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
    to_version: Annotated[int | None, Query(ge=0, le=1_000_000)] = None,
    environment: LayerRef = None,
) -> SoulDiff:
    found = engram.soul.diff(name, actor, from_version, to_version, environment)
    return SoulDiff(diff=found)


@router.post("/blocks/{name}/restore", summary="Bring back a version (after a snapshot)")
def restore_block(
    name: str,
    body: BlockRestoreRequest,
    engram: EngramDep,
    actor: ActorDep,
    environment: LayerRef = None,
) -> SoulBlock:
    return engram.soul.restore_block(name, body.version, actor, environment, body.reason)
