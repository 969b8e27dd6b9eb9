"""The Soul: each block's effective text, priority and source in this environment; edits in
the global layer or as this environment's override; presets; snapshots with a diff and
restore. The Soul is each user's own, so anyone signed in may edit theirs."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.soul.model import OverrideMode
from engram.web.pages import Posted, Signed, Viewer, redirect, render

router = APIRouter()
Layer = Literal["global", "environment"]


def _env(viewer: Viewer, layer: Layer) -> str | None:
    return viewer.environment.id if layer == "environment" else None


@router.get("/soul")
def soul(
    request: Request,
    viewer: Signed,
    layer: Layer = "global",
    diff: Annotated[str, Query(max_length=100)] = "",
    note: Annotated[str, Query(max_length=100)] = "",
) -> HTMLResponse:
    engram, actor = viewer.engram, viewer.actor
    env = _env(viewer, layer)
    stored = {b.name: b for b in engram.soul.layer(actor, env)}
    return render(
        request,
        viewer,
        "soul.html",
        view=engram.soul.view(actor, viewer.environment.id),
        stored=stored,
        layer=layer,
        snapshots=list(reversed(engram.soul.snapshots(actor, env))),
        presets=engram.soul.presets(),
        diff_of=diff,
        diff=engram.soul.diff_snapshot(diff, actor) if diff else "",
        modes=[m.value for m in OverrideMode],
        note=note,
    )


@router.post("/soul/blocks/{name}")
def edit_block(
    viewer: Posted,
    name: str,
    text: Annotated[str, Form()] = "",
    priority: Annotated[int | None, Form(ge=0, le=1000)] = None,
    enabled: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "",
    layer: Annotated[Layer, Form()] = "global",
) -> RedirectResponse:
    viewer.engram.soul.set_block(
        name,
        viewer.actor,
        text,
        environment=_env(viewer, layer),
        mode=mode or None,
        priority=priority,
        enabled=enabled == "on",
        reason="edited in the dashboard",
    )
    return redirect("/soul", layer=layer, note=f"saved {name}")


@router.post("/soul/snapshots")
def take_snapshot(
    viewer: Posted,
    label: Annotated[str, Form(max_length=200)] = "",
    layer: Annotated[Layer, Form()] = "global",
) -> RedirectResponse:
    viewer.engram.soul.snapshot(viewer.actor, _env(viewer, layer), label)
    return redirect("/soul", layer=layer, note="snapshot taken")


@router.post("/soul/snapshots/{snapshot_id}/restore")
def restore_snapshot(
    viewer: Posted, snapshot_id: str, layer: Annotated[Layer, Form()] = "global"
) -> RedirectResponse:
    """Every block back to the snapshot (the state just before is snapshotted first)."""
    update = viewer.engram.soul.restore_snapshot(snapshot_id, viewer.actor)
    return redirect("/soul", layer=layer, note=f"restored {len(update.changed)} block(s)")


@router.post("/soul/presets/{preset}")
def apply_preset(
    viewer: Posted, preset: str, layer: Annotated[Layer, Form()] = "global"
) -> RedirectResponse:
    viewer.engram.soul.apply_preset(preset, viewer.actor, _env(viewer, layer))
    return redirect("/soul", layer=layer, note=f"applied {preset}")
