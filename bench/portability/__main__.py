"""Portability benchmark: import rate of a synthetic ChatGPT export through the full pipeline
(detection, parsing, message storage, extraction, the lifecycle), export rate per format, and
the archive round trip.

    python -m bench.portability [--conversations 2000] [--messages 20] [--memories 100000]
        [--memory-list 5000]

Runs on a SQLite file in a temporary folder, keyword-only (no embedder), like ``engram`` with
ENGRAM_EMBEDDER=none.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from engram import LOCAL, Engram
from engram.models import MemoryFilter, NewMemory, Status
from engram.portability.reading import read_input
from engram.store.sqlite import SQLiteStore

_TOPICS = ("PostgreSQL", "Redis", "tabs", "Rust", "Kubernetes", "pytest", "Lyon", "vim")


def synthetic_export(path: Path, conversations: int, messages: int) -> Path:
    """A ChatGPT export: each conversation a linear tree of ``messages`` turns."""
    convs: list[dict[str, Any]] = []
    for c in range(conversations):
        mapping: dict[str, Any] = {
            "r": {"id": "r", "parent": None, "children": [], "message": None}
        }
        parent = "r"
        for i in range(messages):
            node = f"c{c}n{i}"
            role = "user" if i % 2 == 0 else "assistant"
            topic = _TOPICS[(c + i) % len(_TOPICS)]
            text = (
                f"We decided to use {topic} for service {c} because it fits project {c % 50}."
                if role == "user"
                else f"Understood: {topic} for service {c}. Note {i} of conversation {c}."
            )
            mapping[node] = {
                "id": node,
                "parent": parent,
                "children": [],
                "message": {
                    "id": node,
                    "author": {"role": role},
                    "create_time": 1767225600.0 + c * 3600 + i,
                    "content": {"content_type": "text", "parts": [text]},
                    "weight": 1.0,
                    "recipient": "all",
                    "metadata": {},
                },
            }
            mapping[parent]["children"].append(node)
            parent = node
        convs.append(
            {
                "id": f"conv-{c}",
                "title": f"Chat {c}",
                "create_time": 1767225600.0 + c * 3600,
                "current_node": parent,
                "mapping": mapping,
            }
        )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for shard in range(0, conversations, 1000):
            z.writestr(
                f"conversations-{shard // 1000:03d}.json", json.dumps(convs[shard : shard + 1000])
            )
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=2000)
    ap.add_argument("--messages", type=int, default=20)
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--memory-list", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        export = synthetic_export(root / "chatgpt.zip", args.conversations, args.messages)
        with Engram(SQLiteStore(root / "import.db")) as engram:
            t0 = time.perf_counter()
            bundle = engram.imports.read(export)
            parsed = time.perf_counter() - t0
            report = engram.imports.commit(bundle, LOCAL)
            took = time.perf_counter() - t0
            n = bundle.message_count
            print(
                f"import: {len(bundle.conversations)} conversations, {n} messages, "
                f"parsed in {parsed:.1f} s, total {took:.1f} s = {n / took:.0f} messages/s; "
                f"{report.memories_created} memories created, {report.memories_merged} merged"
            )
            t1 = time.perf_counter()
            again = engram.imports.commit(engram.imports.read(export), LOCAL)
            print(
                f"re-import: {again.already_imported} already imported, "
                f"{again.messages_added} messages added, {time.perf_counter() - t1:.1f} s"
            )
        listing = root / "memories.txt"
        listing.write_text(
            "".join(
                f"[2026-01-{1 + i % 28:02d}] - I prefer {_TOPICS[i % len(_TOPICS)]} for task {i}\n"
                for i in range(args.memory_list)
            )
        )
        with Engram(SQLiteStore(root / "list.db")) as engram:
            t0 = time.perf_counter()
            listed = engram.imports.commit(engram.imports.read(listing), LOCAL)
            took = time.perf_counter() - t0
            n = args.memory_list
            print(
                f"memory list: {n} memories in {took:.1f} s = {n / took:.0f} memories/s; "
                f"{listed.memories_created} created, {listed.memories_merged} merged, "
                f"{listed.memories_superseded} superseding, {listed.memories_queued} queued"
            )
        with Engram(SQLiteStore(root / "export.db")) as engram:
            batch = [
                NewMemory(
                    content=f"Memory {i}: {_TOPICS[i % len(_TOPICS)]} matters for {i % 977}",
                    category="general",
                )
                for i in range(1000)
            ]
            for start in range(0, args.memories, 1000):
                engram.memories.add_many(
                    [b.model_copy(update={"content": f"{b.content} #{start}"}) for b in batch],
                    LOCAL,
                )
            count = engram.store.count(MemoryFilter(statuses=list(Status)))
            for fmt in ("json", "markdown", "xlsx", "docx", "pdf"):
                t = time.perf_counter()
                data = engram.exports.memories(fmt, LOCAL)
                dt = time.perf_counter() - t
                print(
                    f"export {fmt:<8} {count} memories in {dt:.1f} s = {count / dt:.0f}/s, "
                    f"{len(data) / 2**20:.1f} MiB"
                )
            t = time.perf_counter()
            archive = engram.archive.export(LOCAL)
            (root / "a.zip").write_bytes(archive)
            exported = time.perf_counter() - t
            with Engram(SQLiteStore(root / "restored.db")) as fresh:
                t = time.perf_counter()
                restored = fresh.archive.restore(read_input(root / "a.zip"), LOCAL)
                back = time.perf_counter() - t
                same = zipfile.ZipFile(io.BytesIO(fresh.archive.export(LOCAL)))
                first = zipfile.ZipFile(io.BytesIO(archive))
                identical = all(
                    first.read(n) == same.read(n) for n in first.namelist() if n != "manifest.json"
                )
            checks = "all match" if all(restored.checks.values()) else "DIFFER"
            print(
                f"archive: {len(archive) / 2**20:.1f} MiB written in {exported:.1f} s, "
                f"restored in {back:.1f} s; checksums {checks}; "
                f"re-export byte-identical: {identical}"
            )


if __name__ == "__main__":
    main()
