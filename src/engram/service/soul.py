"""The Soul service: edit blocks, keep every version, snapshot, apply presets, render.

Two kinds of environment argument:

- **writes and layer reads** (``set_block``, ``history``, ``diff``, ``restore_block``,
  ``snapshot``, ``snapshots``, ``apply_preset``, ``layer``) address one *layer*:
  ``environment=None`` is the user's global Soul, a name or id is that environment's overrides;
- **effective reads** (``view``, ``get_block``, ``render``) resolve ``environment`` like
  :class:`~engram.service.memories.MemoryService`: ``None`` is the default environment, and the
  result is the global Soul with that environment's overrides applied.

The Soul is personal: the global layer and every override belong to ``actor.user_id``, also in
environments shared with them.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.accounts import Scope
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import Conflict, NotFound
from engram.ids import new_id
from engram.models import Environment
from engram.scrub import Scrubber
from engram.service.environments import EnvironmentService, require_scope
from engram.soul.blocks import (
    BUILTIN,
    MAX_CUSTOM_BLOCKS,
    order_key,
    parse_mode,
    parse_section,
    unknown_block,
    validate_custom_name,
    validate_priority,
    validate_text,
)
from engram.soul.diff import block_lines, layer_lines, unified_diff
from engram.soul.layers import blank, effective
from engram.soul.model import (
    EffectiveBlock,
    OverrideMode,
    RenderedSoul,
    Section,
    SnapshotKind,
    SoulAction,
    SoulBlock,
    SoulBlockVersion,
    SoulSnapshot,
    SoulUpdate,
    SoulView,
)
from engram.soul.presets import PRESETS, Preset, get_preset
from engram.soul.render import render
from engram.store import Store

DEFAULT_SOUL_TOKENS = 2_000
"""The Soul's token budget when the caller gives none."""


class SoulService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        scrubber: Scrubber | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self._scrubber = scrubber or Scrubber()

    # -- layers ------------------------------------------------------------------------------
    def _layer_id(
        self, environment: str | None, actor: Actor, scope: Scope = Scope.READ
    ) -> str | None:
        """The layer a write or layer read addresses: None (global) or an environment id. The
        key needs ``scope`` (``read`` for reads, ``write`` for edits)."""
        require_scope(actor, scope)
        if environment is None:
            return None
        return self._envs.resolve(environment, actor, scope=scope).id

    def layer(self, actor: Actor, environment: str | None = None) -> list[SoulBlock]:
        """The blocks stored in one layer (not inherited ones), in rendering order."""
        env_id = self._layer_id(environment, actor)
        blocks = self._store.soul.blocks(actor.user_id, [env_id])
        return sorted(blocks, key=lambda b: order_key(b.name, b.section))

    def _stored(self, actor: Actor, env_id: str | None) -> tuple[list[SoulBlock], list[SoulBlock]]:
        """The global blocks and (for an environment) its overrides, in one read."""
        rows = self._store.soul.blocks(actor.user_id, [None, env_id])
        top = [b for b in rows if b.environment_id is None]
        return top, [b for b in rows if b.environment_id is not None]

    def _known(self, name: str, top: Sequence[SoulBlock], env: Sequence[SoulBlock]) -> str:
        """A block name that exists (built in, or custom in either layer), else the error."""
        name = name.strip().lower()
        custom = {b.name for b in [*top, *env] if b.custom}
        if name not in BUILTIN and name not in custom:
            raise unknown_block(name, sorted(custom))
        return name

    # -- effective reads ---------------------------------------------------------------------
    def view(self, actor: Actor, environment: str | Environment | None = None) -> SoulView:
        """Every block as ``environment`` (default: the default environment) sees it."""
        env = self._envs.resolve(environment, actor)
        top, overrides = self._stored(actor, env.id)
        return SoulView(
            owner=actor.user_id,
            environment_id=env.id,
            environment=env.name,
            blocks=effective(top, overrides),
        )

    def get_block(self, name: str, actor: Actor, environment: str | None = None) -> EffectiveBlock:
        view = self.view(actor, environment)
        block = view.block(name.strip().lower())
        if block is None:
            raise unknown_block(name, [b.name for b in view.blocks if b.custom])
        return block

    def render(
        self,
        actor: Actor,
        environment: str | Environment | None = None,
        max_tokens: int = DEFAULT_SOUL_TOKENS,
    ) -> RenderedSoul:
        """The effective Soul as XML in at most ``max_tokens`` tokens (two SQL reads)."""
        return render(self.view(actor, environment).blocks, max_tokens)

    # -- edits -------------------------------------------------------------------------------
    def edit_start(
        self,
        name: str,
        actor: Actor,
        environment: str | None = None,
        *,
        mode: OverrideMode | None = None,
    ) -> str:
        """The text an edit of block ``name`` in one layer starts from: in the global layer its
        own text ("" if it has none yet); in an environment the override's text, or, when the
        block inherits there, the effective text to replace ("" to extend it with ``mode``
        extend)."""
        if environment is None:
            start = self.get_block(name, actor, None)
            own = next((b for b in self.layer(actor) if b.name == start.name), None)
            return own.text if own else ""
        stored = {b.name: b for b in self.layer(actor, environment)}
        effective_block = self.get_block(name, actor, environment)
        override = stored.get(effective_block.name)
        if override is not None and override.mode is not OverrideMode.INHERIT:
            return override.text
        return "" if mode is OverrideMode.EXTEND else effective_block.text

    def set_block(
        self,
        name: str,
        actor: Actor,
        text: str | None = None,
        *,
        environment: str | None = None,
        mode: OverrideMode | str | None = None,
        priority: int | None = None,
        enabled: bool | None = None,
        section: Section | str | None = None,
        reason: str = "",
    ) -> SoulBlock:
        """Change one block in one layer; a new version records it.

        ``section`` creates a custom block (it must not exist yet under that name). In an
        environment, text without a ``mode`` replaces the global text; ``mode=extend`` appends
        to it and ``mode=inherit`` goes back to the global text. A change that changes nothing
        writes nothing and returns the current state.
        """
        require_scope(actor, Scope.WRITE)
        mode = None if mode is None else parse_mode(mode)
        section = None if section is None else parse_section(section)
        env_id = self._layer_id(environment, actor, Scope.WRITE)
        top, overrides = self._stored(actor, env_id)
        layer = {b.name: b for b in (top if env_id is None else overrides)}
        key = name.strip().lower()
        action = SoulAction.UPDATE
        if section is not None and key not in BUILTIN and key not in {b.name for b in top}:
            key = validate_custom_name(name)
            if key not in layer:
                if sum(b.custom for b in layer.values()) >= MAX_CUSTOM_BLOCKS:
                    raise Conflict(f"at most {MAX_CUSTOM_BLOCKS} custom blocks per layer")
                action = SoulAction.CREATE
        else:
            key = self._known(name, top, overrides)
        current = layer.get(key) or blank(key, env_id, top, section)
        if section is not None and section is not current.section:
            raise Conflict(
                f"block {key!r} is in section {current.section.value!r}; a block's section "
                "cannot change",
                field="section",
            )
        if env_id is None and mode not in (None, OverrideMode.REPLACE):
            raise Conflict(
                f"mode {mode.value!r} needs an environment: the global Soul has nothing to "
                "inherit from",
                field="mode",
            )
        updates: dict[str, object] = {}
        if text is not None:
            # scrubbed here so the returned block shows what is stored
            updates["text"] = self._scrubber.scrub(validate_text(key, text))[0]
            if current.mode is OverrideMode.INHERIT and mode is None:
                updates["mode"] = OverrideMode.REPLACE
        if mode is not None:
            updates["mode"] = mode
        if priority is not None:
            updates["priority"] = validate_priority(priority)
        if enabled is not None:
            updates["enabled"] = enabled
        if not updates and action is not SoulAction.CREATE:
            return current  # nothing to change: a repeated PUT writes nothing
        new = self._next(current, actor, **updates)
        if current.version and new.same_content(current):
            return current
        self._write(actor, "set_block", [SoulBlockVersion(action=action, reason=reason, state=new)])
        return new

    def _write(
        self,
        actor: Actor,
        action: str,
        changes: list[SoulBlockVersion],
        snapshot: SoulSnapshot | None = None,
        environment_id: str | None = None,
    ) -> None:
        """Store block versions (and a snapshot) with their audit entry, in one transaction."""
        env_id = environment_id
        if env_id is None and changes:
            env_id = changes[0].state.environment_id
        entry = self._envs.audit.entry(
            actor,
            f"soul.{action}",
            environment_id=env_id,
            targets=[f"soul:{c.state.name}" for c in changes],
            after={f"soul:{c.state.name}": c.state.version for c in changes},
            snapshot=None if snapshot is None else snapshot.id,
        )
        self._store.soul.write(actor.user_id, changes, snapshot, [entry])

    def _next(self, block: SoulBlock, actor: Actor, **updates: object) -> SoulBlock:
        return block.model_copy(
            update={
                **updates,
                "version": block.version + 1,
                "updated_at": self._clock(),
                "updated_by": actor.label,
            }
        )

    # -- versions ----------------------------------------------------------------------------
    def history(
        self,
        name: str,
        actor: Actor,
        environment: str | None = None,
        scope: Scope = Scope.READ,
    ) -> list[SoulBlockVersion]:
        """Every version of one block in one layer, oldest first (empty if never edited)."""
        env_id = self._layer_id(environment, actor, scope)
        key = self._known(name, *self._stored(actor, env_id))
        return self._store.soul.versions(actor.user_id, env_id, key)

    def diff(
        self,
        name: str,
        actor: Actor,
        from_version: int | None = None,
        to_version: int | None = None,
        environment: str | None = None,
    ) -> str:
        """A unified diff of one block between two versions (default: the latest and the one
        before it). Version 0 is the empty block before the first edit."""
        versions = self.history(name, actor, environment)
        if not versions:
            raise NotFound(f"block {name!r} has no versions yet", name=name)
        latest = versions[-1].version
        to_v = latest if to_version is None else to_version
        from_v = to_v - 1 if from_version is None else from_version
        states = {v.version: v.state for v in versions}
        docs = []
        for v in (from_v, to_v):
            if v != 0 and v not in states:
                raise NotFound(f"block {name!r} has no version {v} (it has 1-{latest})", name=name)
            docs.append(block_lines(states[v]) if v else [])
        key = versions[-1].state.name
        return unified_diff(docs[0], docs[1], f"{key}@{from_v}", f"{key}@{to_v}")

    def restore_block(
        self,
        name: str,
        version: int,
        actor: Actor,
        environment: str | None = None,
        reason: str = "",
    ) -> SoulBlock:
        """Bring back one block's state at ``version`` as a new version, after an automatic
        snapshot of the layer."""
        versions = self.history(name, actor, environment, Scope.WRITE)
        target = next((v.state for v in versions if v.version == version), None)
        if target is None:
            have = f"1-{versions[-1].version}" if versions else "none"
            raise NotFound(f"block {name!r} has no version {version} (it has {have})", name=name)
        current = versions[-1].state
        backup = self._snapshot_of(
            actor,
            current.environment_id,
            SnapshotKind.AUTO,
            f"before restoring {current.name} to version {version}",
        )
        new = self._next(current, actor, **_content(target))
        why = reason or f"restored version {version}"
        self._write(
            actor,
            "restore_block",
            [SoulBlockVersion(action=SoulAction.RESTORE, reason=why, state=new)],
            backup,
        )
        return new

    # -- snapshots ---------------------------------------------------------------------------
    def _snapshot_of(
        self, actor: Actor, env_id: str | None, kind: SnapshotKind, label: str
    ) -> SoulSnapshot:
        blocks = self._store.soul.blocks(actor.user_id, [env_id])
        return SoulSnapshot(
            id=new_id("snap_"),
            owner=actor.user_id,
            environment_id=env_id,
            kind=kind,
            label=label,
            created_at=self._clock(),
            actor=actor.label,
            blocks=sorted(blocks, key=lambda b: order_key(b.name, b.section)),
        )

    def snapshot(
        self, actor: Actor, environment: str | None = None, label: str = ""
    ) -> SoulSnapshot:
        """Record the whole state of one layer."""
        require_scope(actor, Scope.WRITE)
        snap = self._snapshot_of(
            actor, self._layer_id(environment, actor, Scope.WRITE), SnapshotKind.MANUAL, label
        )
        self._write(actor, "snapshot", [], snap, snap.environment_id)
        return snap

    def snapshots(self, actor: Actor, environment: str | None = None) -> list[SoulSnapshot]:
        """One layer's snapshots, oldest first."""
        return self._store.soul.snapshots(actor.user_id, self._layer_id(environment, actor))

    def get_snapshot(
        self, snapshot_id: str, actor: Actor, scope: Scope = Scope.READ
    ) -> SoulSnapshot:
        require_scope(actor, scope)
        snap = self._store.soul.get_snapshot(actor.user_id, snapshot_id)
        if snap is None:
            raise NotFound(f"snapshot {snapshot_id!r} does not exist", snapshot_id=snapshot_id)
        return snap

    def diff_snapshot(self, snapshot_id: str, actor: Actor, other_id: str | None = None) -> str:
        """A unified diff of a layer between a snapshot and now (or another snapshot)."""
        snap = self.get_snapshot(snapshot_id, actor)
        if other_id is None:
            after = self._store.soul.blocks(actor.user_id, [snap.environment_id])
            label = "current"
        else:
            other = self.get_snapshot(other_id, actor)
            after, label = other.blocks, other.id
        return unified_diff(layer_lines(snap.blocks), layer_lines(after), snap.id, label)

    def restore_snapshot(self, snapshot_id: str, actor: Actor, reason: str = "") -> SoulUpdate:
        """Return a layer to a snapshot: each block that differs gets a new version with its
        state then (blocks added since go back to empty / inherited). The layer's state just
        before is snapshotted automatically."""
        snap = self.get_snapshot(snapshot_id, actor, Scope.WRITE)
        backup = self._snapshot_of(
            actor, snap.environment_id, SnapshotKind.AUTO, f"before restoring {snap.id}"
        )
        then = {b.name: b for b in snap.blocks}
        why = reason or f"restored snapshot {snap.id}"
        changes = []
        for block in backup.blocks:
            target = then.get(block.name) or blank(
                block.name, block.environment_id, [], block.section
            )
            if not target.same_content(block) or target.custom != block.custom:
                new = self._next(block, actor, **_content(target))
                changes.append(SoulBlockVersion(action=SoulAction.RESTORE, reason=why, state=new))
        self._write(actor, "restore_snapshot", changes, backup, backup.environment_id)
        return SoulUpdate(backup=backup, changed=[c.state for c in changes])

    # -- presets -----------------------------------------------------------------------------
    def presets(self) -> list[Preset]:
        return list(PRESETS.values())

    def apply_preset(self, preset: str, actor: Actor, environment: str | None = None) -> SoulUpdate:
        """Fill the preset's blocks with its text, each as a new version, after an automatic
        snapshot of the layer (the previous text stays in the history)."""
        require_scope(actor, Scope.WRITE)
        chosen = get_preset(preset)
        env_id = self._layer_id(environment, actor, Scope.WRITE)
        backup = self._snapshot_of(actor, env_id, SnapshotKind.AUTO, f"before preset {chosen.name}")
        layer = {b.name: b for b in backup.blocks}
        changes = []
        for name, text in chosen.blocks.items():
            current = layer.get(name) or blank(name, env_id, [], None)
            new = self._next(current, actor, text=text, mode=OverrideMode.REPLACE)
            if current.version and new.same_content(current):
                continue
            changes.append(
                SoulBlockVersion(
                    action=SoulAction.PRESET, reason=f"preset {chosen.name}", state=new
                )
            )
        self._write(actor, "apply_preset", changes, backup, env_id)
        return SoulUpdate(backup=backup, changed=[c.state for c in changes])


def _content(block: SoulBlock) -> dict[str, object]:
    return {
        "section": block.section,
        "mode": block.mode,
        "text": block.text,
        "priority": block.priority,
        "enabled": block.enabled,
        "custom": block.custom,
    }
