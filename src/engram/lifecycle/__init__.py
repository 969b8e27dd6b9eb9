"""The memory lifecycle without an LLM: dedup on write, contradiction and supersession, decay
and flagging, compaction of cold episodes into facts. Every change is a version with a reason,
undoable with ``restore``.

The rules live here as pure functions; :class:`engram.service.lifecycle.LifecycleService`
applies them to the store.
"""

from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.report import LifecycleEvent, MaintenanceReport, WriteAction, WriteOutcome

__all__ = ["LifecycleConfig", "LifecycleEvent", "MaintenanceReport", "WriteAction", "WriteOutcome"]
