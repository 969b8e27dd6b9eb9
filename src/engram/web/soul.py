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
    text: Annotated[str | None, Form()] = None,
    shown: Annotated[str | None, Form()] = None,
    priority: Annotated[int | None, Form(ge=0, le=1000)] = None,
    enabled: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "",
    layer: Annotated[Layer, Form()] = "global",
) -> RedirectResponse:
    """Save one block's form. In an environment only what the form changed is written: the
    text the form showed left as it was with mode ``inherit`` keeps the inherited text (never
    an empty ``replace``), and a priority or switch equal to the effective one stays
    inherited."""
    engram, actor = viewer.engram, viewer.actor
    env = _env(viewer, layer)
    on = enabled == "on"
    if env is not None:
        effective = engram.soul.get_block(name, actor, env)
        mode, text = _override(mode, text, shown, effective.text)
        priority = None if priority == effective.priority else priority
        switched: bool | None = None if on == effective.enabled else on
    else:
        switched = on
    engram.soul.set_block(
        name,
        actor,
        text,
        environment=env,
        mode=mode or None,
        priority=priority,
        enabled=switched,
        reason="edited in the dashboard",
    )
    return redirect("/soul", layer=layer, note=f"saved {name}")


def _override(
    mode: str, text: str | None, shown: str | None, inherited: str
) -> tuple[str, str | None]:
    """The mode and text an environment's form asks for, given the text it showed and the
    effective text. ``inherit`` with the text shown means "keep the inherited text" (no text is
    sent), and a text edited under ``inherit`` replaces it, as the page says; ``extend`` of
    the inherited text shown keeps only what was added to it."""
    if text is None:
        return mode, None
    text, before = _lines(text), _lines(shown or "")
    if mode == OverrideMode.INHERIT.value:
        if shown is not None and text != before:
            return OverrideMode.REPLACE.value, text
        return mode, None
    extends_shown = mode == OverrideMode.EXTEND.value and before == _lines(inherited)
    if extends_shown and before and text.startswith(before):
        return mode, text[len(before) :]
    return mode, text


def _lines(text: str) -> str:
    """A form's text as stored: browsers send line breaks as CRLF."""
    return text.replace("\r\n", "\n").strip()


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
