"""Who may do what, for EVERY operation of the OpenAPI document and EVERY MCP tool, with keys of
each scope (read, write, read+write, admin) held by users of each role in one environment
(none, reader, writer, owner, and the server administrator, who has no role there).

Operations and tools are listed from the running app, so a new route or tool fails
``test_every_operation_and_tool_has_a_case`` until it gets a case here. The expected status
follows from rules, not from a table of answers:

- ``ENV_READ``: the key's ``read`` scope and a role in the environment;
- ``ENV_WRITE``: the ``write`` scope and the writer role; ``ENV_OWNER``: the owner role;
- without any role the environment does not exist (404), whatever the key;
- ``OWN_READ`` / ``OWN_WRITE``: the caller's own things (their Soul, their environments, their
  handoffs);
- ``ADMIN``: the ``admin`` scope; ``ANY``: any valid key; ``PUBLIC``: no key at all;
- ``PROJECT_WRITE``: captured events go to the environment their ``project`` names (here the
  shared environment's id): ``ENV_WRITE``; an id is never read as a name, so without a role
  it does not exist (404) and nothing reaches it; ``PROJECT_BRIEF`` as well answers with the
  project's memories, so it needs ``read`` first (403 before anything is stored).

No response may carry another environment's data: a stranger's environment holds planted
marker strings in every kind of record, and the shared environment's own marker must not
reach callers without a role in it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from mcp import Client

from engram import LOCAL, Engram
from engram.mcp import Binding, build_server
from engram.models import Layer
from tests import test_api_live
from tests.access_world import (
    SHARED_MARK,
    STRANGER_MARK,
    Build,
    Call,
    Caller,
    Case,
    Rule,
    World,
    build_world,
    expected,
)
from tests.export_fixtures import chatgpt_conversation
from tests.mcp_scenario import text_of
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture


# -- REST cases ----------------------------------------------------------------------------------


def _layer_cases(noun: str, layer: Layer) -> dict[str, Case]:
    base = f"/api/v1/{noun}"
    body: dict[str, Any] = {"content": "matrix write"}
    if layer is Layer.PROCEDURE:
        body["procedure"] = {"name": "p"}
    env = {"environment": "{env}"}

    def on(path: str, rule: Rule, **kw: Any) -> Case:
        def build(w: World, c: Caller) -> Call:
            needs_id = "{id}" in path or kw.get("json") in ("ids", "items")
            mid = w.memory(layer) if needs_id else ""
            params = {k: w.shared_env for k in kw.get("params", {})}
            payload = kw.get("json")
            if payload == "ids":
                payload = {"ids": [mid]}
            elif payload == "items":
                payload = {"items": [{"id": mid, "patch": {"pinned": True}}]}
            return Call(path.replace("{id}", mid), params, payload)

        return Case(rule, build)

    return {
        f"POST {base}/bulk": on(f"{base}/bulk", Rule.ENV_WRITE, params=env, json=[body]),
        f"PATCH {base}/bulk": on(f"{base}/bulk", Rule.ENV_WRITE, json="items"),
        f"POST {base}/bulk-delete": on(f"{base}/bulk-delete", Rule.ENV_WRITE, json="ids"),
        f"POST {base}/purge": on(f"{base}/purge", Rule.ENV_OWNER, json="ids"),
        f"POST {base}": on(base, Rule.ENV_WRITE, params=env, json=body),
        f"GET {base}": on(base, Rule.ENV_READ, params=env),
        f"GET {base}/{{memory_id}}": on(f"{base}/{{id}}", Rule.ENV_READ),
        f"PATCH {base}/{{memory_id}}": on(f"{base}/{{id}}", Rule.ENV_WRITE, json={"pinned": True}),
        f"DELETE {base}/{{memory_id}}": on(f"{base}/{{id}}", Rule.ENV_WRITE),
        f"GET {base}/{{memory_id}}/history": on(f"{base}/{{id}}/history", Rule.ENV_READ),
        f"POST {base}/{{memory_id}}/restore": on(
            f"{base}/{{id}}/restore", Rule.ENV_WRITE, json={"version": 1}
        ),
    }


def _fixed(rule: Rule, path: str, json: Any = None, **params: str) -> Case:
    """A call whose ``{env}`` values are the shared environment."""

    def build(w: World, c: Caller) -> Call:
        fill = {k: (w.shared_env if v == "{env}" else v) for k, v in params.items()}
        body = {k: (w.shared_env if v == "{env}" else v) for k, v in json.items()} if json else json
        return Call(path, fill, body)

    return Case(rule, build)


def _own_key(path: str) -> Build:
    def build(w: World, c: Caller) -> Call:
        scopes = sorted(c.scopes)
        issued = w.engram.accounts.issue_key(LOCAL, w.unique("k"), scopes, user_id=c.user_id)
        return Call(path.replace("{key}", issued.key.id), token=issued.token)

    return build


V1 = "/api/v1"
TEA = [{"role": "user", "content": "I like tea."}]
CASES: dict[str, Case] = {
    "GET /healthz": _fixed(Rule.PUBLIC, "/healthz"),
    "GET /readyz": _fixed(Rule.PUBLIC, "/readyz"),
    "GET /metrics": _fixed(Rule.PUBLIC, "/metrics"),
    **_layer_cases("facts", Layer.FACT),
    **_layer_cases("episodes", Layer.EPISODE),
    **_layer_cases("procedures", Layer.PROCEDURE),
    f"POST {V1}/procedures/{{memory_id}}/success": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/procedures/{w.memory(Layer.PROCEDURE)}/success")
    ),
    f"POST {V1}/procedures/{{memory_id}}/failure": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/procedures/{w.memory(Layer.PROCEDURE)}/failure")
    ),
    f"GET {V1}/environments": _fixed(Rule.OWN_READ, f"{V1}/environments"),
    f"POST {V1}/environments": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/environments", json={"name": w.unique("env")})
    ),
    f"GET {V1}/environments/{{ref}}": Case(
        Rule.ENV_READ, lambda w, c: Call(f"{V1}/environments/{w.shared_env}")
    ),
    f"DELETE {V1}/environments/{{ref}}": Case(
        Rule.ENV_OWNER, lambda w, c: Call(f"{V1}/environments/{w.env_for(c)}")
    ),
    f"GET {V1}/environments/{{ref}}/members": Case(
        Rule.ENV_READ, lambda w, c: Call(f"{V1}/environments/{w.shared_env}/members")
    ),
    f"PUT {V1}/environments/{{ref}}/members/{{user_id}}": Case(
        Rule.ENV_OWNER,
        lambda w, c: Call(
            f"{V1}/environments/{w.env_for(c)}/members/{w.third_user}", json={"role": "reader"}
        ),
    ),
    f"DELETE {V1}/environments/{{ref}}/members/{{user_id}}": Case(
        Rule.ENV_OWNER,
        lambda w, c: Call(
            f"{V1}/environments/{w.env_for(c, with_member=True)}/members/{w.third_user}"
        ),
    ),
    f"GET {V1}/users/me": _fixed(Rule.ANY, f"{V1}/users/me"),
    f"GET {V1}/users": _fixed(Rule.ANY, f"{V1}/users"),
    f"POST {V1}/users": Case(
        Rule.ADMIN, lambda w, c: Call(f"{V1}/users", json={"name": w.unique("user")})
    ),
    f"GET {V1}/users/{{user_id}}": Case(Rule.ANY, lambda w, c: Call(f"{V1}/users/{c.user_id}")),
    f"PUT {V1}/users/{{user_id}}/password": Case(
        Rule.OWN_WRITE,
        lambda w, c: Call(f"{V1}/users/{c.user_id}/password", json={"password": "long enough"}),
    ),
    f"GET {V1}/keys": _fixed(Rule.ANY, f"{V1}/keys"),
    f"POST {V1}/keys": Case(
        Rule.ADMIN, lambda w, c: Call(f"{V1}/keys", json={"name": "k", "scopes": ["read"]})
    ),
    f"GET {V1}/keys/{{key_id}}": Case(Rule.ANY, _own_key(f"{V1}/keys/{{key}}")),
    f"DELETE {V1}/keys/{{key_id}}": Case(Rule.ANY, _own_key(f"{V1}/keys/{{key}}")),
    f"POST {V1}/keys/{{key_id}}/rotate": Case(Rule.ANY, _own_key(f"{V1}/keys/{{key}}/rotate")),
    f"GET {V1}/providers": _fixed(Rule.ADMIN, f"{V1}/providers"),
    f"PUT {V1}/providers/{{name}}": Case(
        Rule.ADMIN,
        lambda w, c: Call(f"{V1}/providers/{w.unique('llm')}", json={"model": "m"}),
    ),
    f"DELETE {V1}/providers/{{name}}": Case(
        Rule.ADMIN, lambda w, c: Call(f"{V1}/providers/{w.provider()}")
    ),
    f"GET {V1}/audit": _fixed(Rule.OWN_READ, f"{V1}/audit"),
    f"GET {V1}/oauth/grants": _fixed(Rule.OWN_READ, f"{V1}/oauth/grants"),
    f"GET {V1}/oauth/grants/{{grant_id}}": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/oauth/grants/{w.grant(c)}")
    ),
    f"DELETE {V1}/oauth/grants/{{grant_id}}": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/oauth/grants/{w.grant(c)}")
    ),
    f"POST {V1}/maintenance": _fixed(Rule.ENV_WRITE, f"{V1}/maintenance", {"environment": "{env}"}),
    f"POST {V1}/memories/remember": Case(
        Rule.ENV_WRITE,
        lambda w, c: Call(
            f"{V1}/memories/remember",
            {"environment": w.shared_env},
            {"content": f"matrix remembers {w.unique('r')}"},
        ),
    ),
    f"POST {V1}/memories/{{memory_id}}/feedback": Case(
        Rule.ENV_WRITE,
        lambda w, c: Call(f"{V1}/memories/{w.memory()}/feedback", json={"kind": "helpful"}),
    ),
    f"POST {V1}/memories/{{memory_id}}/undo": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/memories/{w.merged()}/undo")
    ),
    f"GET {V1}/reviews": _fixed(Rule.ENV_READ, f"{V1}/reviews", environment="{env}"),
    f"POST {V1}/reviews/{{review_id}}/accept": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/reviews/{w.review()}/accept", json={})
    ),
    f"POST {V1}/reviews/{{review_id}}/dismiss": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/reviews/{w.review()}/dismiss", json={})
    ),
    f"POST {V1}/search": _fixed(
        Rule.ENV_READ, f"{V1}/search", {"query": "tea build", "environment": "{env}"}
    ),
    f"POST {V1}/context/assemble": _fixed(
        Rule.ENV_READ, f"{V1}/context/assemble", {"query": "tea", "environment": "{env}"}
    ),
    f"POST {V1}/context/preview": _fixed(
        Rule.ENV_READ, f"{V1}/context/preview", {"query": "tea", "environment": "{env}"}
    ),
    # the Soul is personal: these address the caller's own global layer
    f"GET {V1}/profile": _fixed(Rule.OWN_READ, f"{V1}/profile"),
    f"POST {V1}/profile": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/profile", json={"text": w.unique("Never h")})
    ),
    f"GET {V1}/profile/status": _fixed(Rule.OWN_READ, f"{V1}/profile/status"),
    f"PUT {V1}/profile/learning": _fixed(
        Rule.OWN_WRITE, f"{V1}/profile/learning", {"enabled": True}
    ),
    f"PATCH {V1}/profile/{{habit_id}}": Case(
        Rule.OWN_WRITE,
        lambda w, c: Call(f"{V1}/profile/{w.habit(c)}", json={"text": w.unique("Always x")}),
    ),
    f"DELETE {V1}/profile/{{habit_id}}": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/profile/{w.habit(c)}")
    ),
    f"GET {V1}/soul": _fixed(Rule.OWN_READ, f"{V1}/soul"),
    f"GET {V1}/soul/render": _fixed(Rule.OWN_READ, f"{V1}/soul/render"),
    f"GET {V1}/soul/layer": _fixed(Rule.OWN_READ, f"{V1}/soul/layer"),
    f"GET {V1}/soul/presets": _fixed(Rule.ANY, f"{V1}/soul/presets"),
    f"POST {V1}/soul/presets/{{preset}}/apply": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/soul/presets/{w.preset}/apply")
    ),
    f"GET {V1}/soul/snapshots": _fixed(Rule.OWN_READ, f"{V1}/soul/snapshots"),
    f"POST {V1}/soul/snapshots": _fixed(Rule.OWN_WRITE, f"{V1}/soul/snapshots", {"label": "x"}),
    f"GET {V1}/soul/snapshots/{{snapshot_id}}": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/soul/snapshots/{w.snapshot(c)}")
    ),
    f"GET {V1}/soul/snapshots/{{snapshot_id}}/diff": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/soul/snapshots/{w.snapshot(c)}/diff")
    ),
    f"POST {V1}/soul/snapshots/{{snapshot_id}}/restore": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/soul/snapshots/{w.snapshot(c)}/restore", json={})
    ),
    f"GET {V1}/soul/blocks/{{name}}": _fixed(Rule.OWN_READ, f"{V1}/soul/blocks/identity"),
    f"PUT {V1}/soul/blocks/{{name}}": Case(
        Rule.OWN_WRITE,
        lambda w, c: Call(f"{V1}/soul/blocks/identity", json={"text": w.unique("matrix")}),
    ),
    f"GET {V1}/soul/blocks/{{name}}/history": _fixed(
        Rule.OWN_READ, f"{V1}/soul/blocks/identity/history"
    ),
    f"GET {V1}/soul/blocks/{{name}}/diff": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/soul/blocks/{w.block(c)}/diff")
    ),
    f"POST {V1}/soul/blocks/{{name}}/restore": Case(
        Rule.OWN_WRITE,
        lambda w, c: Call(f"{V1}/soul/blocks/{w.block(c)}/restore", json={"version": 1}),
    ),
    f"POST {V1}/extract": _fixed(
        Rule.ENV_WRITE, f"{V1}/extract", {"messages": TEA, "environment": "{env}"}
    ),
    f"GET {V1}/conversations/{{conversation_id}}": Case(
        Rule.ENV_READ, lambda w, c: Call(f"{V1}/conversations/{w.conversation()}")
    ),
    f"GET {V1}/conversations/{{conversation_id}}/messages": Case(
        Rule.ENV_READ, lambda w, c: Call(f"{V1}/conversations/{w.conversation()}/messages")
    ),
    f"POST {V1}/conversations/{{conversation_id}}/messages": Case(
        Rule.ENV_WRITE,
        lambda w, c: Call(
            f"{V1}/conversations/{w.unique('mine')}/messages",
            json={"messages": TEA, "environment": w.shared_env},
        ),
    ),
    f"POST {V1}/conversations/{{conversation_id}}/extract": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/conversations/{w.conversation()}/extract", json={})
    ),
    f"DELETE {V1}/conversations/{{conversation_id}}": Case(
        Rule.ENV_OWNER, lambda w, c: Call(f"{V1}/conversations/{w.conversation()}")
    ),
    f"DELETE {V1}/users/{{user_id}}": Case(
        Rule.ADMIN, lambda w, c: Call(f"{V1}/users/{w.account()}")
    ),
    # import jobs: an upload writes to the environment it names; a job is its owner's alone
    f"POST {V1}/imports": Case(
        Rule.ENV_WRITE,
        lambda w, c: Call(
            f"{V1}/imports",
            {"environment": w.shared_env, "filename": "c.json"},
            [chatgpt_conversation(w.unique("u"), "Tea", [("user", "I like tea.")])],
        ),
    ),
    f"GET {V1}/imports": _fixed(Rule.OWN_READ, f"{V1}/imports"),
    f"GET {V1}/imports/{{job_id}}": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/imports/{w.job(c)}")
    ),
    f"GET {V1}/imports/{{job_id}}/events": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/imports/{w.job(c)}/events")
    ),
    f"POST {V1}/imports/{{job_id}}/commit": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/imports/{w.job(c)}/commit")
    ),
    f"DELETE {V1}/imports/{{job_id}}": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/imports/{w.job(c)}")
    ),
    # coding-agent capture: events carry their project (here the shared environment's id)
    f"POST {V1}/capture/events": Case(
        Rule.PROJECT_WRITE, lambda w, c: Call(f"{V1}/capture/events", json=w.events("prompt"))
    ),
    f"POST {V1}/capture/session-start": Case(
        Rule.PROJECT_BRIEF,
        lambda w, c: Call(f"{V1}/capture/session-start", json=w.events("session_start")),
    ),
    f"POST {V1}/capture/prompt": Case(
        Rule.PROJECT_BRIEF, lambda w, c: Call(f"{V1}/capture/prompt", json=w.events("prompt"))
    ),
    f"GET {V1}/capture/sessions": Case(
        Rule.ENV_READ,
        lambda w, c: Call(f"{V1}/capture/sessions", {"environment": w.foreign_env(c)}),
    ),
    f"GET {V1}/capture/sessions/{{session_id}}": Case(
        Rule.ENV_READ, lambda w, c: Call(f"{V1}/capture/sessions/{w.session()}")
    ),
    f"GET {V1}/capture/sessions/{{session_id}}/observations": Case(
        Rule.ENV_READ, lambda w, c: Call(f"{V1}/capture/sessions/{w.session()}/observations")
    ),
    # writes (or rewrites) the session's episode, a memory of the environment
    f"POST {V1}/capture/sessions/{{session_id}}/summarize": Case(
        Rule.ENV_WRITE, lambda w, c: Call(f"{V1}/capture/sessions/{w.session()}/summarize")
    ),
    f"GET {V1}/capture/search": Case(
        Rule.ENV_READ,
        lambda w, c: Call(
            f"{V1}/capture/search", {"q": "nightly build tea", "environment": w.foreign_env(c)}
        ),
    ),
    # handoffs are owned: a caller sees and claims their own (never a member's)
    f"POST {V1}/handoffs": _fixed(
        Rule.ENV_WRITE, f"{V1}/handoffs", {"summary": "matrix", "environment": "{env}"}
    ),
    f"GET {V1}/handoffs": _fixed(Rule.OWN_READ, f"{V1}/handoffs"),
    f"GET {V1}/handoffs/{{handoff_id}}": Case(
        Rule.OWN_READ, lambda w, c: Call(f"{V1}/handoffs/{w.handoff(c)}")
    ),
    f"POST {V1}/handoffs/{{handoff_id}}/accept": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/handoffs/{w.handoff(c)}/accept", json={})
    ),
    f"POST {V1}/handoffs/{{handoff_id}}/cancel": Case(
        Rule.OWN_WRITE, lambda w, c: Call(f"{V1}/handoffs/{w.handoff(c)}/cancel")
    ),
}


# -- MCP cases -----------------------------------------------------------------------------------

ToolArgs = Callable[[World, Caller], dict[str, Any]]


def _env(**args: Any) -> ToolArgs:
    return lambda w, c: {**args, "environment": w.shared_env}


def _mem(layer: Layer = Layer.FACT, **args: Any) -> ToolArgs:
    return lambda w, c: {**args, "memory_id": w.memory(layer)}


TOOLS: dict[str, tuple[Rule, ToolArgs]] = {
    "recall": (Rule.ENV_READ, _env(query="tea build")),
    "get_context": (Rule.ENV_READ, _env(query="tea")),
    "preview_context": (Rule.ENV_READ, _env(query="tea")),
    "remember": (Rule.ENV_WRITE, _env(content="matrix remembers over mcp")),
    "get_memory": (Rule.ENV_READ, _mem()),
    "update_memory": (Rule.ENV_WRITE, _mem(pinned=True)),
    "delete_memory": (Rule.ENV_WRITE, _mem()),
    "restore_memory": (Rule.ENV_WRITE, _mem(version=1)),
    "memory_history": (Rule.ENV_READ, _mem()),
    "list_recent": (Rule.ENV_READ, _env()),
    "create_episode": (Rule.ENV_WRITE, _env(summary="matrix session")),
    "search_episodes": (Rule.ENV_READ, _env(query="build")),
    "create_procedure": (Rule.ENV_WRITE, _env(name="p", description="d", steps=["a"])),
    "record_procedure_outcome": (Rule.ENV_WRITE, _mem(Layer.PROCEDURE, success=True)),
    "search_procedures": (Rule.ENV_READ, _env(query="deploy")),
    "profile_list": (Rule.OWN_READ, lambda w, c: {}),
    "profile_add": (Rule.OWN_WRITE, lambda w, c: {"text": w.unique("Always z")}),
    "profile_update": (
        Rule.OWN_WRITE,
        lambda w, c: {"habit_id": w.habit(c), "text": w.unique("Always y")},
    ),
    "profile_delete": (Rule.OWN_WRITE, lambda w, c: {"habit_id": w.habit(c)}),
    "soul_get": (Rule.OWN_READ, lambda w, c: {}),
    "soul_update_block": (Rule.OWN_WRITE, lambda w, c: {"block": "identity", "text": "x"}),
    "soul_apply_preset": (Rule.OWN_WRITE, lambda w, c: {"preset": w.preset}),
    "soul_snapshot": (Rule.OWN_WRITE, lambda w, c: {"label": "x"}),
    "soul_restore": (Rule.OWN_WRITE, lambda w, c: {"snapshot_id": w.snapshot(c)}),
    "list_environments": (Rule.OWN_READ, lambda w, c: {}),
    "create_environment": (Rule.OWN_WRITE, lambda w, c: {"name": w.unique("mcp-env")}),
    "feedback": (Rule.ENV_WRITE, _mem(kind="helpful")),
    "maintain": (Rule.ENV_WRITE, _env()),
    "extract_memories": (Rule.ENV_WRITE, _env(messages=TEA)),
    "delete_conversation": (Rule.ENV_OWNER, lambda w, c: {"conversation_id": w.conversation()}),
    "handoff_begin": (Rule.ENV_WRITE, _env(summary="matrix handoff")),
    "handoff_list": (Rule.OWN_READ, lambda w, c: {"state": "open"}),
    "handoff_accept": (Rule.OWN_WRITE, lambda w, c: {"handoff": w.handoff(c)}),
    "handoff_cancel": (Rule.OWN_WRITE, lambda w, c: {"handoff": w.handoff(c)}),
    "list_sessions": (Rule.ENV_READ, _env()),
    "get_session_observations": (Rule.ENV_READ, lambda w, c: {"session": w.session()}),
    "search_observations": (Rule.ENV_READ, _env(query="nightly build tea")),
    "list_llm_providers": (Rule.ADMIN, lambda w, c: {}),
    "set_llm_provider": (Rule.ADMIN, lambda w, c: {"name": w.unique("llm"), "model": "m"}),
    "remove_llm_provider": (Rule.ADMIN, lambda w, c: {"name": w.provider()}),
}


# -- the tests -----------------------------------------------------------------------------------


def _operations(live: Live) -> dict[str, dict[str, Any]]:
    spec = httpx.get(f"{live.url}/openapi.json", timeout=60).json()
    return {
        f"{method.upper()} {path}": op
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
    }


async def _tool_names(engram: Engram) -> set[str]:
    async with Client(build_server(Binding(engram, LOCAL)), mode="auto") as c:  # type: ignore[arg-type]
        return {t.name for t in (await c.list_tools()).tools}


def test_every_operation_and_tool_has_a_case(live: Live) -> None:
    assert set(_operations(live)) == set(CASES)
    assert asyncio.run(_tool_names(live.engram)) == set(TOOLS)


def _success_code(op: dict[str, Any]) -> int:
    return min(int(c) for c in op["responses"] if c.startswith("2"))


def _no_foreign_data(body: str, caller: Caller, where: str) -> None:
    assert STRANGER_MARK not in body, (where, caller.label, body[:300])
    if caller.role is None:
        assert SHARED_MARK not in body, (where, caller.label, body[:300])


def test_rest_matrix(live: Live) -> None:
    world, callers, tokens = build_world(live.engram)
    failures = []
    with live.client() as http:  # one keep-alive connection; each request sends its key
        for key, op in _operations(live).items():
            failures += _walk(http, world, callers, tokens, key, op)
    assert failures == [], "\n".join(failures)


def _walk(
    http: httpx.Client,
    world: World,
    callers: list[Caller],
    tokens: dict[str, str],
    key: str,
    op: dict[str, Any],
) -> list[str]:
    """One operation as every caller: the calls whose status breaks the rules."""
    method = key.split(" ", 1)[0]
    case = CASES[key]
    failures = []
    for caller in callers:
        call = case.build(world, caller)
        auth = {"Authorization": f"Bearer {call.token or tokens[caller.label]}"}
        r = http.request(method, call.path, params=call.params, json=call.json, headers=auth)
        want = expected(case.rule, caller)
        status = _success_code(op) if want is None else want
        if r.status_code != status:
            failures.append(
                f"{key} as {caller.label}: {r.status_code} (want {status}) {r.text[:200]}"
            )
        _no_foreign_data(r.text, caller, key)
    return failures


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_matrix(live: Live) -> None:
    world, callers, tokens = build_world(live.engram)
    names = await _tool_names(live.engram)
    failures = []
    for caller in callers:
        actor = live.engram.accounts.authenticate(tokens[caller.label], "mcp")
        async with Client(build_server(Binding(live.engram, actor)), mode="auto") as c:  # type: ignore[arg-type]
            for name in sorted(names):
                rule, args = TOOLS[name]
                result = await c.call_tool(name, args(world, caller))
                text = text_of(result)
                want = expected(rule, caller)
                code = {None: "", 403: "permission_denied", 404: "not_found"}[want]
                ok = (not result.is_error) if want is None else (result.is_error and code in text)
                if not ok:
                    failures.append(f"{name} as {caller.label}: {text[:200]} (want {want})")
                _no_foreign_data(text, caller, name)
    assert failures == [], "\n".join(failures)
