"""LLM providers managed over REST and MCP, not only by the CLI: the admin scope, the actor in
the audit log, the key stored encrypted and never shown again, bad input refused by name."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client

from engram import LOCAL
from engram.accounts import AuditQuery, Scope
from engram.errors import InvalidInput
from engram.extraction.providers import ProviderSettings
from engram.mcp import Binding, build_server
from engram.service import Engram
from tests import test_api_live
from tests.mcp_scenario import text_of
from tests.sql import query
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture

SECRET = "sk-test-never-shown-0123456789"


def test_rest_sets_lists_and_removes_a_provider_with_audit(live: Live) -> None:
    with live.client(live.owner_token) as c:
        body = {"kind": "openai", "model": "llama3", "base_url": "http://localhost:11434/v1"}
        r = c.put("/api/v1/providers/ollama", json={**body, "api_key": SECRET})
        assert r.status_code == 200, r.text
        assert r.json() == {
            "name": "ollama",
            "kind": "openai",
            "model": "llama3",
            "url": "http://localhost:11434/v1",
            "has_key": True,
            "timeout": 60.0,
        }
        listed = c.get("/api/v1/providers")
        assert [p["name"] for p in listed.json()] == ["ollama"]
        for bad, field in (
            ({"model": ""}, "model"),
            ({"model": "m", "timeout": 0}, "timeout"),
            ({"model": "m", "colour": "red"}, "colour"),
        ):
            r = c.put("/api/v1/providers/other", json=bad)
            assert r.status_code == 422 and field in r.text, r.text
        assert c.put("/api/v1/providers/Bad Name", json=body).status_code == 422
        removed = c.delete("/api/v1/providers/ollama")
        assert removed.status_code == 200 and removed.json()["name"] == "ollama"
        assert c.delete("/api/v1/providers/ollama").status_code == 404
        assert c.get("/api/v1/providers").json() == []
    # a key without the admin scope may not touch them
    _, token = live.new_user("writer", Scope.READ, Scope.WRITE)
    with live.client(token) as c:
        assert c.get("/api/v1/providers").status_code == 403
        assert c.put("/api/v1/providers/x", json={"model": "m"}).status_code == 403
    entries = live.engram.audit.query(AuditQuery(action="provider."), LOCAL)
    assert sorted(e.action for e in entries) == ["provider.add", "provider.remove"]
    assert all(e.targets == ["provider:ollama"] and e.interface == "api" for e in entries)
    stored = json.dumps(query(live.engram.store, "SELECT * FROM audit_log"), default=str)
    assert SECRET not in stored and SECRET not in listed.text


def test_mcp_manages_providers_as_the_keys_owner(live: Live) -> None:
    admin = live.engram.accounts.authenticate(live.owner_token, "mcp")

    async def run() -> list[str]:
        async with Client(build_server(Binding(live.engram, admin)), mode="auto") as c:  # type: ignore[arg-type]
            texts = []
            for name, args in (
                ("set_llm_provider", {"name": "claude", "model": "m", "kind": "anthropic"}),
                ("list_llm_providers", {}),
                ("set_llm_provider", {"name": "claude", "model": ""}),
                ("remove_llm_provider", {"name": "claude"}),
                ("remove_llm_provider", {"name": "claude"}),
            ):
                result = await c.call_tool(name, args)
                texts.append(("error " if result.is_error else "") + text_of(result))
            return texts

    added, listed, bad, removed, again = asyncio.run(run())
    assert '"has_key":false' in added.replace(" ", "") and "anthropic" in added
    assert "claude" in listed
    assert bad.startswith("error") and "model" in bad
    assert not removed.startswith("error")
    assert again.startswith("error") and "not_found" in again
    entries = live.engram.audit.query(AuditQuery(action="provider."), LOCAL)
    assert {e.interface for e in entries} == {"mcp"} and len(entries) == 2


def test_providers_need_a_data_directory_for_their_keys(engram: Engram) -> None:
    """An Engram without a data directory (tests, embedding) keeps keyless providers only."""
    keyless = engram.providers.set("local", ProviderSettings(model="m"), LOCAL)
    assert keyless.has_key is False and keyless.url == "https://api.openai.com/v1"
    with pytest.raises(InvalidInput, match="data directory"):
        engram.providers.set("keyed", ProviderSettings(model="m", api_key=SECRET), LOCAL)
    with pytest.raises(InvalidInput, match="provider name"):
        engram.providers.set("Not Valid", ProviderSettings(model="m"), LOCAL)
    assert [p.name for p in engram.providers.describe(LOCAL)] == ["local"]


def test_the_sdk_manages_providers(live: Live) -> None:
    from engram.sdk import Client

    with Client(live.url, live.owner_token) as c:
        made = c.accounts.set_provider("sdk-llm", "llama3", api_key=SECRET)
        assert made["has_key"] is True and SECRET not in str(made)
        assert [p["name"] for p in c.accounts.providers()] == ["sdk-llm"]
        assert c.accounts.remove_provider("sdk-llm")["name"] == "sdk-llm"
        assert c.accounts.providers() == []
