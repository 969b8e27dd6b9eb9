"""Every Soul change is a mutation like any other: it lands in the audit log."""

from __future__ import annotations

from engram import LOCAL, Engram
from engram.accounts import AuditQuery


def test_soul_changes_are_audited(engram: Engram) -> None:
    engram.environments.create("proj", LOCAL)
    engram.soul.set_block("identity", LOCAL, "A careful assistant.")
    engram.soul.set_block("current_focus", LOCAL, "Ship the importer", environment="proj")
    snap = engram.soul.snapshot(LOCAL)
    engram.soul.apply_preset("technical", LOCAL)
    engram.soul.restore_snapshot(snap.id, LOCAL)

    entries = engram.audit.query(AuditQuery(action="soul."), LOCAL)
    actions = [e.action for e in reversed(entries)]
    assert actions == [
        "soul.set_block",
        "soul.set_block",
        "soul.snapshot",
        "soul.apply_preset",
        "soul.restore_snapshot",
    ]
    proj = engram.environments.resolve("proj", LOCAL).id
    assert entries[-2].environment_id == proj
    assert entries[-1].targets == ["soul:identity"]
    assert all(e.user_id == "local" for e in entries)
