"""The data directory is 0700 and every file Engram creates is 0600, the SQLite -wal and -shm
included; an older home is repaired on the next start (issue 13, finding 5)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram import LOCAL, Engram, Settings
from engram.cli import main
from engram.models import NewMemory
from engram.store.sqlite import SQLiteStore


@pytest.fixture(autouse=True)
def _usual_umask() -> Iterator[None]:
    """The permissive umask most systems start with: modes must not rely on a stricter one."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def modes(home: Path) -> dict[str, int]:
    out = {".": mode(home)}
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            p = Path(root, name)
            out[str(p.relative_to(home))] = mode(p)
    return out


def test_a_new_home_is_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert main(["--home", str(home), "init"]) == 0
    assert main(["--home", str(home), "env", "create", "work"]) == 0
    assert main(["--home", str(home), "env", "use", "work"]) == 0
    with Engram.open(Settings.load(home)) as engram:
        engram.memories.add(NewMemory(content="the build is green"), LOCAL)
        found = modes(home)  # while open: the -wal and -shm exist
    assert {"engram.db", "engram.db-wal", "engram.db-shm", "token", "server_secret"} <= set(found)
    assert "state.json" in found
    assert found["."] == 0o700
    assert {k: v for k, v in found.items() if k != "." and v != 0o600} == {}


def test_an_existing_home_is_repaired_on_the_next_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Engram.open(Settings.load(home)) as engram:
        engram.memories.add(NewMemory(content="the build is green"), LOCAL)
    (home / "cache").mkdir()
    (home / "cache" / "page.json").write_text("{}")
    for p in [home, *home.rglob("*")]:  # as an older version left it
        p.chmod(0o755 if p.is_dir() else 0o644)
    assert mode(home / "engram.db") == 0o644
    with Engram.open(Settings.load(home)) as engram:
        engram.memories.add(NewMemory(content="the deploy is red"), LOCAL)
        found = modes(home)
    assert found["."] == 0o700 and found["cache"] == 0o700
    assert {k: v for k, v in found.items() if k not in (".", "cache") and v != 0o600} == {}


def test_a_sqlite_store_anywhere_keeps_its_files_0600(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "memories.db"
    store = SQLiteStore(path)
    try:
        Engram(store).memories.add(NewMemory(content="the build is green"), LOCAL)
        for suffix in ("", "-wal", "-shm"):
            assert mode(Path(f"{path}{suffix}")) == 0o600, suffix
    finally:
        store.close()
