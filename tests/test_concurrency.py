from __future__ import annotations

import threading
from pathlib import Path

from engram import LOCAL, Engram, NewMemory
from engram.store.sqlite import SQLiteStore


def test_concurrent_writers_and_readers_lose_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db")
    engram = Engram(store)
    engram.environments.ensure_default(LOCAL)
    errors: list[BaseException] = []
    written: list[str] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        try:
            for i in range(100):
                m = engram.memories.add(NewMemory(content=f"writer {n} item {i}"), LOCAL)
                with lock:
                    written.append(m.id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(50):
                engram.memories.list_memories(LOCAL, limit=10)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    threads += [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(written) == 800 and len(set(written)) == 800
    assert engram.memories.list_memories(LOCAL).total == 800
    assert len(store.get(written)) == 800
    store.close()


def test_two_stores_on_one_file_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    ea, eb = Engram(a), Engram(b)
    m = ea.memories.add(NewMemory(content="written by a"), LOCAL)
    assert eb.memories.get(m.id, LOCAL).content == "written by a"
    a.close()
    b.close()
