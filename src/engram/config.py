"""Settings, read only at entry points and passed down explicitly.

Every ``ENGRAM_*`` environment variable is named in :data:`VARIABLES` and read by
:meth:`Settings.load`, which the entry points call: the CLI (``engram ...``, including
``engram serve`` and ``engram mcp``) and :meth:`engram.Engram.open`'s callers. The one other
readers are the SDK's ``Client`` constructor (``ENGRAM_URL``, ``ENGRAM_TOKEN``): in a program
that uses the SDK, the client is the entry point; and the hook client ``engram-hook``
(``engram.hooks.client``), a process of its own that must start without the service stack.
Nothing reads the environment at import time.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from engram.capture.handoffs import HandoffConfig, handoff_config
from engram.errors import InvalidInput
from engram.scrub import ScrubConfig
from engram.scrub.config import load_scrub_config

DEFAULT_ENVIRONMENT = "default"

VARIABLES: dict[str, str] = {
    "ENGRAM_HOME": "the data directory (database, state, owner token, key-hashing secret)",
    "ENGRAM_DATABASE_URL": "a database URL (postgresql://… or sqlite:///path) instead of "
    "<home>/engram.db",
    "ENGRAM_MODEL_CACHE": "where derived embedding models are cached",
    "ENGRAM_EMBEDDER": "default, none (keyword only), openai:MODEL@URL or local:DIR",
    "ENGRAM_EMBEDDINGS_API_KEY": "the bearer key for an openai:MODEL@URL embedder",
    "ENGRAM_ENV": "the environment commands and MCP sessions use when none is named",
    "ENGRAM_TOKEN": "an API key: engram mcp acts as its owner; the SDK sends it",
    "ENGRAM_PUBLIC_URL": "where clients reach engram serve (behind a proxy)",
    "ENGRAM_ALLOWED_HOSTS": "more Host names /mcp accepts (comma- or space-separated)",
    "ENGRAM_URL": "the server the SDK's Client talks to (read by its constructor)",
    "ENGRAM_HANDOFF_MODE": "handoffs at session start: claim (default), offer (id, agent and "
    "age only; the agent accepts through MCP) or off",
    "ENGRAM_HANDOFF_LIVE_MINUTES": "how long a handoff is held back while its source session "
    "is still live (default 10)",
    # read by the hook client (engram-hook), its own entry point: it must not load Settings
    "ENGRAM_CAPTURE": "hooks: on (default), opt-in (only repositories that enable it) or off",
    "ENGRAM_CONTEXT_TOKENS": "hooks: the session-start block's token budget (default 1500)",
    "ENGRAM_RECALL": "hooks: on adds per-prompt recall (off by default)",
    "ENGRAM_HOOK_TIMEOUT": "hooks: seconds a hook waits for the server before spooling",
    "ENGRAM_HOOK_DEBUG": "hooks: set to log each event the hook handles",
}
"""Every environment variable Engram reads, with what it sets (documented in the README)."""


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    model_cache: Path
    embedder: str = "default"
    embeddings_api_key: str | None = field(default=None, repr=False)
    environment: str | None = None
    """The environment used when a command names none (before the one chosen with 'env use')."""
    token: str | None = field(default=None, repr=False)
    """An API key: ``engram mcp`` on stdio acts as its owner."""
    public_url: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    scrub: ScrubConfig = field(default_factory=ScrubConfig)
    """Extra secret patterns and the allowlist, from ``<home>/scrub.toml``."""
    handoffs: HandoffConfig = field(default_factory=HandoffConfig)
    """How handoffs are delivered at session start."""

    @property
    def database_path(self) -> Path:
        return self.home / "engram.db"

    @classmethod
    def load(cls, home: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
        """Resolve settings from explicit arguments, then the environment variables of
        :data:`VARIABLES`, then the platform's user data and cache directories.
        ``<home>/scrub.toml`` adds secret patterns and an allowlist (:mod:`engram.scrub.config`).
        """
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            return env.get(name, "").strip() or None

        root = Path(home or get("ENGRAM_HOME") or platformdirs.user_data_dir("engram"))
        root = root.expanduser()
        cache = Path(get("ENGRAM_MODEL_CACHE") or platformdirs.user_cache_dir("engram"))
        hosts = re.split(r"[,\s]+", get("ENGRAM_ALLOWED_HOSTS") or "")
        return cls(
            home=root,
            database_url=get("ENGRAM_DATABASE_URL") or str(root / "engram.db"),
            model_cache=cache.expanduser(),
            embedder=env.get("ENGRAM_EMBEDDER", "default"),
            embeddings_api_key=get("ENGRAM_EMBEDDINGS_API_KEY"),
            environment=get("ENGRAM_ENV"),
            token=get("ENGRAM_TOKEN"),
            public_url=get("ENGRAM_PUBLIC_URL"),
            allowed_hosts=tuple(h for h in hosts if h),
            scrub=load_scrub_config(root),
            handoffs=handoff_config(get("ENGRAM_HANDOFF_MODE"), get("ENGRAM_HANDOFF_LIVE_MINUTES")),
        )


# -- the HTTP server (engram serve) ------------------------------------------------------------
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_IN_FLIGHT = 32
"""Per server process: about what its threadpool runs at once (more would only queue)."""


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
    workers: int = 1
    """Server processes sharing the listening socket (and the store)."""
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    """Requests in flight per process beyond which one is answered 429 (0: unbounded)."""

    @property
    def base_url(self) -> str:
        """Where clients reach this server: the public URL, else the bound address."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise InvalidInput(f"workers must be at least 1, got {self.workers}", field="workers")
        if self.max_in_flight < 0:
            raise InvalidInput(
                f"max in flight must be 0 or more, got {self.max_in_flight}", field="max_in_flight"
            )
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
