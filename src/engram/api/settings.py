"""Server settings, built at the entry point (``engram serve``) and handed to the app factory."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from engram.errors import InvalidInput

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    auth: bool = True
    """Require an API key on every /api request. Off only on a loopback address, where every
    request then acts as the local owner."""
    log_level: str = "info"
    public_url: str | None = None
    """Where clients reach this server (e.g. behind a proxy: https://memory.example.com). Named
    in the MCP resource metadata, and its host is accepted in Host and Origin headers."""
    allowed_hosts: tuple[str, ...] = ()
    """More host names (``name`` or ``name:port``) accepted in Host and Origin headers on /mcp."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise InvalidInput(f"port must be 0-65535, got {self.port}", field="port")
        if self.public_url is not None:
            parsed = urlsplit(self.public_url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise InvalidInput(
                    f"public URL {self.public_url!r} must be an http(s) URL with a host",
                    field="public_url",
                )
        for host in self.allowed_hosts:
            if not host or any(c in host for c in "/@ \t"):
                raise InvalidInput(
                    f"allowed host {host!r} must be a host name or name:port", field="allowed_hosts"
                )
        if not self.auth and not is_loopback(self.host):
            raise InvalidInput(
                f"refusing to serve {self.host} without authentication: only a loopback address "
                "(127.0.0.1, ::1, localhost) may run with auth disabled",
                field="host",
            )
