"""Hostile and broken files: each gets a clear error naming the file and the entry, and the
store is left as it was."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest

from engram import LOCAL, Engram
from engram.errors import InvalidInput
from engram.models import MemoryFilter
from engram.portability.reading import Limits, read_input
from tests import export_fixtures as fx


def _refused(engram: Engram, path: Path, match: str) -> None:
    before = engram.store.count(MemoryFilter())
    with pytest.raises(InvalidInput, match=match) as err:
        engram.imports.read(path)
    assert str(path) in err.value.message
    assert f"{path.name}: {path.name}:" not in err.value.message  # a plain file named once
    assert engram.store.count(MemoryFilter()) == before


def test_zip_bomb(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", b"[" + b" " * (8 * 2**20) + b"]")
    _refused(engram, path, r"conversations\.json: compressed \d+:1 — refused as a zip bomb")


def test_entry_larger_than_its_header_says(engram: Engram, tmp_path: Path) -> None:
    """A header that declares 100 bytes for an 8 MiB entry: the capped read notices."""
    path = tmp_path / "liar.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", b"[" + b" " * (8 * 2**20) + b"]")
    data = bytearray(path.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, 100)  # uncompressed size, local header
    struct.pack_into("<I", data, central + 24, 100)  # and in the central directory
    path.write_bytes(bytes(data))
    _refused(
        engram, path, r"liar\.zip: conversations\.json: (larger than its header|cannot be read)"
    )


def test_path_traversal(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("conversations.json", "[]")
        z.writestr("../../etc/cron.d/evil.json", "[]")
    _refused(engram, path, r"\.\./\.\./etc/cron\.d/evil\.json: .*path traversal")


def test_huge_json(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_bytes(b"[" + b" " * 3000 + b"]")
    with pytest.raises(InvalidInput, match=r"conversations\.json: .*larger than the 0 MiB"):
        read_input(path, Limits(max_entry_bytes=1000))


def test_invalid_utf8(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("conversations.json", b'[{"title": "caf\xe9"}]')
    _refused(engram, path, r"export\.zip: conversations\.json: not valid UTF-8 at byte 15")


def test_deep_nesting(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    _refused(engram, path, r"deep\.json: JSON nested too deeply")


def test_truncated_json(engram: Engram, tmp_path: Path) -> None:
    full = json.dumps([fx.chatgpt_branched()])
    path = tmp_path / "conversations.json"
    path.write_text(full[: len(full) // 2])
    _refused(engram, path, r"conversations\.json: not valid JSON \(truncated\?\)")


def test_truncated_zip(engram: Engram, tmp_path: Path) -> None:
    whole = fx.chatgpt_export(tmp_path / "whole.zip").read_bytes()
    path = tmp_path / "cut.zip"
    path.write_bytes(whole[: len(whole) // 2])
    # an interrupted download: said so (before: "not an export Engram can import")
    _refused(engram, path, r"cut\.zip: a zip whose end is missing \(truncated")


def test_wrong_format(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "photo.jpg"
    path.write_bytes(b"\xff\xd8\xff\xe0" + bytes(100))
    _refused(engram, path, r"photo\.jpg: not an export Engram can import")


def test_a_bad_entry_among_good_ones_stops_the_whole_import(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "mixed.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("conversations-000.json", json.dumps([fx.chatgpt_branched()]))
        z.writestr("conversations-001.json", "[{")
    _refused(engram, path, r"mixed\.zip: conversations-001\.json: not valid JSON")
    store = engram.extraction.conversations
    assert store.find_conversation(LOCAL.user_id, "conv-branch") is None
    assert store.count_messages("conv-branch") == 0
    assert LOCAL
