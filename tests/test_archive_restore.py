"""Restoring an archive is all or nothing, on every backend (the ``store`` fixture is the home
restored into): a record the reading refuses, a record the store refuses and a restore that
would not export back to the archive's bytes each leave the home exactly as it was, with or
without --force, and name the collection (and the record) at fault."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engram import LOCAL, Engram
from engram.errors import Conflict, EngramError, InvalidInput, StorageError
from engram.models import MemoryFilter, NewMemory, Status
from engram.portability.reading import read_input
from engram.store import Store
from engram.store.sqlite import SQLiteStore

Edit = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@pytest.fixture
def archive(tmp_path: Path) -> bytes:
    """A whole-home archive of a home with users, environments, memories, the Soul and (the
    latest collection but one) a handoff."""
    source = Engram(SQLiteStore(tmp_path / "source.db"))
    try:
        source.environments.create("work", LOCAL, "Day job")
        source.memories.add(NewMemory(content="Prefers tabs, width 4"), LOCAL)
        source.memories.add(NewMemory(content="Deploys on Fridays are banned"), LOCAL, "work")
        source.soul.set_block("communication_style", LOCAL, text="Be brief.")
        source.handoffs.begin("Login refactor half done", LOCAL, environment="work")
        source.profile.add("Prefer uv over pip", LOCAL)
        return source.archive.export(LOCAL)
    finally:
        source.close()


@pytest.fixture
def home(store: Store) -> Iterator[Engram]:
    e = Engram(store)
    yield e
    e.accesses.close()


def _crafted(data: bytes, path: Path, name: str, edit: Edit) -> Path:
    """The archive with collection ``name`` edited, its manifest's count and checksum made to
    match (so only the records themselves are wrong)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    manifest = json.loads(source.read("manifest.json"))
    info = manifest["collections"][name]
    rows = edit([json.loads(line) for line in source.read(info["file"]).splitlines()])
    body = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()
    info.update(count=len(rows), sha256=hashlib.sha256(body).hexdigest())
    with zipfile.ZipFile(path, "w") as out:
        for entry in source.namelist():
            if entry != "manifest.json":
                out.writestr(entry, body if entry == info["file"] else source.read(entry))
        out.writestr("manifest.json", json.dumps(manifest))
    return path


def _malformed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*rows, {"id": "hnd_bad", "summary": 3}]


def _elsewhere(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A well-formed handoff in an environment that is nowhere: the store refuses it."""
    return [*rows, {**rows[0], "id": "hnd_elsewhere", "environment_id": "env_gone"}]


def _unexported(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A field no handoff has: it is read and written, but the home would not export it."""
    return [{**rows[0], "remark": "not part of a handoff"}, *rows[1:]]


def _collections(engram: Engram) -> dict[str, bytes]:
    data = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL)))
    return {n: data.read(n) for n in data.namelist() if n != "manifest.json"}


def _assert_empty(engram: Engram) -> None:
    store = engram.store
    assert store.list_environments() == []
    assert store.accounts.list_users() == []
    assert store.count(MemoryFilter(statuses=list(Status))) == 0
    assert store.profile.list_entries(LOCAL.user_id) == []


@pytest.mark.parametrize(
    ("edit", "error", "says"),
    [
        (_malformed, InvalidInput, r"archive collection 'handoffs', record 2 \(id 'hnd_bad'\)"),
        (_elsewhere, Conflict, r"archive collection 'handoffs': the change clashes"),
        (_unexported, StorageError, r"would differ from the archive in: handoffs"),
    ],
    ids=["malformed", "refused by the store", "not verified"],
)
def test_a_bad_late_record_leaves_an_empty_home_empty(
    home: Engram,
    archive: bytes,
    tmp_path: Path,
    edit: Edit,
    error: type[EngramError],
    says: str,
) -> None:
    """Before, the users, environments, memories and Soul were written before the handoff
    failed (or the check did), and the home was left half restored: not empty any more, so
    the same archive, mended, could no longer be restored without --force."""
    crafted = _crafted(archive, tmp_path / "crafted.zip", "handoffs", edit)
    with pytest.raises(error, match=says) as caught:
        home.archive.restore(read_input(crafted), LOCAL)
    assert "nothing restored" in caught.value.message
    _assert_empty(home)
    # the home is still one that was never initialised: the good archive restores whole
    (tmp_path / "good.zip").write_bytes(archive)
    report = home.archive.restore(read_input(tmp_path / "good.zip"), LOCAL)
    assert all(report.checks.values()), report.checks
    assert _collections(home)["handoffs.jsonl"] == zipfile.ZipFile(io.BytesIO(archive)).read(
        "handoffs.jsonl"
    )


@pytest.mark.parametrize("edit", [_malformed, _elsewhere], ids=["malformed", "refused"])
def test_a_forced_restore_with_a_bad_late_record_changes_nothing(
    home: Engram, archive: bytes, tmp_path: Path, edit: Edit
) -> None:
    """--force restores beside what the home holds: a failure mixes nothing into it."""
    home.environments.create("mine", LOCAL)
    home.memories.add(NewMemory(content="Uses Neovim"), LOCAL, "mine")
    home.soul.set_block("communication_style", LOCAL, text="Be thorough.")
    before = _collections(home)
    crafted = _crafted(archive, tmp_path / "crafted.zip", "handoffs", edit)
    with pytest.raises((InvalidInput, Conflict), match="archive collection 'handoffs'"):
        home.archive.restore(read_input(crafted), LOCAL, force=True)
    assert _collections(home) == before
    assert [e.name for e in home.store.list_environments()] == ["mine"]


def test_the_cli_names_the_record_and_the_home_takes_the_archive_after(
    archive: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    crafted = _crafted(archive, tmp_path / "crafted.zip", "handoffs", _malformed)
    dst = str(tmp_path / "dst")
    assert main(["--home", dst, "import", str(crafted)]) != 0
    err = capsys.readouterr().err
    assert "archive collection 'handoffs', record 2 (id 'hnd_bad')" in err
    assert "summary" in err and "nothing restored" in err
    (tmp_path / "good.zip").write_bytes(archive)
    assert main(["--home", dst, "import", str(tmp_path / "good.zip")]) == 0
    assert "restored and verified" in capsys.readouterr().out
