"""The SDK covers the REST API: search and context assembly (sync and async) against a live
server, and a table naming the SDK method of every /api/v1 operation in the OpenAPI."""

from __future__ import annotations

import asyncio
import inspect
import pydoc
from typing import Any

import pytest

from engram import NewMemory
from engram.api.app import create_app
from engram.models import Memory
from engram.retrieval.models import AssembledContext, SearchResult
from engram.sdk import AsyncClient, Client
from engram.service.engram import Engram
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture

LAYER_OPS = {
    ("POST", "/bulk"): "add_many",
    ("PATCH", "/bulk"): "update_many",
    ("POST", "/bulk-delete"): "delete_many",
    ("POST", "/purge"): "purge",
    ("POST", ""): "add",
    ("GET", ""): "list",
    ("GET", "/{memory_id}"): "get",
    ("PATCH", "/{memory_id}"): "update",
    ("DELETE", "/{memory_id}"): "delete",
    ("GET", "/{memory_id}/history"): "history",
    ("POST", "/{memory_id}/restore"): "restore",
}
SDK_METHODS: dict[tuple[str, str], str] = {
    **{
        (m, f"/api/v1/{layer}{p}"): f"{layer}.{n}"
        for (m, p), n in LAYER_OPS.items()
        for layer in ("facts", "episodes", "procedures")
    },
    ("POST", "/api/v1/procedures/{memory_id}/success"): "procedures.record_outcome",
    ("POST", "/api/v1/procedures/{memory_id}/failure"): "procedures.record_outcome",
    ("GET", "/api/v1/environments"): "environments.list",
    ("POST", "/api/v1/environments"): "environments.create",
    ("GET", "/api/v1/environments/{ref}"): "environments.get",
    ("DELETE", "/api/v1/environments/{ref}"): "environments.delete",
    ("GET", "/api/v1/environments/{ref}/members"): "environments.members",
    ("PUT", "/api/v1/environments/{ref}/members/{user_id}"): "environments.share",
    ("DELETE", "/api/v1/environments/{ref}/members/{user_id}"): "environments.unshare",
    ("GET", "/api/v1/users/me"): "accounts.me",
    ("GET", "/api/v1/users"): "accounts.users",
    ("POST", "/api/v1/users"): "accounts.create_user",
    ("GET", "/api/v1/users/{user_id}"): "accounts.user",
    ("PUT", "/api/v1/users/{user_id}/password"): "accounts.set_password",
    ("GET", "/api/v1/keys"): "accounts.keys",
    ("POST", "/api/v1/keys"): "accounts.create_key",
    ("GET", "/api/v1/keys/{key_id}"): "accounts.key",
    ("DELETE", "/api/v1/keys/{key_id}"): "accounts.revoke_key",
    ("POST", "/api/v1/keys/{key_id}/rotate"): "accounts.rotate_key",
    ("GET", "/api/v1/oauth/grants"): "accounts.grants",
    ("GET", "/api/v1/oauth/grants/{grant_id}"): "accounts.grant",
    ("DELETE", "/api/v1/oauth/grants/{grant_id}"): "accounts.revoke_grant",
    ("GET", "/api/v1/audit"): "accounts.audit",
    ("GET", "/api/v1/providers"): "accounts.providers",
    ("PUT", "/api/v1/providers/{name}"): "accounts.set_provider",
    ("DELETE", "/api/v1/providers/{name}"): "accounts.remove_provider",
    ("POST", "/api/v1/maintenance"): "lifecycle.maintain",
    ("POST", "/api/v1/memories/remember"): "lifecycle.remember",
    ("POST", "/api/v1/memories/{memory_id}/feedback"): "lifecycle.feedback",
    ("POST", "/api/v1/memories/{memory_id}/undo"): "lifecycle.undo",
    ("GET", "/api/v1/reviews"): "lifecycle.reviews",
    ("POST", "/api/v1/reviews/{review_id}/accept"): "lifecycle.resolve_review",
    ("POST", "/api/v1/reviews/{review_id}/dismiss"): "lifecycle.resolve_review",
    ("POST", "/api/v1/search"): "search",
    ("POST", "/api/v1/context/assemble"): "context",
    ("POST", "/api/v1/context/preview"): "context",
    ("GET", "/api/v1/soul"): "soul.view",
    ("GET", "/api/v1/soul/render"): "soul.render",
    ("GET", "/api/v1/profile"): "profile.list",
    ("POST", "/api/v1/profile"): "profile.add",
    ("PATCH", "/api/v1/profile/{habit_id}"): "profile.edit",
    ("DELETE", "/api/v1/profile/{habit_id}"): "profile.delete",
    ("GET", "/api/v1/profile/status"): "profile.status",
    ("PUT", "/api/v1/profile/learning"): "profile.set_learning",
    ("POST", "/api/v1/handoffs"): "handoffs.begin",
    ("GET", "/api/v1/handoffs"): "handoffs.list",
    ("GET", "/api/v1/handoffs/{handoff_id}"): "handoffs.get",
    ("POST", "/api/v1/handoffs/{handoff_id}/accept"): "handoffs.accept",
    ("POST", "/api/v1/handoffs/{handoff_id}/cancel"): "handoffs.cancel",
    ("GET", "/api/v1/soul/layer"): "soul.layer",
    ("GET", "/api/v1/soul/presets"): "soul.presets",
    ("POST", "/api/v1/soul/presets/{preset}/apply"): "soul.apply_preset",
    ("GET", "/api/v1/soul/snapshots"): "soul.snapshots",
    ("POST", "/api/v1/soul/snapshots"): "soul.snapshot",
    ("GET", "/api/v1/soul/snapshots/{snapshot_id}"): "soul.get_snapshot",
    ("GET", "/api/v1/soul/snapshots/{snapshot_id}/diff"): "soul.diff_snapshot",
    ("POST", "/api/v1/soul/snapshots/{snapshot_id}/restore"): "soul.restore_snapshot",
    ("GET", "/api/v1/soul/blocks/{name}"): "soul.get_block",
    ("PUT", "/api/v1/soul/blocks/{name}"): "soul.set_block",
    ("GET", "/api/v1/soul/blocks/{name}/history"): "soul.history",
    ("GET", "/api/v1/soul/blocks/{name}/diff"): "soul.diff",
    ("POST", "/api/v1/soul/blocks/{name}/restore"): "soul.restore_block",
    ("POST", "/api/v1/extract"): "extraction.extract",
    ("GET", "/api/v1/conversations/{conversation_id}"): "extraction.get_conversation",
    ("DELETE", "/api/v1/conversations/{conversation_id}"): "extraction.delete_conversation",
    ("DELETE", "/api/v1/users/{user_id}"): "accounts.delete_user",
    ("POST", "/api/v1/imports"): "imports.upload",
    ("GET", "/api/v1/imports"): "imports.list",
    ("GET", "/api/v1/imports/{job_id}"): "imports.get",
    # the SDK follows a job by polling its status rather than reading the event stream
    ("GET", "/api/v1/imports/{job_id}/events"): "imports.get",
    ("POST", "/api/v1/imports/{job_id}/commit"): "imports.commit",
    ("DELETE", "/api/v1/imports/{job_id}"): "imports.delete",
    ("GET", "/api/v1/conversations/{conversation_id}/messages"): "extraction.messages",
    ("POST", "/api/v1/conversations/{conversation_id}/messages"): "extraction.add_messages",
    ("POST", "/api/v1/conversations/{conversation_id}/extract"): "extraction.extract",
}


def _resolve(client: Any, dotted: str) -> Any:
    obj = client
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_api_operation_has_an_sdk_method_sync_and_async(engram: Engram) -> None:
    spec = create_app(engram).openapi()
    operations = {
        (method.upper(), path)
        for path, ops in spec["paths"].items()
        if path.startswith("/api/v1/")
        for method in ops
    }
    # the capture protocol is spoken by the hook client (engram-hook), not by applications
    operations = {(m, p) for m, p in operations if not p.startswith("/api/v1/capture/")}
    assert operations - set(SDK_METHODS) == set(), "REST operations without an SDK method"
    assert set(SDK_METHODS) - operations == set(), "table rows for operations that are gone"
    sync, asynchronous = Client("http://x", "t"), AsyncClient("http://x", "t")
    for dotted in sorted(set(SDK_METHODS.values())):
        assert callable(_resolve(sync, dotted)), dotted
        assert asyncio.iscoroutinefunction(_resolve(asynchronous, dotted)), dotted
    sync.close()
    asyncio.run(asynchronous.aclose())


def test_every_sdk_method_can_be_introspected() -> None:
    """``inspect.signature``, ``help()`` and IDEs see each method's own parameters, its
    answer's type and a docstring; a wrong call names the method, not the call description
    behind it (walkthrough 32, finding 15)."""
    sync, asynchronous = Client("http://x", "t"), AsyncClient("http://x", "t")
    for client in (sync, asynchronous):
        for dotted in sorted(set(SDK_METHODS.values())):
            method = _resolve(client, dotted)
            sig = inspect.signature(method)
            kinds = {p.kind for p in sig.parameters.values()}
            assert inspect.Parameter.VAR_POSITIONAL not in kinds, (dotted, sig)
            assert "self" not in sig.parameters, (dotted, sig)
            assert sig.return_annotation is not inspect.Signature.empty, dotted
            assert "Call[" not in str(sig.return_annotation), (dotted, sig)
            assert method.__doc__, dotted
            assert method.__name__ == dotted.rsplit(".", 1)[-1], dotted
    update = inspect.signature(sync.facts.update)
    assert list(update.parameters) == ["memory_id", "patch", "reason"]
    assert update.return_annotation is Memory
    assert inspect.signature(sync.facts.record_outcome).parameters["success"].kind is (
        inspect.Parameter.KEYWORD_ONLY
    )
    assert "search of one environment" in (sync.search.__doc__ or "")
    assert "update(memory_id" in pydoc.render_doc(sync.facts.update, renderer=pydoc.plaintext)
    with pytest.raises(TypeError, match=r"^record_outcome\(memory_id: str, \*, success"):
        sync.facts.record_outcome("mem_x", True)
    with pytest.raises(TypeError, match=r"^update\(.*missing a required argument: 'patch'"):
        sync.facts.update("mem_x", content="x")
    sync.close()
    asyncio.run(asynchronous.aclose())


def test_search_and_context_through_the_sdk(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("sdk-search")
        c.facts.add(NewMemory(content="Prefers pnpm over npm for JavaScript"), env.id)
        c.facts.add(NewMemory(content="The payments service is written in Go"), env.id)
        found = c.search("pnpm javascript", env.id, limit=5)
        assert isinstance(found, SearchResult)
        assert found.items[0].memory.content.startswith("Prefers pnpm")
        ctx = c.context("pnpm javascript", env.id, max_tokens=300, preview=True)
        assert isinstance(ctx, AssembledContext) and "Prefers pnpm" in ctx.text
        assert ctx.tokens <= 300 and ctx.preview

    async def run() -> tuple[SearchResult, AssembledContext]:
        async with AsyncClient(live.url, live.owner_token) as a:
            return await a.search("payments Go", env.id), await a.context("payments", env.id)

    found, ctx = asyncio.run(run())
    assert found.items[0].memory.content.startswith("The payments service")
    assert "payments service" in ctx.text and not ctx.preview


def test_the_profile_through_the_sdk(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        assert c.profile.status()["learning"] is False
        assert c.profile.set_learning(enabled=True)["learning"] is True
        habit = c.profile.add("Prefer pnpm over npm")
        assert [h["id"] for h in c.profile.list()] == [habit["id"]]
        assert c.profile.edit(habit["id"], "Prefer bun over npm")["text"] == "Prefer bun over npm"
        c.profile.delete(habit["id"])
        assert c.profile.list() == []

    async def run() -> list[dict[str, object]]:
        async with AsyncClient(live.url, live.owner_token) as c:
            await c.profile.add("Never commit to main")
            return await c.profile.list()

    assert [h["text"] for h in asyncio.run(run())] == ["Never commit to main"]
