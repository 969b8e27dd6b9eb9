"""The Soul service over a real SQLite file: inheritance, versions, snapshots, presets,
validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram import LOCAL, Actor, Engram
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound
from engram.soul import MAX_BLOCK_CHARS, PRESETS, BlockSource, OverrideMode, Section
from engram.soul.model import SnapshotKind, SoulAction, SoulBlockVersion
from engram.store.sqlite import SQLiteStore


@pytest.fixture
def two_envs(engram: Engram) -> Engram:
    engram.environments.create("webapp", LOCAL)
    engram.environments.create("research", LOCAL)
    engram.soul.set_block("identity", LOCAL, "You are Ada, a careful engineer.")
    engram.soul.set_block("current_focus", LOCAL, "Nothing in particular.")
    engram.soul.set_block("rules", LOCAL, "Never push to main.")
    return engram


def text(engram: Engram, name: str, env: str | None = None) -> str:
    return engram.soul.get_block(name, LOCAL, env).text


def test_environments_inherit_the_global_soul_and_override_blocks(two_envs: Engram) -> None:
    e = two_envs
    e.soul.set_block("current_focus", LOCAL, "Shipping the checkout page.", environment="webapp")
    e.soul.set_block(
        "rules", LOCAL, "Cite a paper for every claim.", environment="research", mode="extend"
    )
    e.soul.set_block("identity", LOCAL, None, environment="research", enabled=False)

    # webapp: focus replaced, the rest inherited
    assert text(e, "current_focus", "webapp") == "Shipping the checkout page."
    assert text(e, "identity", "webapp") == "You are Ada, a careful engineer."
    assert text(e, "rules", "webapp") == "Never push to main."
    web = e.soul.view(LOCAL, "webapp")
    assert web.block("current_focus").source is BlockSource.ENVIRONMENT  # type: ignore[union-attr]
    assert web.block("identity").source is BlockSource.GLOBAL  # type: ignore[union-attr]

    # research: rules extended, identity disabled there only, focus inherited
    assert text(e, "rules", "research") == "Never push to main.\n\nCite a paper for every claim."
    assert e.soul.get_block("identity", LOCAL, "research").enabled is False
    assert e.soul.get_block("identity", LOCAL, "webapp").enabled is True
    assert text(e, "current_focus", "research") == "Nothing in particular."

    # a later global edit flows into both environments, except where replaced
    e.soul.set_block("rules", LOCAL, "Never push to main; open a PR.")
    e.soul.set_block("current_focus", LOCAL, "Learning Rust.")
    assert text(e, "rules", "webapp") == "Never push to main; open a PR."
    assert text(e, "rules", "research").startswith("Never push to main; open a PR.\n\nCite")
    assert text(e, "current_focus", "webapp") == "Shipping the checkout page."
    assert text(e, "current_focus", "research") == "Learning Rust."
    # the default environment sees the global Soul untouched
    assert text(e, "current_focus") == "Learning Rust."

    # going back to inherit drops the override's text
    e.soul.set_block("current_focus", LOCAL, environment="webapp", mode="inherit")
    assert text(e, "current_focus", "webapp") == "Learning Rust."

    rendered = e.soul.render(LOCAL, "research", 2000)
    assert "<identity>" not in rendered.text and "Cite a paper" in rendered.text
    assert "<identity>" in e.soul.render(LOCAL, "webapp", 2000).text


def test_every_edit_is_a_version_and_a_block_restores(two_envs: Engram) -> None:
    e = two_envs
    e.soul.set_block("identity", LOCAL, "You are Ada, a bold engineer.", reason="bolder")
    e.soul.set_block("identity", LOCAL, priority=42)
    history = e.soul.history("identity", LOCAL)
    assert [v.version for v in history] == [1, 2, 3]
    assert [v.state.text for v in history] == [
        "You are Ada, a careful engineer.",
        "You are Ada, a bold engineer.",
        "You are Ada, a bold engineer.",
    ]
    assert history[1].reason == "bolder" and history[2].state.priority == 42

    diff = e.soul.diff("identity", LOCAL, 1, 2)
    assert "-You are Ada, a careful engineer." in diff
    assert "+You are Ada, a bold engineer." in diff
    assert "+priority: 42" in e.soul.diff("identity", LOCAL)  # latest against the one before

    restored = e.soul.restore_block("identity", 1, LOCAL)
    assert restored.version == 4 and restored.priority is None
    assert text(e, "identity") == "You are Ada, a careful engineer."
    after = e.soul.history("identity", LOCAL)
    assert [v.action for v in after] == [
        SoulAction.UPDATE,
        SoulAction.UPDATE,
        SoulAction.UPDATE,
        SoulAction.RESTORE,
    ]
    assert after[1].state.text == "You are Ada, a bold engineer."  # nothing was destroyed
    auto = e.soul.snapshots(LOCAL)
    assert auto and auto[-1].kind is SnapshotKind.AUTO
    assert auto[-1].blocks[0].text == "You are Ada, a bold engineer."

    with pytest.raises(NotFound, match="no version 9"):
        e.soul.restore_block("identity", 9, LOCAL)
    with pytest.raises(NotFound, match="no version 7"):
        e.soul.diff("identity", LOCAL, 7)


def test_override_versions_are_their_own_history(two_envs: Engram) -> None:
    e = two_envs
    e.soul.set_block("current_focus", LOCAL, "Checkout page.", environment="webapp")
    e.soul.set_block("current_focus", LOCAL, "Search page.", environment="webapp")
    assert [v.state.text for v in e.soul.history("current_focus", LOCAL, "webapp")] == [
        "Checkout page.",
        "Search page.",
    ]
    assert len(e.soul.history("current_focus", LOCAL)) == 1  # the global one
    e.soul.restore_block("current_focus", 1, LOCAL, environment="webapp")
    assert text(e, "current_focus", "webapp") == "Checkout page."


def test_snapshot_and_restore_a_whole_layer(two_envs: Engram) -> None:
    e = two_envs
    snap = e.soul.snapshot(LOCAL, label="before the experiment")
    assert {b.name for b in snap.blocks} == {"identity", "current_focus", "rules"}
    e.soul.set_block("identity", LOCAL, "You are Zed, a chaos agent.")
    e.soul.set_block("rules", LOCAL, None, enabled=False)
    e.soul.set_block("expertise", LOCAL, "Everything.")
    assert "You are Zed" in e.soul.diff_snapshot(snap.id, LOCAL)

    update = e.soul.restore_snapshot(snap.id, LOCAL)
    assert sorted(b.name for b in update.changed) == ["expertise", "identity", "rules"]
    assert text(e, "identity") == "You are Ada, a careful engineer."
    assert e.soul.get_block("rules", LOCAL).enabled is True
    assert text(e, "expertise") == ""  # added after the snapshot: back to empty
    assert e.soul.diff_snapshot(snap.id, LOCAL) == ""
    # the state just before the restore is itself a snapshot, so the restore can be undone
    assert update.backup.kind is SnapshotKind.AUTO
    e.soul.restore_snapshot(update.backup.id, LOCAL)
    assert text(e, "identity") == "You are Zed, a chaos agent."
    assert text(e, "expertise") == "Everything."
    assert [v.state.text for v in e.soul.history("identity", LOCAL)] == [
        "You are Ada, a careful engineer.",
        "You are Zed, a chaos agent.",
        "You are Ada, a careful engineer.",
        "You are Zed, a chaos agent.",
    ]
    assert [s.kind for s in e.soul.snapshots(LOCAL)] == [
        SnapshotKind.MANUAL,
        SnapshotKind.AUTO,
        SnapshotKind.AUTO,
    ]


def test_environment_snapshot_restores_only_its_overrides(two_envs: Engram) -> None:
    e = two_envs
    e.soul.set_block("current_focus", LOCAL, "Checkout.", environment="webapp")
    snap = e.soul.snapshot(LOCAL, "webapp")
    e.soul.set_block("current_focus", LOCAL, "Search.", environment="webapp")
    e.soul.set_block("identity", LOCAL, "Global change.")
    e.soul.restore_snapshot(snap.id, LOCAL)
    assert text(e, "current_focus", "webapp") == "Checkout."
    assert text(e, "identity") == "Global change."  # the global layer was not touched


def test_presets_keep_the_old_text_restorable(two_envs: Engram) -> None:
    e = two_envs
    e.soul.set_block("personality", LOCAL, "Dry wit, very short answers.")
    update = e.soul.apply_preset("Creative", LOCAL)
    creative = PRESETS["creative"]
    assert {b.name for b in update.changed} == set(creative.blocks)
    assert text(e, "personality") == creative.blocks["personality"]
    assert text(e, "identity") == "You are Ada, a careful engineer."  # untouched
    history = e.soul.history("personality", LOCAL)
    assert history[0].state.text == "Dry wit, very short answers."
    assert history[-1].action is SoulAction.PRESET
    assert update.backup.kind is SnapshotKind.AUTO
    assert "Dry wit" in e.soul.diff("personality", LOCAL)

    e.soul.apply_preset("technical", LOCAL)
    e.soul.restore_snapshot(update.backup.id, LOCAL)
    assert text(e, "personality") == "Dry wit, very short answers."
    assert text(e, "worldview") == ""  # empty before the first preset, empty again

    # every preset fills its blocks with real text, within the limits
    for preset in PRESETS.values():
        assert len(preset.blocks) >= 5
        assert all(40 < len(t) <= MAX_BLOCK_CHARS for t in preset.blocks.values())
    with pytest.raises(InvalidInput, match="valid presets are: balanced, creative"):
        e.soul.apply_preset("pirate", LOCAL)


def test_custom_blocks(engram: Engram) -> None:
    e = engram
    block = e.soul.set_block("Hobbies", LOCAL, "Chess and climbing.", section=Section.CONTEXT)
    assert block.name == "hobbies" and block.custom and block.version == 1
    assert e.soul.history("hobbies", LOCAL)[0].action is SoulAction.CREATE
    e.soul.set_block("hobbies", LOCAL, "Chess.")  # known now: no section needed
    view = e.soul.view(LOCAL)
    assert [b.name for b in view.blocks if b.section is Section.CONTEXT][-1] == "hobbies"
    assert view.block("hobbies").priority == 50  # type: ignore[union-attr]
    with pytest.raises(Conflict, match="section 'context'; a block's section cannot change"):
        e.soul.set_block("hobbies", LOCAL, "x", section="style")
    with pytest.raises(InvalidInput, match="must be 2-40 characters"):
        e.soul.set_block("9lives", LOCAL, "x", section="soul")
    with pytest.raises(Conflict, match="reserved"):
        e.soul.set_block("style", LOCAL, "x", section="soul")
    with pytest.raises(InvalidInput, match="unknown section 'nope'"):
        e.soul.set_block("pets", LOCAL, "x", section="nope")


def test_invalid_names_and_oversize_text_are_clear_errors(engram: Engram) -> None:
    e = engram
    with pytest.raises(NotFound) as err:
        e.soul.set_block("identiti", LOCAL, "x")
    assert "unknown block 'identiti'" in err.value.message
    assert "identity, worldview, personality, tensions, communication_style" in err.value.message
    with pytest.raises(NotFound, match="unknown block 'nope'"):
        e.soul.history("nope", LOCAL)
    with pytest.raises(InvalidInput, match=f"8001 characters; the limit is {MAX_BLOCK_CHARS}"):
        e.soul.set_block("rules", LOCAL, "x" * 8001)
    e.soul.set_block("rules", LOCAL, "x" * MAX_BLOCK_CHARS)  # exactly the limit is fine
    with pytest.raises(InvalidInput, match="priority must be between 0 and 100, got 101"):
        e.soul.set_block("rules", LOCAL, priority=101)
    with pytest.raises(Conflict, match="needs an environment"):
        e.soul.set_block("rules", LOCAL, "y", mode=OverrideMode.EXTEND)
    with pytest.raises(InvalidInput, match="unknown mode 'merge'"):
        e.soul.set_block("rules", LOCAL, "y", environment="default", mode="merge")
    before = e.soul.history("rules", LOCAL)
    assert e.soul.set_block("rules", LOCAL).text == before[-1].state.text  # nothing to change
    assert e.soul.history("rules", LOCAL) == before  # and nothing written
    with pytest.raises(NotFound, match="environment 'ghost' does not exist"):
        e.soul.set_block("rules", LOCAL, "y", environment="ghost")
    with pytest.raises(NotFound, match="has no versions yet"):
        e.soul.diff("tensions", LOCAL)
    with pytest.raises(NotFound, match="snapshot 'snap_nope' does not exist"):
        e.soul.restore_snapshot("snap_nope", LOCAL)


def test_an_unchanged_edit_writes_no_version(engram: Engram) -> None:
    engram.soul.set_block("identity", LOCAL, "Same.")
    again = engram.soul.set_block("identity", LOCAL, "  Same.  ")
    assert again.version == 1
    assert len(engram.soul.history("identity", LOCAL)) == 1


def test_the_soul_is_personal(engram: Engram) -> None:
    bob = Actor("bob", "api")
    engram.soul.set_block("identity", LOCAL, "Local's assistant.")
    snap = engram.soul.snapshot(LOCAL)
    assert engram.soul.get_block("identity", bob).text == ""
    with pytest.raises(NotFound):
        engram.soul.restore_snapshot(snap.id, bob)
    assert engram.soul.snapshots(bob) == []


def test_a_stale_write_is_a_conflict_and_writes_nothing(engram: Engram, store: SQLiteStore) -> None:
    first = engram.soul.set_block("identity", LOCAL, "One.")
    engram.soul.set_block("identity", LOCAL, "Two.")
    stale = first.model_copy(update={"text": "Stale.", "version": 2})
    with pytest.raises(Conflict, match="changed meanwhile"):
        store.soul.write(LOCAL.user_id, [SoulBlockVersion(action=SoulAction.UPDATE, state=stale)])
    assert [v.state.text for v in engram.soul.history("identity", LOCAL)] == ["One.", "Two."]


def test_deleting_an_environment_removes_its_overrides(
    two_envs: Engram, store: SQLiteStore
) -> None:
    e = two_envs
    e.soul.set_block("current_focus", LOCAL, "Checkout.", environment="webapp")
    env_id = e.environments.resolve("webapp", LOCAL).id
    e.environments.delete("webapp", LOCAL)
    assert store.soul.blocks(LOCAL.user_id, [env_id]) == []
    assert store.soul.versions(LOCAL.user_id, env_id, "current_focus") == []
    assert text(e, "current_focus") == "Nothing in particular."


def test_soul_survives_reopening(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "soul.db"
    with Engram(SQLiteStore(path), clock=clock) as e:
        e.soul.set_block("identity", LOCAL, "Persistent.")
    with Engram(SQLiteStore(path), clock=clock) as e:
        assert e.soul.get_block("identity", LOCAL).text == "Persistent."
        assert "0008_soul" in e.store.applied_migrations()


def test_an_edit_starts_from_the_layers_own_text(two_envs: Engram) -> None:
    """The rule for the text ``engram soul edit`` opens: the layer's own text, else what the
    environment inherits (to replace it) or nothing (to extend it)."""
    e = two_envs
    start = e.soul.edit_start
    assert start("identity", LOCAL) == "You are Ada, a careful engineer."
    assert start("communication_style", LOCAL) == ""  # no text of its own yet
    assert start("identity", LOCAL, "webapp") == "You are Ada, a careful engineer."
    assert start("identity", LOCAL, "webapp", mode=OverrideMode.EXTEND) == ""
    e.soul.set_block("identity", LOCAL, "Ada, on the webapp.", environment="webapp")
    assert start("identity", LOCAL, "webapp") == "Ada, on the webapp."
    assert start("identity", LOCAL, "webapp", mode=OverrideMode.EXTEND) == "Ada, on the webapp."
    e.soul.set_block("identity", LOCAL, None, environment="webapp", mode=OverrideMode.INHERIT)
    assert start("identity", LOCAL, "webapp") == "You are Ada, a careful engineer."
    with pytest.raises(NotFound):
        start("no_such_block", LOCAL)
