"""The Soul: the identity, style and context every session starts from."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.errors import InvalidInput
from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, UPDATE, WRITE, Environment, tool
from engram.requests.fields import EnvironmentRef, Reason, Version
from engram.requests.soul import BlockName, BlockText, Label, Priority
from engram.soul.model import SoulBlock, SoulSnapshot, SoulUpdate, SoulView

Layer = Annotated[
    EnvironmentRef | None,
    Field(description="Environment whose overrides to change; omit for the global Soul."),
]
Block = Annotated[BlockName, Field(description="Block name, e.g. identity, rules, current_focus.")]


class SoulRestored(BaseModel):
    restored: Literal["snapshot", "block"]
    changed: list[SoulBlock]
    backup_snapshot_id: str | None = Field(
        None, description="The automatic snapshot taken before a snapshot restore."
    )


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Read the Soul", READ)
    def soul_get(
        block: Annotated[str | None, Field(description="One block; omit for all.")] = None,
        environment: Environment = None,
    ) -> SoulView:
        """The Soul as this environment sees it (global blocks with its overrides): identity,
        communication style, rules, user profile, current focus..."""
        actor = b.current_actor()
        view = b.engram.soul.view(actor, b.env(environment))
        if block is None:
            return view
        one = b.engram.soul.get_block(block, actor, b.env(environment))
        return view.model_copy(update={"blocks": [one]})

    @tool(server, "Update a Soul block", UPDATE)
    def soul_update_block(
        block: Block,
        text: BlockText | None = None,
        mode: Annotated[
            Literal["replace", "extend", "inherit"] | None,
            Field(description="In an environment: replace, extend (append) or inherit."),
        ] = None,
        priority: Priority | None = None,
        enabled: bool | None = None,
        section: Annotated[
            Literal["soul", "style", "context"] | None,
            Field(description="Only to create a custom block."),
        ] = None,
        reason: Reason = "",
        environment: Layer = None,
    ) -> SoulBlock:
        """Change one Soul block (a new version; the old text stays in the history). Use it
        when the user states a lasting preference about how you should behave, or when the
        current focus of the work changes (block current_focus)."""
        return b.engram.soul.set_block(
            block,
            b.current_actor(),
            text,
            environment=environment,
            mode=mode,
            priority=priority,
            enabled=enabled,
            section=section,
            reason=reason,
        )

    @tool(server, "Apply a Soul preset", UPDATE)
    def soul_apply_preset(
        preset: Annotated[str, Field(description="balanced, creative, technical or mentor.")],
        environment: Layer = None,
    ) -> SoulUpdate:
        """Fill the style blocks from a preset; a snapshot is taken first, so it can be undone
        with soul_restore."""
        return b.engram.soul.apply_preset(preset, b.current_actor(), environment)

    @tool(server, "Snapshot the Soul", WRITE)
    def soul_snapshot(label: Label = "", environment: Layer = None) -> SoulSnapshot:
        """Record the whole Soul layer now, before a larger rewrite."""
        return b.engram.soul.snapshot(b.current_actor(), environment, label)

    @tool(server, "Restore the Soul", UPDATE)
    def soul_restore(
        snapshot_id: Annotated[str | None, Field(description="A 'snap_…' id.")] = None,
        block: Annotated[BlockName | None, Field(description="Restore one block instead.")] = None,
        version: Annotated[Version | None, Field(description="The block's version.")] = None,
        environment: Layer = None,
    ) -> SoulRestored:
        """Bring the Soul back: a whole layer to a snapshot (snapshot_id), or one block to an
        earlier version (block + version). The current state is kept as new versions."""
        actor = b.current_actor()
        if snapshot_id is not None:
            update = b.engram.soul.restore_snapshot(snapshot_id, actor)
            return SoulRestored(
                restored="snapshot", changed=update.changed, backup_snapshot_id=update.backup.id
            )
        if block is None or version is None:
            raise InvalidInput("give snapshot_id, or block and version")
        restored = b.engram.soul.restore_block(block, version, actor, environment)
        return SoulRestored(restored="block", changed=[restored])
