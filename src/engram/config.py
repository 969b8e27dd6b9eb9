"""Settings, read only at entry points (CLI, server, MCP) and passed down explicitly."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from engram.scrub import ScrubConfig
from engram.scrub.config import load_scrub_config

DEFAULT_ENVIRONMENT = "default"


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    model_cache: Path
    embedder: str = "default"
    scrub: ScrubConfig = field(default_factory=ScrubConfig)
    """Extra secret patterns and the allowlist, from ``<home>/scrub.toml``."""

    @property
    def database_path(self) -> Path:
        return self.home / "engram.db"

    @classmethod
    def load(cls, home: Path | str | None = None, env: Mapping[str, str] | None = None) -> Settings:
        """Resolve settings from explicit arguments, then environment variables, then the
        platform's user data directory.

        - ``ENGRAM_HOME``: the data directory (database, state, tokens)
        - ``ENGRAM_DATABASE_URL``: a database URL instead of ``<home>/engram.db``
        - ``ENGRAM_MODEL_CACHE``: where derived embedding models are cached
        - ``ENGRAM_EMBEDDER``: ``default``, ``none`` (keyword only), ``openai:<model>@<url>``,
          ``local:<dir>``

        and ``<home>/scrub.toml``: extra secret patterns and an allowlist (see
        :mod:`engram.scrub.config`).
        """
        env = os.environ if env is None else env
        root = Path(home or env.get("ENGRAM_HOME") or platformdirs.user_data_dir("engram"))
        root = root.expanduser()
        db = env.get("ENGRAM_DATABASE_URL") or str(root / "engram.db")
        cache = Path(
            env.get("ENGRAM_MODEL_CACHE") or platformdirs.user_cache_dir("engram")
        ).expanduser()
        return cls(
            home=root,
            database_url=db,
            model_cache=cache,
            embedder=env.get("ENGRAM_EMBEDDER", "default"),
            scrub=load_scrub_config(root),
        )
