"""One memory: edit it, its version timeline with a diff between any two versions, restore,
delete, purge (typing its id to confirm), and its lifecycle links with undo."""

from __future__ import annotations

import difflib
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.accounts import Role
from engram.errors import InvalidInput, NotFound
from engram.models import Memory, MemoryPatch, MemoryVersion
from engram.web.pages import Posted, Signed, build, redirect, render, tags_of

router = APIRouter()


def lines(memory: Memory) -> list[str]:
    """A version as diffable lines: its attributes, a blank line, its content."""
    return [
        f"status: {memory.status.value}",
        f"category: {memory.category}",
        f"tags: {', '.join(memory.tags)}",
        f"importance: {memory.importance:g}",
        f"confidence: {memory.confidence:g}",
        f"pinned: {str(memory.pinned).lower()}",
        "",
        *memory.content.splitlines(),
    ]


def diff(versions: list[MemoryVersion], a: int, b: int) -> list[tuple[str, str]]:
    """The unified diff from version ``a`` to ``b`` as (kind, line): kind is ``add``, ``del``,
    ``hunk`` or ``same``."""
    by = {v.version: v.snapshot for v in versions}
    for v in (a, b):
        if v not in by:
            raise NotFound(f"this memory has no version {v} (it has 1-{max(by)})", version=v)
    out = []
    for line in difflib.unified_diff(lines(by[a]), lines(by[b]), f"v{a}", f"v{b}", lineterm=""):
        if line.startswith(("+++", "---")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        out.append((kind, line))
    return out


@router.get("/memories/{memory_id}")
def show(
    request: Request,
    viewer: Signed,
    memory_id: str,
    a: Annotated[int | None, Query(ge=1)] = None,
    b: Annotated[int | None, Query(ge=1)] = None,
    note: Annotated[str, Query(max_length=100)] = "",
) -> HTMLResponse:
    engram = viewer.engram
    memory = engram.memories.get(memory_id, viewer.actor)
    versions = engram.memories.history(memory_id, viewer.actor)
    env = engram.environments.visible(memory.environment_id, viewer.actor)
    role = None if env is None else engram.environments.role_of(env, viewer.actor)
    latest = versions[-1].version if versions else memory.version
    to_v = b or latest
    from_v = a or max(1, to_v - 1)
    return render(
        request,
        viewer,
        "memory.html",
        memory=memory,
        versions=list(reversed(versions)),
        a=from_v,
        b=to_v,
        changes=diff(versions, from_v, to_v) if versions else [],
        note=note,
        writable=role is not None and role.allows(Role.WRITER) and viewer.can_write,
        owner=role is Role.OWNER,
    )


@router.post("/memories/{memory_id}/edit")
def edit(
    viewer: Posted,
    memory_id: str,
    content: Annotated[str, Form()],
    category: Annotated[str, Form()],
    tags: Annotated[str, Form()] = "",
    importance: Annotated[float, Form()] = 0.5,
    confidence: Annotated[float, Form()] = 0.8,
    pinned: Annotated[str, Form()] = "",
    reason: Annotated[str, Form(max_length=500)] = "",
) -> RedirectResponse:
    current = viewer.engram.memories.get(memory_id, viewer.actor, Role.WRITER)
    wanted = {
        "content": content,
        "category": category,
        "tags": tags_of(tags),
        "importance": importance,
        "confidence": confidence,
        "pinned": pinned == "on",
    }
    changed = {k: v for k, v in wanted.items() if getattr(current, k) != v}
    if not changed:
        return redirect(f"/memories/{memory_id}", note="nothing changed")
    patch = build(MemoryPatch, **changed)
    viewer.engram.memories.update(memory_id, patch, viewer.actor, reason)
    return redirect(f"/memories/{memory_id}", note="saved")


@router.post("/memories/{memory_id}/restore")
def restore(
    viewer: Posted, memory_id: str, version: Annotated[int | None, Form(ge=1)] = None
) -> RedirectResponse:
    """A version brought back as a new version (none: the last active state of a deleted
    one)."""
    viewer.engram.memories.restore(memory_id, viewer.actor, version)
    return redirect(f"/memories/{memory_id}", note="restored")


@router.post("/memories/{memory_id}/delete")
def delete(viewer: Posted, memory_id: str) -> RedirectResponse:
    viewer.engram.memories.delete(memory_id, viewer.actor)
    return redirect(f"/memories/{memory_id}", note="deleted (restorable)")


@router.post("/memories/{memory_id}/purge")
def purge(
    viewer: Posted, memory_id: str, confirm: Annotated[str, Form(max_length=100)] = ""
) -> RedirectResponse:
    """Gone for good, with every version: only when the form repeats the memory's id."""
    if confirm.strip() != memory_id:
        raise InvalidInput(
            f"to purge for good, type the memory's id {memory_id!r} in the box", field="confirm"
        )
    viewer.engram.memories.purge([memory_id], viewer.actor)
    return redirect("/memories", note="purged")


@router.post("/memories/{memory_id}/undo")
def undo(viewer: Posted, memory_id: str) -> RedirectResponse:
    """Undo the lifecycle action (merge, supersede, flag, archive) that last changed it."""
    viewer.engram.lifecycle.undo(memory_id, viewer.actor)
    return redirect(f"/memories/{memory_id}", note="undone")
