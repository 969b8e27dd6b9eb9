"""One Settings object: every ENGRAM_* variable is named in engram.config.VARIABLES, read by
Settings.load at the entry points, documented in the README, and reaches what it configures."""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory, Settings
from engram.capture.handoffs import HandoffConfig, HandoffMode
from engram.config import VARIABLES

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "engram"
NAME = re.compile(r"\bENGRAM_[A-Z_]+\b")
# the entry points that may read the process environment: Settings.load, and the SDK's Client
# constructor (ENGRAM_URL, ENGRAM_TOKEN: in a program using the SDK, the client is the entry)
# and the hook client (engram-hook, its own process, which must not load Settings); `engram
# hooks` reads the agents' HOME-relative config locations and passes the environment to the
# hook commands it writes
READERS = {Path("config.py"), Path("sdk/client.py"), Path("hooks/client.py"), Path("cli/hooks.py")}
# engram setup / doctor / service find the agents' files through HOME, PATH, XDG_CONFIG_HOME…
READERS |= {Path("cli/setup.py")}
# and the CLI may read a variable the user names (engram extract --api-key-env NAME)
USER_NAMED = {Path("cli/extract.py")}


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_every_variable_used_in_src_is_a_setting_documented_in_the_readme() -> None:
    used = {m for p in SRC.rglob("*.py") for m in NAME.findall(p.read_text())}
    assert used - set(VARIABLES) == set(), "add them to engram.config.VARIABLES"
    documented = set(NAME.findall(readme_section("Configuration")))
    assert set(VARIABLES) - documented == set(), "document them in README ## Configuration"


def test_the_environment_is_read_only_at_entry_points() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel in READERS | USER_NAMED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                offenders.append(f"{rel}:{node.lineno} os.{node.attr}")
            if isinstance(node, ast.keyword) and node.arg == "envvar":
                offenders.append(f"{rel}:{node.value.lineno} envvar=")  # typer reading it
    assert offenders == []


def test_load_reads_every_variable() -> None:
    env = {
        "ENGRAM_HOME": "/data/engram",
        "ENGRAM_DATABASE_URL": "postgresql://db/engram",
        "ENGRAM_MODEL_CACHE": "/cache",
        "ENGRAM_EMBEDDER": "none",
        "ENGRAM_EMBEDDINGS_API_KEY": "sk-embed",
        "ENGRAM_ENV": "work",
        "ENGRAM_TOKEN": "egm_token",
        "ENGRAM_PUBLIC_URL": "https://memory.example.com",
        "ENGRAM_ALLOWED_HOSTS": "a.example, b.example:8443 c.example",
        "ENGRAM_URL": "http://elsewhere:8765",  # read by the SDK's Client, not here
        "ENGRAM_HANDOFF_MODE": "offer",
        "ENGRAM_HANDOFF_LIVE_MINUTES": "3",
    }
    hooks = {"ENGRAM_CAPTURE", "ENGRAM_CONTEXT_TOKENS", "ENGRAM_RECALL", "ENGRAM_HOOK_TIMEOUT"}
    hooks.add("ENGRAM_HOOK_DEBUG")  # read by the hook client (engram-hook), not here
    assert set(env) | hooks == set(VARIABLES)
    s = Settings.load(env=env)
    assert (s.home, s.database_url, s.model_cache) == (
        Path("/data/engram"),
        "postgresql://db/engram",
        Path("/cache"),
    )
    assert (s.embedder, s.embeddings_api_key, s.environment, s.token) == (
        "none",
        "sk-embed",
        "work",
        "egm_token",
    )
    assert s.public_url == "https://memory.example.com"
    assert s.allowed_hosts == ("a.example", "b.example:8443", "c.example")
    assert s.handoffs == HandoffConfig(HandoffMode.OFFER, timedelta(minutes=3))
    assert "sk-embed" not in repr(s) and "egm_token" not in repr(s)  # secrets stay out of logs


def test_an_explicit_home_wins_and_defaults_apply(tmp_path: Path) -> None:
    s = Settings.load(tmp_path, env={"ENGRAM_HOME": "/elsewhere"})
    assert s.home == tmp_path
    assert s.database_url == str(tmp_path / "engram.db")
    assert (s.embedder, s.token, s.environment, s.allowed_hosts) == ("default", None, None, ())


# -- ENGRAM_EMBEDDINGS_API_KEY reaches an OpenAI-compatible endpoint ----------------------------
@dataclass
class FakeEmbeddings:
    """POST /v1/embeddings as OpenAI speaks it; 401 without the expected bearer key."""

    key: str
    url: str = ""
    seen: list[str | None] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[FakeEmbeddings]:
    fake = FakeEmbeddings(key="sk-test-embeddings")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            auth = self.headers.get("Authorization")
            fake.seen.append(auth)
            if self.path != "/v1/embeddings":
                status, reply = 404, {"error": {"message": f"no route {self.path}"}}
            elif auth != f"Bearer {fake.key}":
                status, reply = 401, {"error": {"message": "Incorrect API key provided"}}
            else:
                data = [
                    {"object": "embedding", "index": i, "embedding": _vector(text)}
                    for i, text in enumerate(body["input"])
                ]
                status, reply = 200, {"object": "list", "data": data, "model": body["model"]}
            raw = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def _vector(text: str) -> list[float]:
    out = [0.0] * 8
    for word in text.lower().split():
        out[sum(map(ord, word)) % 8] += 1.0
    return out


def test_the_embeddings_key_reaches_an_openai_compatible_endpoint(
    tmp_path: Path, endpoint: FakeEmbeddings
) -> None:
    env = {
        "ENGRAM_EMBEDDER": f"openai:test-embed@{endpoint.url}",
        "ENGRAM_EMBEDDINGS_API_KEY": endpoint.key,
    }
    with Engram.open(Settings.load(tmp_path, env=env)) as engram:
        engram.memories.add(NewMemory(content="Deploys go through staging first"), LOCAL)
        assert engram.index_pending() == 1
        assert engram.embedder is not None
        assert engram.store.embedding_stats() == {engram.embedder.model_id: 1}
    assert endpoint.seen and set(endpoint.seen) == {f"Bearer {endpoint.key}"}
