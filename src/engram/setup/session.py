"""One run of ``engram setup``: which agents, the plan for each, its text, and applying it."""

from __future__ import annotations

import difflib
import shutil
import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engram.config import DEFAULT_HOST, DEFAULT_PORT
from engram.hooks.install import hook_executable
from engram.setup import formats, unit
from engram.setup import plan as planning
from engram.setup.agents import AGENTS, AgentId, detect
from engram.setup.mcp_entries import Launch
from engram.setup.plan import (
    FileChange,
    Wiring,
    install_plan,
    newly_trusted,
    note,
    read_record,
    record_path,
    uninstall_plan,
)


@dataclass
class AgentPlan:
    agent: AgentId
    found: str | None
    """Why the agent counts as installed (None: named with --agent, not found)."""
    changes: list[FileChange]
    note: str | None = None

    @property
    def pending(self) -> list[FileChange]:
        return [c for c in self.changes if c.action != "unchanged"]


def engram_executable() -> str:
    """The ``engram`` command beside this Python (a venv's bin), else the one on PATH."""
    beside = Path(sys.executable).parent / "engram"
    if beside.exists():
        return str(beside)
    return shutil.which("engram") or "engram"


DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def server_url(url: str) -> str:
    url = url.rstrip("/")
    return url.removesuffix("/mcp")


def is_local(url: str) -> bool:
    """Whether ``url`` names a server on this machine (a loopback address)."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    return host in _LOOPBACK


def server_of(url: str | None, env: Mapping[str, str], platform: str) -> str:
    """The server that setup, ``hooks install`` and doctor wire and check: ``url`` (``--url``,
    else ``ENGRAM_URL``), else the address the installed ``engram service`` binds, else the
    default (127.0.0.1:8765)."""
    if url:
        return server_url(url)
    address = unit.installed_address(env, platform)
    if address is None:
        return DEFAULT_URL
    host, port = address
    host = DEFAULT_HOST if host in ("0.0.0.0", "::", "") else host
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def hook_settings(engram_home: Path, server: str) -> dict[str, str]:
    """What every hook command carries: this data directory, and the server to post to unless
    it is the default (an agent started from a desktop launcher inherits no ENGRAM_URL)."""
    settings = {"ENGRAM_HOME": str(engram_home)}
    if server != DEFAULT_URL:
        settings["ENGRAM_URL"] = server
    return settings


def make_wiring(
    engram_home: Path, server: str, trust: Sequence[Path], env: Mapping[str, str] | None = None
) -> Wiring:
    """On this machine (``server`` is a loopback address): clients launch ``engram mcp`` on this
    home, with the installing shell's model cache, embedder and database (``env``: its
    environment; a database URL with a password is left out, ``unit.spec_env``; a desktop app
    inherits none of them, and without the cache its first call distilled the model again),
    hooks post to ``server``. Remote: clients and hooks reach ``server``, the key read from
    ENGRAM_TOKEN."""
    launch = Launch(
        command=engram_executable(),
        args=("mcp",),
        env=unit.spec_env(engram_home, env or {}, client=True),
        url=f"{server}/mcp",
    )
    settings = hook_settings(engram_home, server)
    return Wiring(launch, not is_local(server), hook_executable(), settings, tuple(trust))


def git_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def chosen(
    names: Sequence[AgentId] | None, env: Mapping[str, str], platform: str
) -> dict[AgentId, str | None]:
    found = detect(env, platform)
    if names:
        return {a: found.get(a) for a in names}
    return dict(found)


def build(
    agents: Mapping[AgentId, str | None], wiring: Wiring, env: Mapping[str, str], platform: str
) -> list[AgentPlan]:
    return [
        AgentPlan(a, why, install_plan(a, wiring, env, platform), note(a, wiring))
        for a, why in agents.items()
    ]


def build_uninstall(
    agents: Mapping[AgentId, str | None], env: Mapping[str, str], platform: str, engram_home: Path
) -> list[AgentPlan]:
    record = read_record(engram_home)
    return [
        AgentPlan(a, why, uninstall_plan(a, env, platform, record)) for a, why in agents.items()
    ]


def _short(path: Path, env: Mapping[str, str]) -> str:
    home = env.get("HOME")
    if home and path.is_relative_to(home):
        return "~/" + str(path.relative_to(home))
    return str(path)


def render(plans: Sequence[AgentPlan], env: Mapping[str, str], *, diff: bool = False) -> list[str]:
    """The plan as numbered lines, one block per agent."""
    lines: list[str] = []
    for number, p in enumerate(plans, 1):
        why = p.found or "not found; named with --agent"
        lines.append(f"{number}. {AGENTS[p.agent].title} ({why})")
        if p.note:
            lines.append(f"     note: {p.note}")
        if not p.pending:
            lines.append("     already set up: nothing to change")
        for change in p.pending:
            lines.append(f"     {change.action} {_short(change.path, env)}")
            lines += [f"       - {w}" for w in change.what]
            if diff:
                lines += [
                    "       " + line.rstrip("\n")
                    for line in difflib.unified_diff(
                        (change.before or "").splitlines(keepends=True),
                        (change.after or "").splitlines(keepends=True),
                        "before",
                        "after",
                    )
                ]
    return lines


def pick(plans: Sequence[AgentPlan], answer: str) -> list[AgentPlan]:
    """The plans an answer selects: ``y`` (all), or agent numbers (``1 3``, ``1,3``)."""
    answer = answer.strip().lower()
    if answer in ("y", "yes", "a", "all"):
        return list(plans)
    if answer in ("", "n", "no", "q"):
        return []
    picked: list[AgentPlan] = []
    for word in answer.replace(",", " ").split():
        if not word.isdigit() or not 1 <= int(word) <= len(plans):
            raise formats.ConfigError(
                f"{word!r} is not one of the numbers 1-{len(plans)}; nothing changed"
            )
        if plans[int(word) - 1] not in picked:
            picked.append(plans[int(word) - 1])
    return picked


def apply(
    plans: Sequence[AgentPlan], engram_home: Path, *, uninstall: bool = False
) -> list[tuple[FileChange, Path | None]]:
    """Write the plans' changes (each file backed up first) and remember the trusted folders
    setup added, so that uninstall removes only those."""
    changes = [c for p in plans for c in p.pending]
    added = newly_trusted(changes) if not uninstall else []
    done = planning.apply(changes)
    record = read_record(engram_home)
    trusted = [str(t) for t in record.get("gemini_trusted", [])]
    if uninstall and any(p.agent is AgentId.GEMINI for p in plans):
        trusted = []
    trusted += [t for t in added if t not in trusted]
    if trusted != record.get("gemini_trusted", []):
        record["gemini_trusted"] = trusted
        if not trusted:
            del record["gemini_trusted"]
        path = record_path(engram_home)
        if record:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(formats.dump_json(record), encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
    return done
