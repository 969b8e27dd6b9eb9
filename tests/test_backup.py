"""engram backup / restore-backup: a consistent copy of a live SQLite store taken while another
process writes, restored into an empty home and checked by counts and checksums."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engram import LOCAL, Engram, Settings
from engram.cli import main
from engram.store.sqlite import backup as sqlite_backup
from tests.test_crash import CHILD


def _ids(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY seq")]
    finally:
        conn.close()


def test_backup_while_a_writer_writes_then_restore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, restored = tmp_path / "home", tmp_path / "restored"
    assert main(["--home", str(home), "init"]) == 0
    token = (home / "token").read_text().strip()
    writer = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(home / "engram.db"), ""],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    backup_db = tmp_path / "b1" / sqlite_backup.DATABASE
    try:
        before = [writer.stdout.readline().strip() for _ in range(100)]
        assert main(["--home", str(home), "backup", str(tmp_path / "b1")]) == 0
        in_backup = _ids(backup_db)
        # the writer goes on: it acknowledges writes the backup does not have
        later = next(
            (i for _ in range(100_000) if (i := writer.stdout.readline().strip()) not in in_backup),
            None,
        )
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    assert "checksums match" in capsys.readouterr().out
    assert later is not None
    # a snapshot of one moment of the writing: everything acknowledged before, nothing torn
    assert set(before) <= set(in_backup)
    live = _ids(home / "engram.db")
    assert live[: len(in_backup)] == in_backup and len(live) > len(in_backup)
    conn = sqlite3.connect(backup_db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    versions = conn.execute("SELECT count(*) FROM memory_versions").fetchone()[0]
    assert versions == len(in_backup)  # each memory came with its version
    conn.close()
    assert oct((tmp_path / "b1" / "server_secret").stat().st_mode & 0o777) == "0o600"

    assert main(["--home", str(restored), "restore-backup", str(tmp_path / "b1")]) == 0
    assert "checksums match" in capsys.readouterr().out
    assert _ids(restored / "engram.db") == in_backup
    engram = Engram.open(Settings.load(restored))
    try:
        assert engram.accounts.authenticate(token).user_id  # the backup's keys work
        listed = engram.memories.list_memories(LOCAL, limit=1)
        assert listed.total == len(in_backup)
    finally:
        engram.close()


def test_restore_refuses_a_home_that_is_not_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    assert main(["--home", str(home), "init"]) == 0
    assert main(["--home", str(home), "backup", str(tmp_path / "b")]) == 0
    assert main(["--home", str(other), "init"]) == 0
    ids_before = _ids(other / "engram.db")
    capsys.readouterr()
    assert main(["--home", str(other), "restore-backup", str(tmp_path / "b")]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert _ids(other / "engram.db") == ids_before
    # and backing up over an existing backup is refused too
    assert main(["--home", str(home), "backup", str(tmp_path / "b")]) == 2
    assert "already exists" in capsys.readouterr().err


def test_a_damaged_backup_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    assert main(["--home", str(home), "init"]) == 0
    assert main(["--home", str(home), "add", "the deploy runs on Fridays"]) == 0
    assert main(["--home", str(home), "backup", str(tmp_path / "b")]) == 0
    conn = sqlite3.connect(tmp_path / "b" / sqlite_backup.DATABASE)
    conn.execute("UPDATE memories SET content = 'the deploy runs on Mondays'")
    conn.commit()
    conn.close()
    capsys.readouterr()
    assert main(["--home", str(tmp_path / "new"), "restore-backup", str(tmp_path / "b")]) == 1
    assert "does not match the backup's manifest in: memories" in capsys.readouterr().err
    assert not (tmp_path / "new" / "engram.db").exists()


def test_postgres_stores_are_pointed_to_pg_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://engram@127.0.0.1:1/engram"
    args = ["--home", str(tmp_path), "--database-url", url]
    assert main([*args, "backup", str(tmp_path / "b")]) == 2
    assert "pg_dump" in capsys.readouterr().err
    assert main([*args, "restore-backup", str(tmp_path / "b")]) == 2
    assert "pg_restore" in capsys.readouterr().err


def test_a_restored_home_reads_its_stored_provider_keys(tmp_path: Path) -> None:
    """The provider keys are encrypted with <home>/provider-keys.key: the backup carries it.
    Before, the restored home made a new key file and no stored provider key decrypted
    ('llm list' and 'llm remove' failed, the server answered 503)."""
    from pydantic import SecretStr

    from engram.extraction.providers import ProviderConfig, ProviderKind

    home, restored = tmp_path / "home", tmp_path / "restored"
    assert main(["--home", str(home), "init"]) == 0
    with Engram.open(Settings.load(home)) as engram:
        engram.providers.add(
            ProviderConfig(
                name="local",
                kind=ProviderKind.OPENAI,
                model="llama3",
                base_url="http://127.0.0.1:9/v1",
                api_key=SecretStr("sk-test-abcdefghijklmnopqrstuvwxyz0123"),
            ),
            LOCAL,
        )
    assert main(["--home", str(home), "backup", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "provider-keys.key").stat().st_mode & 0o777 == 0o600
    assert main(["--home", str(restored), "restore-backup", str(tmp_path / "b")]) == 0
    with Engram.open(Settings.load(restored)) as engram:
        key = engram.providers.get("local").api_key
        assert key is not None and key.get_secret_value().startswith("sk-test-abcdef")


def test_a_provider_whose_key_no_longer_decrypts_is_listed_and_removed(tmp_path: Path) -> None:
    """Its key file lost (a home restored without it): 'llm list' and 'llm remove' still work
    (they never decrypt); before, both failed with 'a stored provider key does not decrypt'."""
    from pydantic import SecretStr

    from engram.extraction.providers import ProviderConfig, ProviderKind

    home = tmp_path / "home"
    assert main(["--home", str(home), "init"]) == 0
    config = ProviderConfig(
        name="local", kind=ProviderKind.OPENAI, model="m", api_key=SecretStr("sk-test-0123456789")
    )
    with Engram.open(Settings.load(home)) as engram:
        engram.providers.add(config, LOCAL)
    (home / "provider-keys.key").unlink()  # lost: the next use makes another
    with Engram.open(Settings.load(home)) as engram:
        (info,) = engram.providers.describe(LOCAL)
        assert info.name == "local" and info.has_key
        assert engram.providers.remove("local", LOCAL).name == "local"
        assert engram.providers.describe(LOCAL) == []
