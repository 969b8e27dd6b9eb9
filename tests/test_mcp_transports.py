"""The MCP server over real transports: ``engram mcp`` as a stdio subprocess (the SDK's client
and the MCP Inspector CLI from npm) and ``/mcp`` inside a real ``engram serve`` over HTTP, in
both protocol eras, with its authentication, Origin check and environment isolation.

The subprocesses run keyword-only (ENGRAM_EMBEDDER=none) to start fast.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from engram import LOCAL, Engram
from engram.accounts import Scope
from engram.service.accounts import load_secret
from engram.store import open_store
from tests.mcp_scenario import TOOLS, exercise, text_of

MODES = ["auto", "legacy"]
INSPECTOR = Path(__file__).parent / "mcp_inspector" / "node_modules" / ".bin" / "mcp-inspector"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def engram_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    return {**env, "ENGRAM_HOME": str(home), "ENGRAM_EMBEDDER": "none", **extra}


def engram_cli(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "engram", *args],
        env=engram_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


# -- stdio ---------------------------------------------------------------------------------------
@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project (a '.git' directory is what marks it) with a subdirectory to start in."""
    root = tmp_path / "My Web App"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def stdio(home: Path, cwd: Path, *args: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram", "mcp", *args],
        env=engram_env(home, **env),
        cwd=cwd,
    )


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_stdio_every_tool(tmp_path: Path, project: Path, mode: str) -> None:
    home = tmp_path / "home"
    home.mkdir()  # engram mcp refuses a home that does not exist
    async with Client(stdio(home, project / "src"), mode=mode) as c:  # type: ignore[arg-type]
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        await exercise(c)
        envs = await c.call_tool("list_environments")
    assert envs.structured_content is not None
    # the project's environment was created on first use and is the session's default
    assert envs.structured_content["session_default"] == "my-web-app"
    with Engram(open_store(str(home / "engram.db"))) as engram:
        page = engram.memories.list_memories(LOCAL, environment="my-web-app")
        assert any("pnpm" in m.content for m in page.items)


def run_cli(home: Path, *args: str) -> None:
    """The CLI in process (faster than a subprocess), for set-up."""
    from engram.cli import main

    assert main(["--home", str(home), *args]) == 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_environment_and_token_from_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    home = tmp_path / "home"
    run_cli(home, "init")
    run_cli(home, "env", "create", "chosen")
    token = (home / "token").read_text().strip()
    params = stdio(home, tmp_path, ENGRAM_TOKEN=token, ENGRAM_ENV="chosen")
    async with Client(params) as c:
        made = await c.call_tool("remember", {"content": "Chosen by ENGRAM_ENV"})
        envs = await c.call_tool("list_environments")
    assert envs.structured_content is not None
    assert envs.structured_content["session_default"] == "chosen"
    assert made.structured_content is not None
    assert made.structured_content["memory"]["author"] == "local"
    bad = subprocess.run(
        [sys.executable, "-m", "engram", "mcp"],
        env=engram_env(home, ENGRAM_TOKEN="egm_not-a-key"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and bad.stdout == ""
    assert "invalid or revoked API key" in bad.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_inspector_cli_lists_and_calls_tools(tmp_path: Path, project: Path) -> None:
    assert INSPECTOR.exists(), "run scripts/test (npm ci --prefix tests/mcp_inspector)"
    home = tmp_path / "home"
    home.mkdir()  # engram mcp refuses a home that does not exist
    base = [str(INSPECTOR), "--cli", sys.executable, "-m", "engram", "mcp", "--method"]

    def inspect(*args: str) -> Any:
        done = subprocess.run(
            [*base, *args],
            env=engram_env(home),
            cwd=project,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert {t["name"] for t in inspect("tools/list")["tools"]} == TOOLS
    stored = inspect(
        "tools/call", "--tool-name", "remember", "--tool-arg", "content=Deploys go via staging"
    )
    assert stored["structuredContent"]["action"] == "created"
    found = inspect("tools/call", "--tool-name", "recall", "--tool-arg", "query=staging")
    assert found["structuredContent"]["items"][0]["line"].endswith("Deploys go via staging")
    missing = inspect("tools/call", "--tool-name", "get_memory", "--tool-arg", "memory_id=mem_x")
    assert missing["isError"] is True
    assert "not_found" in missing["content"][0]["text"]


# -- HTTP ----------------------------------------------------------------------------------------
@dataclass
class Served:
    url: str
    token: str
    bob_token: str

    @asynccontextmanager
    async def client(self, token: str | None, mode: str = "auto") -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            transport = streamable_http_client(self.url + "/mcp", http_client=http)
            async with Client(transport, mode=mode) as c:  # type: ignore[arg-type]
                yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``engram serve`` in a subprocess on a free port, with the owner token from ``engram init``
    and a second user, bob, who has a key of his own."""
    home = tmp_path_factory.mktemp("served") / "home"
    engram_cli(home, "init")
    token = (home / "token").read_text().strip()
    with Engram(open_store(str(home / "engram.db")), secret=load_secret(home)) as engram:
        bob = engram.accounts.create_user("bob", LOCAL)
        engram.environments.create("alpha", LOCAL)
        engram.environments.create("beta", LOCAL)
        bob_token = engram.accounts.issue_key(
            LOCAL, "bob", [Scope.READ, Scope.WRITE], user_id=bob.id
        ).token
    with running_server(home) as url:
        yield Served(url, token, bob_token)


@contextmanager
def running_server(home: Path, *args: str) -> Iterator[str]:
    """``engram serve`` in a subprocess on a free port (``args`` added); yields its loopback URL
    once /healthz answers, and stops it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram", "serve", "--port", str(port), *args],
        env=engram_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "engram serve did not start"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_http_every_tool(served: Served, mode: str) -> None:
    env = f"http-{mode}"
    with httpx.Client(base_url=served.url, timeout=10) as rest:
        created = rest.post(
            "/api/v1/environments",
            json={"name": env},
            headers={"Authorization": f"Bearer {served.token}"},
        )
        assert created.status_code == 201, created.text
    async with served.client(served.token, mode) as c:
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        await exercise(c, env=env)


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_environment_isolation(served: Served) -> None:
    async with served.client(served.token) as owner:
        made = await owner.call_tool(
            "remember", {"content": "Alpha deploys on Fridays", "environment": "alpha"}
        )
        assert not made.is_error, text_of(made)
        in_alpha = await owner.call_tool("recall", {"query": "fridays", "environment": "alpha"})
        in_beta = await owner.call_tool("recall", {"query": "fridays", "environment": "beta"})
    assert in_alpha.structured_content and len(in_alpha.structured_content["items"]) == 1
    assert in_beta.structured_content is not None and in_beta.structured_content["items"] == []
    async with served.client(served.bob_token, "legacy") as bob:
        hidden = await bob.call_tool("recall", {"query": "fridays", "environment": "alpha"})
        own = await bob.call_tool("recall", {"query": "fridays"})
        envs = await bob.call_tool("list_environments")
    assert hidden.is_error and "not_found: environment 'alpha' does not exist" in text_of(hidden)
    assert own.structured_content is not None and own.structured_content["items"] == []
    assert envs.structured_content is not None
    assert [e["name"] for e in envs.structured_content["environments"]] == ["default"]


@pytest.mark.slow
def test_http_auth_and_origin(served: Served) -> None:
    with httpx.Client(base_url=served.url, timeout=10, headers=MCP_HEADERS) as http:
        anonymous = http.post("/mcp", json=INITIALIZE)
        wrong = http.post("/mcp", json=INITIALIZE, headers={"Authorization": "Bearer egm_nope"})
        good = {"Authorization": f"Bearer {served.token}"}
        evil = http.post("/mcp", json=INITIALIZE, headers={**good, "Origin": "http://evil.test"})
        local = http.post("/mcp", json=INITIALIZE, headers={**good, "Origin": served.url})
        root = http.get("/.well-known/oauth-protected-resource")
        scoped = http.get("/.well-known/oauth-protected-resource/mcp")
        rest_404 = http.get("/api/v1/nothing-here", headers=good)
        oauth_server = http.get("/.well-known/oauth-authorization-server")
    for response in (anonymous, wrong):
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{served.url}/.well-known/oauth-protected-resource/mcp"' in (
            challenge
        )
    assert evil.status_code == 403
    assert local.status_code == 200 and local.headers["mcp-session-id"]
    for metadata in (root, scoped):
        assert metadata.status_code == 200
        assert metadata.json()["resource"] == served.url + "/mcp"
        assert metadata.json()["bearer_methods_supported"] == ["header"]
        # Engram is its own authorization server (engram.oauth, tests/test_oauth.py)
        assert metadata.json()["authorization_servers"] == [served.url]
    assert oauth_server.status_code == 200 and oauth_server.json()["issuer"] == served.url
    # the REST app keeps its own error body for routes it does not have
    assert rest_404.json()["error"]["code"] == "not_found"


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_revoked_or_missing_token_cannot_connect(served: Served) -> None:
    for token in (None, "egm_revoked-or-unknown"):
        with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as an error
            async with served.client(token) as c:
                await c.list_tools()


# -- mcp-config ----------------------------------------------------------------------------------
CLIENTS = ["claude-code", "codex", "gemini", "cursor", "vscode", "claude-desktop", "windsurf"]


def config(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> str:
    from engram.cli import main

    capsys.readouterr()
    code = main(["--home", str(home), "mcp-config", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("client", CLIENTS)
def test_mcp_config_snippets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    home = tmp_path / "home"
    out = config(capsys, home, client)
    if client == "claude-code":
        assert out.startswith(f"claude mcp add engram -e ENGRAM_HOME={home} -- /")
        assert out.rstrip().endswith(" mcp")
        return
    if client == "codex":
        assert out.startswith("[mcp_servers.engram]\ncommand = ")
        assert 'args = ["mcp"]' in out and "[mcp_servers.engram.env]" in out
        assert f"ENGRAM_HOME = {json.dumps(str(home))}" in out
        return
    data = json.loads(out)
    servers = data["servers"] if client == "vscode" else data["mcpServers"]
    entry = servers["engram"]
    assert entry["args"] == ["mcp"] and entry["env"] == {"ENGRAM_HOME": str(home)}
    assert Path(entry["command"]).is_absolute()
    if client == "vscode":
        assert entry["type"] == "stdio"


def test_mcp_config_http_snippets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    url = "http://127.0.0.1:9000/mcp"

    def http(client: str) -> str:
        return config(capsys, home, client, "--http", "--url", url)

    assert "--transport http engram " + url in http("claude-code")
    assert 'bearer_token_env_var = "ENGRAM_TOKEN"' in http("codex")
    assert json.loads(http("gemini"))["mcpServers"]["engram"]["httpUrl"] == url
    assert json.loads(http("cursor"))["mcpServers"]["engram"]["url"] == url
    assert json.loads(http("windsurf"))["mcpServers"]["engram"]["serverUrl"] == url
    vscode = json.loads(http("vscode"))
    assert vscode["servers"]["engram"]["type"] == "http"
    assert vscode["servers"]["engram"]["headers"]["Authorization"] == (
        "Bearer ${input:engram-token}"
    )
    # the server's own URL gets the endpoint (the root answers MCP 405); a path is kept
    for given in ("http://127.0.0.1:9000", "http://127.0.0.1:9000/"):
        out = config(capsys, home, "cursor", "--http", "--url", given)
        assert json.loads(out)["mcpServers"]["engram"]["url"] == url
    proxied = "https://example.org/engram/mcp"
    out = config(capsys, home, "cursor", "--http", "--url", proxied)
    assert json.loads(out)["mcpServers"]["engram"]["url"] == proxied
    from engram.cli import main

    assert main(["--home", str(home), "mcp-config", "claude-desktop", "--http"]) == 2
    assert "use the stdio entry" in capsys.readouterr().err
