"""engram migrate-store: SQLite -> PostgreSQL and back, every collection counted and
checksummed; a non-empty destination refused without --force; a second --force run resumes
(adds nothing twice)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from engram import LOCAL, Engram, MemoryPatch, NewMemory
from engram.accounts import Role, Scope
from engram.cli import main
from engram.extraction import NewConversation, NewMessage
from engram.extraction.results import ConversationInput
from engram.lifecycle.reviews import ReviewItem
from engram.store import open_store
from engram.store.copy import copy_store, verify
from engram.store.protocol import EmbeddingUpdate
from engram.store.providers import ProviderRecord
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock


def _fill(engram: Engram) -> None:
    store = engram.store
    engram.accounts.ensure_owner("me")
    env = engram.environments.create("webapp", LOCAL)
    a = engram.memories.add(NewMemory(content="Deploys go through staging"), LOCAL)
    b = engram.memories.add(NewMemory(content="Prefers pnpm", tags=["js"]), LOCAL, env.id)
    engram.memories.update(a.id, MemoryPatch(content="Deploys go through staging first"), LOCAL)
    engram.memories.delete(b.id, LOCAL)
    store.put_embeddings(
        "m1", [EmbeddingUpdate(a.id, "h", np.array([0.1, 0.2, 0.3], dtype=np.float32))]
    )
    user = engram.accounts.create_user("erin", LOCAL, password="long enough pw")
    key = engram.accounts.issue_key(LOCAL, "k", [Scope.READ]).key
    engram.accounts.rotate_key(key.id, LOCAL)
    engram.accounts.revoke_key(engram.accounts.issue_key(LOCAL, "gone").key.id, LOCAL)
    engram.environments.share(env.id, user.id, Role.READER, LOCAL)
    engram.soul.set_block("identity", LOCAL, "You are Ada.")
    engram.soul.set_block("identity", LOCAL, "You are Ada, careful.")
    engram.soul.set_block("rules", LOCAL, "Never push to main.", environment=env.id)
    engram.soul.snapshot(LOCAL, label="before")
    engram.profile.set_learning(LOCAL, enabled=True)
    engram.profile.add("Prefer uv over pip", LOCAL)
    engram.profile.learn(LOCAL.user_id, env.id, ["Always run the linter first."])
    chat = ConversationInput(
        conversation=NewConversation(id="c-1"),
        messages=[
            NewMessage(role="user", content="I prefer Postgres over MySQL.", external_id="x1"),
            NewMessage(role="assistant", content="Postgres it is."),
        ],
    )
    engram.extraction.extract(chat, LOCAL)
    now = datetime(2026, 1, 2, tzinfo=UTC)
    store.reviews.put_review(
        ReviewItem(id="rev_1", environment_id=env.id, memory_id=a.id, other_id=b.id, created_at=now)
    )
    store.providers.put_provider(
        ProviderRecord("local", "openai", "http://x", "m", b"\x00cipher", 5.0, now)
    )


@pytest.mark.slow
def test_sqlite_to_postgres_and_back(tmp_path: Path, pg_url: str, clock: FakeClock) -> None:
    src_path = tmp_path / "src.db"
    engram = Engram(SQLiteStore(src_path), clock=clock)
    _fill(engram)
    engram.close()
    src = f"sqlite:///{src_path}"

    assert main(["migrate-store", "--from", src, "--to", pg_url]) == 0
    s, d = open_store(src), open_store(pg_url)
    try:
        checks = verify(s, d)
    finally:
        s.close()
        d.close()
    assert all(c.ok for c in checks), checks
    assert {c.name for c in checks if c.source_count == 0} == set()  # every kind was exercised

    assert main(["migrate-store", "--from", src, "--to", pg_url]) == 1  # not empty: refused
    assert main(["migrate-store", "--from", src, "--to", pg_url, "--force"]) == 0  # resumes

    back = f"sqlite:///{tmp_path / 'back.db'}"
    assert main(["migrate-store", "--from", pg_url, "--to", back]) == 0
    s, d = open_store(src), open_store(back)
    try:
        assert all(c.ok for c in verify(s, d))
        d.accounts.touch_key(d.accounts.list_keys()[0].id, datetime(2030, 1, 1, tzinfo=UTC))
        assert [c.name for c in verify(s, d) if not c.ok] == ["api_keys"]
        with pytest.raises(Exception, match="not empty"):
            copy_store(s, d)
    finally:
        s.close()
        d.close()
