"""Server settings, built at the entry point (``engram serve``) and handed to the app factory."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

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

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise InvalidInput(f"port must be 0-65535, got {self.port}", field="port")
        if not self.auth and not is_loopback(self.host):
            raise InvalidInput(
                f"refusing to serve {self.host} without authentication: only a loopback address "
                "(127.0.0.1, ::1, localhost) may run with auth disabled",
                field="host",
            )
