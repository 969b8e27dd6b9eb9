"""The Engram archive: everything a home holds, in a documented, versioned format.

A zip with ``manifest.json`` and one JSON Lines file per collection (``<name>.jsonl``). Each
line is one record as canonical JSON (sorted keys, no spaces, UTF-8); lines are sorted, so the
same content always gives the same bytes. The manifest records the format and version, when
the archive was made, and per collection its file, line count and the SHA-256 of the file.
Export, import into an empty home and export again give byte-identical collection files.

Version 1 collections (each optional; an absent one is empty):

=================  ===========================================================================
users              ``User`` (no password hashes, no API keys: those stay with the home)
environments       ``Environment``
members            ``Member``
memories           ``{"memory": Memory, "versions": [MemoryVersion, …]}``
vectors            ``{"model", "memory_id", "content_hash", "vector": base64 float32}`` (opt-in)
soul               ``{"owner", "version": SoulBlockVersion}``
soul_snapshots     ``{"owner", "snapshot": SoulSnapshot}``
conversations      ``{"conversation", "state": ExtractionState, "messages": [Message, …]}``
reviews            ``ReviewItem``
audit              ``AuditEntry``
imports            ``{"environment_id", "key", "target"}`` (the import ledger)
settings           ``{"kind", "name", "value"}``: the home's settings kept in the store, today
                   ``llm_provider`` (``value``: kind, base_url, model, timeout, created_at; the
                   API key stays with the home). Whole-home archives only.
handoffs           ``Handoff`` (every state: open, accepted, expired, cancelled)
profile            ``{"kind": "learning", "user_id", "enabled"}`` and ``{"kind": "entry",
                   "entry": {"id", "user_id", "key", "text", "projects", "stated_global",
                   "created_at", "updated_at"}}``: each user's cross-project habits
=================  ===========================================================================
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engram.portability.reading import Entry

FORMAT = "engram-archive"
VERSION = 1
COLLECTIONS = (
    "users",
    "environments",
    "members",
    "memories",
    "vectors",
    "soul",
    "soul_snapshots",
    "conversations",
    "reviews",
    "audit",
    "imports",
    "settings",
    "handoffs",
    "profile",
)
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed zip entry times: the same content, the same bytes


@dataclass(frozen=True)
class Collection:
    name: str
    lines: list[str]
    """Canonical JSON, sorted."""

    @property
    def body(self) -> bytes:
        return "".join(line + "\n" for line in self.lines).encode()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def collection(name: str, records: Iterable[Any]) -> Collection:
    return Collection(name, sorted(canonical(r) for r in records))


def write(collections: list[Collection], created_at: datetime, scope: str = "all") -> bytes:
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "created_at": created_at.isoformat(),
        "scope": scope,
        "collections": {
            c.name: {"file": f"{c.name}.jsonl", "count": len(c.lines), "sha256": c.sha256}
            for c in collections
        },
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("manifest.json", _EPOCH), json.dumps(manifest, indent=2))
        for c in collections:
            info = zipfile.ZipInfo(f"{c.name}.jsonl", _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, c.body)
    return out.getvalue()


def read(entries: list[Entry]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The manifest and each collection's records, checked against the manifest's counts and
    checksums. A newer version, a missing file or a mismatch is an error naming the entry."""
    by_name = {e.basename: e for e in entries}
    manifest_entry = by_name["manifest.json"]
    manifest = json.loads(manifest_entry.data)
    if manifest.get("version") != VERSION:
        raise manifest_entry.fail(
            f"archive version {manifest.get('version')!r}; this Engram reads version {VERSION}"
        )
    out: dict[str, list[Any]] = {}
    for name, info in manifest.get("collections", {}).items():
        if name not in COLLECTIONS:
            raise manifest_entry.fail(f"unknown collection {name!r}")
        entry = by_name.get(str(info.get("file")))
        if entry is None:
            raise manifest_entry.fail(f"collection {name!r}: {info.get('file')} is missing")
        if hashlib.sha256(entry.data).hexdigest() != info.get("sha256"):
            raise entry.fail("checksum does not match the manifest (damaged or edited)")
        try:
            records = [json.loads(line) for line in entry.data.decode("utf-8").splitlines()]
        except (UnicodeDecodeError, ValueError) as exc:
            raise entry.fail(f"not valid JSON Lines: {exc}") from exc
        if len(records) != info.get("count"):
            raise entry.fail(f"{len(records)} records; the manifest says {info.get('count')}")
        out[name] = records
    return manifest, out
