"""The plain write's shared steps made cheaper without opening a hole: a new memory's first change
sealed by the scrubber that scrubbed its input (and only such a change skips the store's walk),
and environment lookups kept per process while the store's environment stamp stays put, which
every change to an environment or its members moves, from any process."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory, NotFound, PermissionDenied
from engram.accounts import AuditQuery, Role
from engram.actors import Actor
from engram.lifecycle.changes import build, record
from engram.models import Action
from engram.scrub import Scrubber, ScrubConfig
from engram.scrub.scrubber import Redactions
from engram.scrub.sealed import Scrubbed, SealedChange, create, is_sealed, scrub_new
from engram.store import Store
from engram.store.sqlite import SQLiteStore

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _stored(engram: Engram, memory_id: str) -> str:
    [memory] = engram.store.get([memory_id])
    return memory.content


def test_a_direct_store_callers_secret_is_still_redacted(engram: Engram) -> None:
    env = engram.environments.ensure_default(LOCAL)
    now = engram.clock()
    memory = build(env.id, NewMemory(content=f"deploy token {SECRET}"), LOCAL, now)
    engram.store.write([record(memory, Action.CREATE, LOCAL)])
    [stored] = engram.store.get([memory.id])
    assert SECRET not in stored.content and "[REDACTED:github_token]" in stored.content
    [version] = engram.store.versions(memory.id)
    assert SECRET not in version.snapshot.model_dump_json()


def test_the_service_path_is_sealed_and_its_secret_redacted(engram: Engram) -> None:
    added = engram.memories.add(NewMemory(content=f"ci uses {SECRET}"), LOCAL)
    assert SECRET not in _stored(engram, added.id) and added.redactions == {"github_token": 1}
    out = engram.lifecycle.remember(NewMemory(content=f"the bot token is {SECRET}"), LOCAL)
    assert SECRET not in _stored(engram, out.memory.id)
    entries = engram.store.audit.query(AuditQuery(target=out.memory.id))
    assert [e.details.get("redactions") for e in entries] == [{"github_token": 1}]
    # what the service builds is the sealed kind, and only its own scrubber's seal counts
    now = engram.clock()
    change = create(scrub_new(engram.scrubber, NewMemory(content="x")), "env_1", LOCAL, now)
    assert is_sealed(change, engram.scrubber) and not is_sealed(change, Scrubber())


def test_the_markers_cannot_be_made_or_copied_outside_the_scrubber(engram: Engram) -> None:
    new = NewMemory(content=f"raw {SECRET}")
    with pytest.raises(TypeError, match=r"only engram\.scrub\.sealed"):
        Scrubbed(new, Redactions(), engram.scrubber, object())
    memory = build("env_1", new, LOCAL, engram.clock())
    plain = record(memory, Action.CREATE, LOCAL)
    with pytest.raises(TypeError):
        SealedChange(plain.memory, plain.version, scrubber=engram.scrubber, key=object())
    clean = scrub_new(engram.scrubber, NewMemory(content="clean"))
    sealed = create(clean, "env_1", LOCAL, engram.clock())
    with pytest.raises(ValueError, match="key"):  # replace() cannot swap in another memory
        dataclasses.replace(sealed, memory=memory)
    # a plain change holding unscrubbed text is never taken for a sealed one
    assert not is_sealed(plain, engram.scrubber)


def test_a_seal_by_another_scrubber_is_scrubbed_again(store: Store) -> None:
    site = Scrubber(ScrubConfig(extra=[("codename", r"PROJECT-\d{4}")]))
    with Engram(store, scrubber=site) as engram:
        env = engram.environments.ensure_default(LOCAL)
        # the default scrubber knows no codename: its seal must not let one through
        change = create(
            scrub_new(Scrubber(), NewMemory(content="ship PROJECT-1234 friday")),
            env.id,
            LOCAL,
            engram.clock(),
        )
        engram.store.write([change])
        stored = _stored(engram, change.memory.id)
        assert "PROJECT-1234" not in stored and "[REDACTED:codename]" in stored


# -- environments kept per process ---------------------------------------------------------------
def _two(path: Path) -> tuple[Engram, Engram]:
    return Engram(SQLiteStore(path)), Engram(SQLiteStore(path))


def test_another_processs_environment_changes_are_seen(tmp_path: Path) -> None:
    a, b = _two(tmp_path / "engram.db")
    with a, b:
        owner = a.environments.create("shared", LOCAL)
        user = a.accounts.create_user("erin", LOCAL, password="long enough pw")
        erin = Actor(user.id, "api")
        a.environments.share(owner.id, user.id, Role.WRITER, LOCAL)
        a.memories.add(NewMemory(content="first"), erin, owner.id)  # a keeps the lookup
        a.memories.add(NewMemory(content="second"), erin, owner.id)
        a.memories.add(NewMemory(content="mine"), LOCAL, "shared")

        b.environments.share(owner.id, user.id, Role.READER, LOCAL)  # the other process
        with pytest.raises(PermissionDenied, match="reader"):
            a.memories.add(NewMemory(content="third"), erin, owner.id)
        b.environments.unshare(owner.id, user.id, LOCAL)
        with pytest.raises(NotFound):
            a.memories.add(NewMemory(content="fourth"), erin, owner.id)

        # deleted and made again under the same name: a write by name goes to the new one
        b.environments.delete("shared", LOCAL, purge=True)
        with pytest.raises(NotFound):
            a.memories.add(NewMemory(content="gone"), LOCAL, "shared")
        again = b.environments.create("shared", LOCAL)
        assert a.memories.add(NewMemory(content="new"), LOCAL, "shared").environment_id == again.id


def test_the_stamp_moves_with_every_environment_change(tmp_path: Path) -> None:
    with Engram(SQLiteStore(tmp_path / "engram.db")) as engram:
        store = engram.store
        seen = [store.environment_stamp()]

        def moved() -> None:
            seen.append(store.environment_stamp())
            assert seen[-1] != seen[-2]

        env = engram.environments.create("x", LOCAL)
        moved()
        user = engram.accounts.create_user("erin", LOCAL, password="long enough pw")
        engram.environments.share(env.id, user.id, Role.READER, LOCAL)
        moved()
        engram.environments.share(env.id, user.id, Role.WRITER, LOCAL)
        moved()
        engram.environments.unshare(env.id, user.id, LOCAL)
        moved()
        engram.memories.add(NewMemory(content="a memory moves no environment stamp"), LOCAL, "x")
        assert store.environment_stamp() == seen[-1]
        engram.environments.delete("x", LOCAL, purge=True)
        moved()
