"""LLM extraction against a local fake provider: a real HTTP server speaking OpenAI's chat
completions (and Anthropic's messages) protocol. Failures fall back to the rules."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from engram import LOCAL, Engram
from engram.extraction import NewConversation, NewMessage
from engram.extraction.providers import ProviderConfig, ProviderKind
from engram.extraction.results import ConversationInput
from engram.models import Layer
from engram.service.providers import open_providers
from engram.store.sqlite import SQLiteStore
from tests.sql import backend, query

API_KEY = "sk-test-5f8e2d1c9b7a4e3f"

GOOD = {
    "facts": [
        {
            "content": "Dana prefers Postgres over MySQL.",
            "category": "preference",
            "importance": 0.7,
            "confidence": 0.9,
            "source_message_ids": ["ext-1", "made-up"],
        }
    ],
    "episode": {"summary": "Dana chose a database.", "key_decisions": ["Use Postgres"]},
    "procedures": [{"name": "deploy", "trigger": "before a release", "steps": ["test", "tag"]}],
}


@dataclass
class FakeProvider:
    """What the fake answers: 'good', 'malformed', 'slow' or 'error'."""

    url: str
    mode: str = "good"
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def _handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            if fake.mode == "slow":
                fake.release.wait(5)
            if fake.mode == "error":
                self._send(500, {"error": {"message": "overloaded"}})
                return
            answer = json.dumps(GOOD) if fake.mode != "malformed" else '{"facts": [{"conte'
            if self.path.endswith("/v1/messages"):
                reply: dict[str, Any] = {"content": [{"type": "text", "text": answer}]}
            else:
                reply = {"choices": [{"message": {"role": "assistant", "content": answer}}]}
            self._send(200, reply)

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                pass

    return Handler


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(FakeProvider("")))
    host, port = server.server_address[:2]
    fake = FakeProvider(f"http://{host!s}:{port}")
    server.RequestHandlerClass = _handler(fake)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield fake
    fake.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


CHAT = ConversationInput(
    conversation=NewConversation(id="llm-1"),
    messages=[
        NewMessage(
            role="user", content="I prefer Postgres over MySQL.", author="Dana", external_id="ext-1"
        ),
        NewMessage(role="assistant", content="Postgres it is.", external_id="ext-2"),
    ],
)


def configure(
    engram: Engram, home: Path, fake: FakeProvider, kind: str = "openai", timeout: float = 5
):
    providers = open_providers(engram.store, home, engram.clock)
    providers.add(
        ProviderConfig(
            name="local",
            kind=ProviderKind(kind),
            model="test-model",
            base_url=fake.url + ("/v1" if kind == "openai" else ""),
            api_key=SecretStr(API_KEY),
            timeout=timeout,
        ),
        LOCAL,
    )
    return providers


def test_good_answer_becomes_validated_proposals(
    engram: Engram, fake: FakeProvider, tmp_path: Path
) -> None:
    llm = configure(engram, tmp_path / "home", fake).extractor("local")
    result = engram.extraction.extract(CHAT, LOCAL, dry_run=True, extractor=llm)
    assert result.extractor == "llm:local" and result.fallback_reason is None
    fact = next(p for p in result.proposals if p.layer is Layer.FACT)
    assert (fact.content, fact.category, fact.importance) == (
        "Dana prefers Postgres over MySQL.",
        "preference",
        0.7,
    )
    assert fact.source_message_ids == ["ext-1"]  # ids the model invented are dropped
    procedure = next(p for p in result.proposals if p.layer is Layer.PROCEDURE)
    assert procedure.procedure is not None and procedure.procedure.steps == ["test", "tag"]
    episode = next(p for p in result.proposals if p.layer is Layer.EPISODE)
    assert episode.episode is not None and episode.episode.key_decisions == ["Use Postgres"]
    [request] = fake.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert request["body"]["response_format"] == {"type": "json_object"}
    assert (
        "[ext-1] Dana (user): I prefer Postgres over MySQL."
        in request["body"]["messages"][1]["content"]
    )


@pytest.mark.parametrize("mode", ["malformed", "error", "slow"])
def test_failures_fall_back_to_the_rules(
    engram: Engram, fake: FakeProvider, tmp_path: Path, mode: str
) -> None:
    fake.mode = mode
    llm = configure(engram, tmp_path / "home", fake, timeout=0.3).extractor("local")
    result = engram.extraction.extract(CHAT, LOCAL, extractor=llm)
    assert result.extractor == "rules" and result.fallback_reason
    assert {"malformed": "malformed", "error": "HTTP 500", "slow": "no answer"}[mode] in (
        result.fallback_reason
    )
    contents = [p.content for p in result.proposals]
    assert "Dana prefers Postgres over MySQL." in contents
    # the conversation is kept, and what the rules found was stored
    kept = engram.extraction.get_conversation("llm-1", LOCAL)  # the caller's own id
    assert len(engram.extraction.conversations.messages(kept.id)) == 2
    assert result.outcomes and all(o.memory_id for o in result.outcomes)


def test_anthropic_messages_protocol(engram: Engram, fake: FakeProvider, tmp_path: Path) -> None:
    llm = configure(engram, tmp_path / "home", fake, kind="anthropic").extractor("local")
    result = engram.extraction.extract(CHAT, LOCAL, dry_run=True, extractor=llm)
    assert result.extractor == "llm:local"
    assert "Dana prefers Postgres over MySQL." in [p.content for p in result.proposals]
    [request] = fake.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == API_KEY
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    assert request["body"]["system"].startswith("You extract long-term memories")


def test_api_key_is_encrypted_at_rest_and_never_logged(
    engram: Engram, fake: FakeProvider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "home"
    providers = configure(engram, home, fake)
    fake.mode = "error"
    engram.extraction.extract(CHAT, LOCAL, extractor=providers.extractor("local"))
    fake.mode = "good"
    engram.extraction.extract(CHAT, LOCAL, dry_run=True, extractor=providers.extractor("local"))
    assert providers.get("local").api_key == SecretStr(API_KEY)
    assert API_KEY not in repr(providers.get("local"))
    rows = query(engram.store, "SELECT * FROM llm_providers")
    assert rows and API_KEY.encode() not in repr(rows).encode()
    engram.close()  # checkpoint the WAL into the main file
    raw = backend(engram.store)
    if isinstance(raw, SQLiteStore):
        db = raw.path
        for path in (db, Path(f"{db}-wal")):
            if path.exists():
                assert API_KEY.encode() not in path.read_bytes()
    assert API_KEY not in caplog.text
    assert "asking local" in caplog.text  # the logs did record the calls
    key_file = home / "provider-keys.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key_file.read_bytes()) == 32


def test_a_key_file_readable_by_others_is_refused(engram: Engram, tmp_path: Path) -> None:
    from engram.errors import StorageError

    home = tmp_path / "home"
    providers = open_providers(engram.store, home, engram.clock)
    providers.add(ProviderConfig(name="p", kind="openai", model="m", api_key=SecretStr("k")), LOCAL)
    (home / "provider-keys.key").chmod(0o644)
    with pytest.raises(StorageError, match="chmod 600"):
        providers.get("p")


def test_a_different_key_file_cannot_decrypt(engram: Engram, tmp_path: Path) -> None:
    from engram.errors import StorageError

    first = open_providers(engram.store, tmp_path / "a", engram.clock)
    first.add(ProviderConfig(name="p", kind="openai", model="m", api_key=SecretStr("k")), LOCAL)
    other = open_providers(engram.store, tmp_path / "b", engram.clock)
    other.add(
        ProviderConfig(name="q", kind="openai", model="m"), LOCAL
    )  # no key: nothing to decrypt
    assert other.get("q").api_key is None
    with pytest.raises(StorageError, match="does not decrypt"):
        other.get("p")


class _SeesTail:
    """An LLM client that summarises what its prompt shows: the topics it read."""

    config = ProviderConfig(name="stub", kind=ProviderKind.OPENAI, base_url="http://x", model="m")

    def complete(self, system: str, user: str) -> str:
        import re

        topics = sorted(set(re.findall(r"topic-(\d+)", user)), key=int)
        return json.dumps({"episode": {"summary": "Talked about topics " + ", ".join(topics)}})


def test_an_episode_of_a_cut_prompt_does_not_replace_a_fuller_one(engram: Engram) -> None:
    """The prompt keeps the newest 48k characters of a long transcript: its episode covers
    only them, so it does not supersede the earlier summary of the conversation's start (a
    review of stop 34: topics 1-2 were in no current episode)."""
    from engram.extraction.llm import LLMExtractor
    from engram.models import MemoryFilter, Status

    extractor = LLMExtractor(_SeesTail())
    big = "x" * 3000
    for i in range(1, 11):  # 20 messages, ~60k characters
        turn = [
            NewMessage(role="user", content=f"topic-{i} {big}"),
            NewMessage(role="assistant", content=f"ok topic-{i} {big}"),
        ]
        engram.extraction.add_messages("chat", turn, LOCAL, extractor=extractor)
    flt = MemoryFilter(layers=[Layer.EPISODE], categories=["episode"], statuses=list(Status))
    active = [e for e in engram.store.list_memories(flt, limit=50) if e.status is Status.ACTIVE]
    assert any("topics 1, 2," in e.content for e in active), [e.content for e in active]
