"""The Markdown vault on both backends: a deterministic export (a file per memory with front
matter, folders per environment and layer, wikilinks between a fact and its episode, index
pages); sync both ways (edits become versions, deletions soft deletes, new files memories,
Engram's changes reach the files); conflicts kept on both sides and reported; bad files left
as they are; the CLI, and --watch following edits as they happen."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram import LOCAL, Engram, Settings
from engram.cli import main
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.results import ConversationInput
from engram.models import (
    EpisodeDetails,
    Layer,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    ProcedureDetails,
    Status,
)
from engram.portability import vault as fmt


def _seed(engram: Engram) -> dict[str, str]:
    engram.environments.create("work", LOCAL)
    tabs = engram.memories.add(
        NewMemory(content="Prefers tabs, width 4", category="preference", tags=["python"]), LOCAL
    )
    deploy = engram.memories.add(NewMemory(content="Deploys happen on Tuesdays"), LOCAL, "work")
    result = engram.extraction.extract(
        ConversationInput(
            conversation=NewConversation(id="chat-db", title="Database"),
            messages=[
                NewMessage(role=Speaker.USER, content="We decided to use PostgreSQL for billing."),
                NewMessage(role=Speaker.ASSISTANT, content="PostgreSQL it is."),
            ],
        ),
        LOCAL,
        "work",
    )
    assert result.conversation_id is not None
    return {"tabs": tabs.id, "deploy": deploy.id, "conversation": result.conversation_id}


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_export_is_deterministic_and_linked(engram: Engram, tmp_path: Path) -> None:
    ids = _seed(engram)
    engram.vault.export(tmp_path / "a", LOCAL)
    engram.vault.export(tmp_path / "b", LOCAL)
    a = _tree(tmp_path / "a")
    assert a == _tree(tmp_path / "b")  # the same memories, the same bytes
    assert f"default/facts/{ids['tabs']}.md" in a and f"work/facts/{ids['deploy']}.md" in a
    assert {"index.md", "default/index.md", "work/index.md", fmt.STATE_FILE} <= set(a)
    tabs = a[f"default/facts/{ids['tabs']}.md"].decode()
    assert tabs.startswith(f'---\nid: "{ids["tabs"]}"\nlayer: "fact"\ncategory: "preference"')
    assert 'tags: ["python"]' in tabs and "version: 1" in tabs and "Prefers tabs, width 4" in tabs
    # an extracted fact links to its conversation's episode, and back
    work = engram.store.list_memories(
        MemoryFilter(threads=[ids["conversation"]]), limit=50, order="created_at"
    )
    fact = next(m for m in work if m.layer is Layer.FACT)
    episode = next(m for m in work if m.layer is Layer.EPISODE)
    assert f"[[{episode.id}|" in a[f"work/facts/{fact.id}.md"].decode()
    assert f"[[{fact.id}|" in a[f"work/episodes/{episode.id}.md"].decode()
    assert f"[[{ids['deploy']}|Deploys happen on Tuesdays]]" in a["work/index.md"].decode()
    parsed = fmt.parse(tabs, "x")
    assert parsed.id == ids["tabs"] and parsed.content == "Prefers tabs, width 4"


def test_sync_brings_edits_both_ways(engram: Engram, tmp_path: Path) -> None:
    ids = _seed(engram)
    vault = tmp_path / "vault"
    engram.vault.export(vault, LOCAL)
    tabs_file = vault / f"default/facts/{ids['tabs']}.md"
    deploy_file = vault / f"work/facts/{ids['deploy']}.md"
    # in the vault: an edit (text, tags in plain YAML), a deletion, a new file
    text = tabs_file.read_text().replace("width 4", "width 2").replace('["python"]', "[python, go]")
    tabs_file.write_text(text)
    deploy_file.unlink()
    (vault / "work/facts/new-note.md").write_text("The staging cluster runs in Frankfurt\n")
    report = engram.vault.sync(vault, LOCAL)
    assert report.updated == [ids["tabs"]] and report.deleted == [ids["deploy"]]
    assert len(report.created) == 1 and report.conflicts == [] and report.errors == []
    tabs = engram.memories.get(ids["tabs"], LOCAL)
    assert (tabs.content, tabs.tags, tabs.version) == ("Prefers tabs, width 2", ["python", "go"], 2)
    assert engram.store.versions(tabs.id)[-1].reason == "edited in the vault"
    assert engram.memories.get(ids["deploy"], LOCAL).status is Status.DELETED
    created = engram.memories.get(report.created[0], LOCAL)
    assert created.content == "The staging cluster runs in Frankfurt"
    assert not (vault / "work/facts/new-note.md").exists()
    assert (vault / f"work/facts/{created.id}.md").is_file()  # now under its id
    assert "version: 2" in tabs_file.read_text()
    # in Engram: a change reaches the file; a second sync with nothing new does nothing
    engram.memories.update(ids["tabs"], MemoryPatch(importance=0.9), LOCAL)
    again = engram.vault.sync(vault, LOCAL)
    assert again.written == [f"default/facts/{ids['tabs']}.md"] and not again.updated
    assert "importance: 0.9" in tabs_file.read_text()
    quiet = engram.vault.sync(vault, LOCAL)
    assert not any(quiet.as_dict().values()), quiet


def test_a_conflict_keeps_both_sides(engram: Engram, tmp_path: Path) -> None:
    ids = _seed(engram)
    vault = tmp_path / "vault"
    engram.vault.export(vault, LOCAL)
    tabs_file = vault / f"default/facts/{ids['tabs']}.md"
    tabs_file.write_text(tabs_file.read_text().replace("width 4", "width 8"))
    engram.memories.update(ids["tabs"], MemoryPatch(content="Prefers spaces"), LOCAL)
    report = engram.vault.sync(vault, LOCAL)
    assert len(report.conflicts) == 1 and ids["tabs"] in report.conflicts[0]
    assert engram.memories.get(ids["tabs"], LOCAL).content == "Prefers spaces"  # not overwritten
    assert "Prefers spaces" in tabs_file.read_text()
    kept = tabs_file.with_name(f"{ids['tabs']}.conflict.md")
    assert "width 8" in kept.read_text()  # the vault's edit, kept
    # deleted in the vault while changed in Engram: written back, reported
    deploy_file = vault / f"work/facts/{ids['deploy']}.md"
    deploy_file.unlink()
    engram.memories.update(ids["deploy"], MemoryPatch(content="Deploys happen on Mondays"), LOCAL)
    report = engram.vault.sync(vault, LOCAL)
    assert len(report.conflicts) == 1 and "deleted in the vault" in report.conflicts[0]
    assert "Mondays" in deploy_file.read_text()
    assert engram.memories.get(ids["deploy"], LOCAL).status is Status.ACTIVE


def test_a_bad_file_is_reported_and_left_as_it_is(engram: Engram, tmp_path: Path) -> None:
    ids = _seed(engram)
    vault = tmp_path / "vault"
    engram.vault.export(vault, LOCAL)
    tabs_file = vault / f"default/facts/{ids['tabs']}.md"
    bad = tabs_file.read_text().replace("importance: 0.5", "importance: 7")
    tabs_file.write_text(bad)
    (vault / "default/facts/broken.md").write_text("---\ncategory: x\nno end\n")
    report = engram.vault.sync(vault, LOCAL)
    assert len(report.errors) == 2, report.errors
    assert any("importance" in e for e in report.errors)
    assert any("broken.md" in e and "front matter" in e for e in report.errors)
    assert tabs_file.read_text() == bad  # not overwritten
    assert engram.memories.get(ids["tabs"], LOCAL).version == 1  # nothing stored
    with pytest.raises(Exception, match="not an Engram vault"):
        engram.vault.sync(tmp_path / "nothing", LOCAL)


def test_cli_export_sync_and_watch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Engram.open(Settings.load(home)) as local:
        fact = local.memories.add(NewMemory(content="Uses pnpm for JavaScript"), LOCAL)
    vault = tmp_path / "vault"
    h = ["--home", str(home)]
    assert main([*h, "export", str(vault), "--format", "vault"]) == 0
    assert "wrote the vault" in capsys.readouterr().out
    file = vault / f"default/facts/{fact.id}.md"
    file.write_text(file.read_text().replace("pnpm", "bun"))
    assert main([*h, "sync", str(vault)]) == 0
    assert "1 updated" in capsys.readouterr().out
    # --watch follows an edit made while it runs
    env = {**os.environ, "ENGRAM_HOME": str(home), "ENGRAM_EMBEDDER": "none"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram", "sync", str(vault), "--watch", "--every", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(3)  # the watcher's first sync
        file.write_text(file.read_text().replace("bun", "yarn"))
        deadline = time.monotonic() + 60
        while _content(home, fact.id) != "Uses yarn for JavaScript":
            assert time.monotonic() < deadline, "the watcher did not sync the edit"
            time.sleep(0.5)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "watching" in out, out


def _content(home: Path, memory_id: str) -> str:
    with Engram.open(Settings.load(home)) as local:
        return local.memories.get(memory_id, LOCAL).content


def test_procedures_and_episodes_keep_their_details_both_ways(
    engram: Engram, tmp_path: Path
) -> None:
    """A procedure's file holds its name, trigger and steps, an episode's its participants,
    decisions and questions; a hand-written procedure with a name is created, an edited step
    reaches Engram, and a sync with nothing changed changes nothing."""
    release = engram.memories.add(
        NewMemory(
            layer=Layer.PROCEDURE,
            content="Cut a release",
            procedure=ProcedureDetails(name="release", steps=["bump version", "tag", "push"]),
        ),
        LOCAL,
    )
    session = engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content="Debugged the flaky upload test",
            episode=EpisodeDetails(participants=["Ana"], key_decisions=["retry uploads twice"]),
        ),
        LOCAL,
    )
    vault = tmp_path / "vault"
    engram.vault.export(vault, LOCAL)
    proc_file = vault / f"default/procedures/{release.id}.md"
    text = proc_file.read_text()
    assert 'name: "release"' in text and 'steps: ["bump version", "tag", "push"]' in text
    ep_text = (vault / f"default/episodes/{session.id}.md").read_text()
    assert (
        'participants: ["Ana"]' in ep_text and 'key_decisions: ["retry uploads twice"]' in ep_text
    )
    assert not any(engram.vault.sync(vault, LOCAL).as_dict().values())
    proc_file.write_text(text.replace('"tag", "push"', '"tag", "push", "announce"'))
    (vault / "default/procedures/deploy.md").write_text(
        '---\nname: deploy\ntrigger: "after a release"\nsteps: [build, upload]\n---\n'
        "Deploy to production\n"
    )
    report = engram.vault.sync(vault, LOCAL)
    assert report.updated == [release.id] and len(report.created) == 1, report
    assert report.errors == []
    edited = engram.memories.get(release.id, LOCAL).procedure
    assert edited is not None and edited.steps == ["bump version", "tag", "push", "announce"]
    made = engram.memories.get(report.created[0], LOCAL)
    assert made.layer is Layer.PROCEDURE and made.procedure is not None
    assert (made.procedure.name, made.procedure.trigger, made.procedure.steps) == (
        "deploy",
        "after a release",
        ["build", "upload"],
    )
    assert not any(engram.vault.sync(vault, LOCAL).as_dict().values())


def test_cli_sync_exits_1_when_a_file_is_left_as_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """So that a cron job or a git hook running 'engram sync' sees it (before: exit 0)."""
    home = tmp_path / "home"
    with Engram.open(Settings.load(home)) as local:
        local.memories.add(NewMemory(content="Uses pnpm for JavaScript"), LOCAL)
    vault = tmp_path / "vault"
    h = ["--home", str(home)]
    assert main([*h, "export", str(vault), "--format", "vault"]) == 0
    assert main([*h, "sync", str(vault)]) == 0  # nothing wrong: 0
    (vault / "default/facts/broken.md").write_text("---\ncategory: x\nno end\n")
    capsys.readouterr()
    assert main([*h, "sync", str(vault)]) == 1
    assert "broken.md" in capsys.readouterr().out
