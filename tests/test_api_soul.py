"""The Soul over HTTP against a live server, through the SDK and raw requests: blocks, versions,
snapshots, presets, render; who may change what; bad input as the canonical error body."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from engram import InvalidInput, NotFound, PermissionDenied
from engram.accounts import Role, Scope
from engram.sdk import AsyncClient, Client
from engram.soul.model import BlockSource, SoulView
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture


def _error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    error: dict[str, object] = body["error"]
    return error


def test_blocks_inheritance_versions_and_render(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        web = c.environments.create("webapp")
        c.soul.set_block("identity", "You are Ada.")
        c.soul.set_block("identity", "You are Ada, a careful engineer.", reason="sharper")
        c.soul.set_block("current_focus", "Checkout page", environment="webapp")
        c.soul.set_block("rules", "Cite sources.", environment=web.id, mode="extend")
        c.soul.set_block("rules", "Be brief.")
        hobby = c.soul.set_block("hobbies", "Chess", section="context", priority=20)
        assert hobby.custom and hobby.priority == 20

        seen = c.soul.view("webapp")
        assert isinstance(seen, SoulView) and seen.environment_id == web.id
        rules = c.soul.get_block("rules", "webapp")
        assert rules.source is BlockSource.EXTENDED
        assert "Be brief." in rules.text and "Cite sources." in rules.text
        assert c.soul.get_block("current_focus").text == ""  # the default environment
        assert c.soul.get_block("identity", web.id).source is BlockSource.GLOBAL
        assert [b.name for b in c.soul.layer("webapp")] == ["rules", "current_focus"]

        history = c.soul.history("identity")
        assert [(v.version, v.reason) for v in history] == [(1, ""), (2, "sharper")]
        diff = c.soul.diff("identity")
        assert "-You are Ada.\n" in diff and "+You are Ada, a careful" in diff
        assert c.soul.diff("identity", from_version=0, to_version=1).count("+") >= 1
        back = c.soul.restore_block("identity", 1)
        assert back.version == 3 and back.text == "You are Ada."

        out = c.soul.render("webapp", max_tokens=40)
        assert out.tokens <= 40 and out.text.startswith("<soul>")
        assert out.included[0] == "identity" and out.dropped  # not everything fits


def test_snapshots_and_presets(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        c.soul.set_block("personality", "Dry wit.")
        snap = c.soul.snapshot(label="before the rewrite")
        assert snap.label == "before the rewrite" and snap.environment_id is None
        names = [p.name for p in c.soul.presets()]
        assert names == ["balanced", "creative", "technical", "mentor"]
        applied = c.soul.apply_preset("technical")
        assert "personality" in {b.name for b in applied.changed}
        assert c.soul.get_block("personality").text != "Dry wit."
        assert "-Dry wit." in c.soul.diff_snapshot(snap.id)
        assert c.soul.diff_snapshot(snap.id, applied.backup.id) == ""  # same layer state
        restored = c.soul.restore_snapshot(snap.id)
        assert c.soul.get_block("personality").text == "Dry wit."
        assert {b.name for b in restored.changed} >= {"personality", "worldview"}
        listed = c.soul.snapshots()
        assert [s.id for s in listed] == [snap.id, applied.backup.id, restored.backup.id]
        assert c.soul.get_snapshot(snap.id).blocks[0].text == "Dry wit."
        # a preset never loses the text it replaced
        versions = c.soul.history("personality")
        assert [v.action.value for v in versions] == ["update", "preset", "restore"]


def test_async_soul(live: Live) -> None:
    async def main() -> None:
        async with AsyncClient(live.url, live.owner_token) as c:
            await c.soul.set_block("expertise", "Python, SQL")
            assert (await c.soul.get_block("expertise")).text == "Python, SQL"
            assert "expertise" in (await c.soul.render()).included

    asyncio.run(main())


def test_read_key_cannot_write_and_strangers_see_nothing(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("private")
        c.soul.set_block("current_focus", "Secret launch", environment=env.id)
        snap = c.soul.snapshot(env.id)
        reader = c.accounts.create_key("ro", [Scope.READ])
    with Client(live.url, reader.token) as ro:
        assert ro.soul.get_block("current_focus", env.id).text == "Secret launch"
        with pytest.raises(PermissionDenied):
            ro.soul.set_block("identity", "hijacked")
        for write in (
            lambda: ro.soul.snapshot(),
            lambda: ro.soul.apply_preset("mentor"),
            lambda: ro.soul.restore_snapshot(snap.id),
            lambda: ro.soul.restore_block("current_focus", 1, env.id),
        ):
            with pytest.raises(PermissionDenied):
                write()
    with live.client(reader.token) as raw:
        _error(raw.put("/api/v1/soul/blocks/rules", json={"text": "x"}), 403, "permission_denied")

    bob, bob_token = live.new_user("bob")
    with live.client(bob_token) as b:
        for method, path, kw in (
            ("GET", "/api/v1/soul", {"params": {"environment": env.id}}),
            ("GET", "/api/v1/soul/render", {"params": {"environment": env.id}}),
            ("GET", "/api/v1/soul/blocks/current_focus", {"params": {"environment": env.id}}),
            ("PUT", "/api/v1/soul/blocks/rules", {"params": {"environment": env.id}, "json": {}}),
            ("GET", "/api/v1/soul/snapshots", {"params": {"environment": env.id}}),
            ("GET", f"/api/v1/soul/snapshots/{snap.id}", {}),
            ("GET", f"/api/v1/soul/snapshots/{snap.id}/diff", {}),
            ("POST", f"/api/v1/soul/snapshots/{snap.id}/restore", {"json": {}}),
            ("POST", "/api/v1/soul/presets/mentor/apply", {"params": {"environment": env.id}}),
        ):
            r = b.request(method, path, **kw)
            _error(r, 404, "not_found")
    with Client(live.url, bob_token) as b2, pytest.raises(NotFound):
        b2.soul.history("current_focus", env.id)

    # shared with bob as a reader: the Soul is personal, so his overrides there are his own
    with Client(live.url, live.owner_token) as c:
        c.environments.share(env.id, bob, Role.READER)
    with Client(live.url, bob_token) as b2:
        assert b2.soul.get_block("current_focus", env.id).text == ""
        b2.soul.set_block("current_focus", "Reviewing", environment=env.id)
    with Client(live.url, live.owner_token) as c:
        assert c.soul.get_block("current_focus", env.id).text == "Secret launch"


def test_bad_input_is_422_with_the_canonical_body(live: Live) -> None:
    with live.client(live.owner_token) as c:
        err = _error(
            c.put("/api/v1/soul/blocks/identity", json={"priority": 101, "colour": "red"}),
            422,
            "invalid_input",
        )
        locs = {tuple(e["loc"]) for e in err["details"]["errors"]}  # type: ignore[index]
        assert locs == {("body", "priority"), ("body", "colour")}
        too_long = c.put("/api/v1/soul/blocks/identity", json={"text": "x" * 8001})
        assert "8000" in str(_error(too_long, 422, "invalid_input")["message"])
        unknown = _error(c.put("/api/v1/soul/blocks/nope", json={"text": "x"}), 404, "not_found")
        assert "nope" in str(unknown["message"])
        # a PUT that changes nothing writes nothing and answers the current state
        unchanged = c.put("/api/v1/soul/blocks/identity", json={})
        assert unchanged.status_code == 200 and unchanged.json()["version"] == 0
        # a rule of the layer, not of the body: extending needs an environment to inherit from
        _error(
            c.put("/api/v1/soul/blocks/rules", json={"text": "x", "mode": "extend"}),
            409,
            "conflict",
        )
        _error(c.put("/api/v1/soul/blocks/Bad-Name", json={"text": "x"}), 422, "invalid_input")
        _error(c.get("/api/v1/soul/render", params={"max_tokens": 0}), 422, "invalid_input")
        _error(c.post("/api/v1/soul/presets/grumpy/apply"), 422, "invalid_input")
        _error(
            c.post("/api/v1/soul/blocks/identity/restore", json={"version": 0}),
            422,
            "invalid_input",
        )
        _error(
            c.post("/api/v1/soul/blocks/identity/restore", json={"version": 9}), 404, "not_found"
        )
        _error(c.get("/api/v1/soul/snapshots/snap_missing"), 404, "not_found")
    with Client(live.url, live.owner_token) as sdk, pytest.raises(InvalidInput):
        sdk.soul.set_block("Bad Name!", "x", section="context")
