"""Which Host and Origin headers /mcp accepts: the loopback names on a loopback bind; on another
address (where every request needs a key) any name unless an allow-list is configured; the
public URL's host and --allowed-host entries always. A live server on 0.0.0.0 shows a client
reaching it under a proxy's name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from engram.config import ServerSettings
from engram.errors import InvalidInput
from engram.mcp.http import base_url, transport_security
from tests.test_mcp_transports import INITIALIZE, MCP_HEADERS, engram_cli, running_server


def test_loopback_accepts_loopback_names_only() -> None:
    rules = transport_security(ServerSettings())
    assert rules.enable_dns_rebinding_protection
    assert "localhost:*" in rules.allowed_hosts and "127.0.0.1" in rules.allowed_hosts
    assert "http://localhost:*" in rules.allowed_origins
    assert not any("example" in h for h in rules.allowed_hosts)


def test_a_public_address_without_a_list_accepts_any_host() -> None:
    rules = transport_security(ServerSettings(host="0.0.0.0"))
    assert not rules.enable_dns_rebinding_protection


def test_public_url_and_allowed_hosts_join_the_lists() -> None:
    settings = ServerSettings(
        host="0.0.0.0",
        public_url="https://memory.example.com/",
        allowed_hosts=("10.0.0.7:8765", "engram.internal"),
    )
    rules = transport_security(settings)
    assert rules.enable_dns_rebinding_protection
    assert {"memory.example.com", "memory.example.com:*", "10.0.0.7:8765", "engram.internal"} <= (
        set(rules.allowed_hosts)
    )
    assert "10.0.0.7:8765:*" not in rules.allowed_hosts
    assert "https://memory.example.com" in rules.allowed_origins
    assert base_url(settings) == "https://memory.example.com"
    assert base_url(ServerSettings(port=9000)) == "http://127.0.0.1:9000"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"public_url": "memory.example.com"}, "public URL"),
        ({"public_url": "ftp://memory.example.com"}, "public URL"),
        ({"allowed_hosts": ("http://x.example",)}, "allowed host"),
        ({"allowed_hosts": ("",)}, "allowed host"),
    ],
)
def test_bad_settings_are_named(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput, match=field):
        ServerSettings(host="0.0.0.0", **kwargs)  # type: ignore[arg-type]


@contextmanager
def serving(args: list[str], home: Path) -> Iterator[tuple[str, str]]:
    """``engram serve --host 0.0.0.0`` with ``args``; yields its loopback URL and the token."""
    engram_cli(home, "init")
    token = (home / "token").read_text().strip()
    with running_server(home, "--host", "0.0.0.0", *args) as url:
        yield url, token


def initialize(url: str, token: str, host: str) -> int:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}", "Host": host}
    return httpx.post(url + "/mcp", json=INITIALIZE, headers=headers, timeout=10).status_code


@pytest.mark.slow
def test_a_server_on_all_addresses_is_reachable_by_any_name(tmp_path: Path) -> None:
    with serving([], tmp_path / "home") as (url, token):
        assert initialize(url, token, "memory.example.com") == 200
        assert initialize(url, "egm_wrong", "memory.example.com") == 401


@pytest.mark.slow
def test_an_allow_list_is_enforced(tmp_path: Path) -> None:
    args = ["--public-url", "https://memory.example.com", "--allowed-host", "10.1.2.3"]
    with serving(args, tmp_path / "home") as (url, token):
        assert initialize(url, token, "memory.example.com") == 200
        assert initialize(url, token, "10.1.2.3:8765") == 200
        assert initialize(url, token, "evil.example") == 421
        metadata = httpx.get(url + "/.well-known/oauth-protected-resource", timeout=10).json()
        assert metadata["resource"] == "https://memory.example.com/mcp"
