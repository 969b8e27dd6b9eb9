"""The Soul's calls (``client.soul``), described once without I/O like those in ``_calls``.

``environment`` means what it means in :class:`~engram.service.soul.SoulService`: for
``view``, ``get_block`` and ``render`` the environment whose effective Soul to read (default:
your default one); everywhere else the layer (omitted: your global Soul)."""

from __future__ import annotations

import builtins

from engram.sdk._calls import Call, _params, seg
from engram.soul.model import (
    EffectiveBlock,
    OverrideMode,
    RenderedSoul,
    Section,
    SoulBlock,
    SoulBlockVersion,
    SoulSnapshot,
    SoulUpdate,
    SoulView,
)
from engram.soul.presets import Preset


class SoulCalls:
    base = "/api/v1/soul"

    def view(self, environment: str | None = None) -> Call[SoulView]:
        return Call("GET", self.base, SoulView, _params(environment=environment))

    def get_block(self, name: str, environment: str | None = None) -> Call[EffectiveBlock]:
        params = _params(environment=environment)
        return Call("GET", f"{self.base}/blocks/{seg(name)}", EffectiveBlock, params)

    def render(self, environment: str | None = None, max_tokens: int = 2000) -> Call[RenderedSoul]:
        params = _params(environment=environment, max_tokens=max_tokens)
        return Call("GET", f"{self.base}/render", RenderedSoul, params)

    def layer(self, environment: str | None = None) -> Call[builtins.list[SoulBlock]]:
        params = _params(environment=environment)
        return Call("GET", f"{self.base}/layer", builtins.list[SoulBlock], params)

    def set_block(
        self,
        name: str,
        text: str | None = None,
        *,
        environment: str | None = None,
        mode: OverrideMode | str | None = None,
        priority: int | None = None,
        enabled: bool | None = None,
        section: Section | str | None = None,
        reason: str = "",
    ) -> Call[SoulBlock]:
        given = {"text": text, "mode": mode, "priority": priority, "enabled": enabled}
        body = {k: v for k, v in {**given, "section": section}.items() if v is not None}
        params = _params(environment=environment)
        return Call(
            "PUT", f"{self.base}/blocks/{seg(name)}", SoulBlock, params, {**body, "reason": reason}
        )

    def history(
        self, name: str, environment: str | None = None
    ) -> Call[builtins.list[SoulBlockVersion]]:
        params = _params(environment=environment)
        path = f"{self.base}/blocks/{seg(name)}/history"
        return Call("GET", path, builtins.list[SoulBlockVersion], params)

    def diff(
        self,
        name: str,
        from_version: int | None = None,
        to_version: int | None = None,
        environment: str | None = None,
    ) -> Call[str]:
        params = _params(from_version=from_version, to_version=to_version, environment=environment)
        return Call("GET", f"{self.base}/blocks/{seg(name)}/diff", str, params, field="diff")

    def restore_block(
        self, name: str, version: int, environment: str | None = None, reason: str = ""
    ) -> Call[SoulBlock]:
        body = {"version": version, "reason": reason}
        params = _params(environment=environment)
        return Call("POST", f"{self.base}/blocks/{seg(name)}/restore", SoulBlock, params, body)

    def snapshot(self, environment: str | None = None, label: str = "") -> Call[SoulSnapshot]:
        params = _params(environment=environment)
        return Call("POST", f"{self.base}/snapshots", SoulSnapshot, params, {"label": label})

    def snapshots(self, environment: str | None = None) -> Call[builtins.list[SoulSnapshot]]:
        params = _params(environment=environment)
        return Call("GET", f"{self.base}/snapshots", builtins.list[SoulSnapshot], params)

    def get_snapshot(self, snapshot_id: str) -> Call[SoulSnapshot]:
        return Call("GET", f"{self.base}/snapshots/{seg(snapshot_id)}", SoulSnapshot)

    def diff_snapshot(self, snapshot_id: str, other_id: str | None = None) -> Call[str]:
        path = f"{self.base}/snapshots/{seg(snapshot_id)}/diff"
        return Call("GET", path, str, _params(other=other_id), field="diff")

    def restore_snapshot(self, snapshot_id: str, reason: str = "") -> Call[SoulUpdate]:
        path = f"{self.base}/snapshots/{seg(snapshot_id)}/restore"
        return Call("POST", path, SoulUpdate, {}, {"reason": reason})

    def presets(self) -> Call[builtins.list[Preset]]:
        return Call("GET", f"{self.base}/presets", builtins.list[Preset])

    def apply_preset(self, preset: str, environment: str | None = None) -> Call[SoulUpdate]:
        params = _params(environment=environment)
        return Call("POST", f"{self.base}/presets/{seg(preset)}/apply", SoulUpdate, params)
