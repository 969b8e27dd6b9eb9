"""``engram doctor``: is everything Engram needs in place — the server reachable, the token
accepted, the model ready, each agent's wiring present and pointing at files that exist, the
hooks answering in time. Each problem comes with the command that fixes it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.capture.events import Agent
from engram.hooks import install as hooks
from engram.setup import files, formats, model
from engram.setup.agents import AGENTS, AgentId, gemini_trusted_folders, mcp_path
from engram.setup.mcp_entries import CONTAINER, NAME, McpClient

DEFAULT_URL = "http://127.0.0.1:8765"
SERVE_FIX = "engram service install (or run: engram serve)"
ENV_TOKEN = "ENGRAM_TOKEN"
HOOK_BUDGET_S = 3.0
"""Codex gives a SessionEnd hook 3 s; a hook slower than that also slows every prompt down."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    mark: str | None = None
    """How a check that is no problem (``ok``) is shown when it is not plainly ok: ``warn``
    (worth knowing; its ``fix`` says what to do) or ``skip`` (not checked, and why)."""

    @property
    def label(self) -> str:
        return self.mark or ("ok" if self.ok else "FAIL")


@dataclass(frozen=True)
class Target:
    """What the doctor checks against."""

    url: str
    token: str
    remote: bool
    engram_home: Path
    embedder: str
    model_cache: Path
    token_from: str = ""
    """Where ``token`` came from: ``ENGRAM_TOKEN``, else the owner token's file."""


def _get(url: str, token: str = "", timeout: float = 5.0) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}"} if token else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None


def server_checks(target: Target, *, needed: bool = True) -> list[Check]:
    """``needed``: something wired here posts to the server (hooks) or reaches it over HTTP; a
    local server no one needs is a warning when it does not answer."""
    fix = "check --url / ENGRAM_URL" if target.remote else SERVE_FIX
    started = time.perf_counter()
    try:
        code, body = _get(f"{target.url}/readyz")
    except (OSError, ValueError) as exc:
        if not needed:
            why = "only the hooks and HTTP clients need it; stdio clients start 'engram mcp'"
            return [Check("server", True, f"{target.url} does not answer ({why})", fix, "warn")]
        reason = getattr(exc, "reason", exc)
        return [Check("server", False, f"{target.url} does not answer ({reason})", fix)]
    took = 1000 * (time.perf_counter() - started)
    if code != 200:
        return [Check("server", False, f"{target.url}/readyz answered {code}", fix)]
    checks = [Check("server", True, f"{target.url} ready ({took:.0f} ms)")]
    if not target.token:
        where = "ENGRAM_TOKEN" if target.remote else str(target.engram_home / "token")
        token_fix = "engram setup --url URL --key KEY" if target.remote else "engram init"
        checks.append(Check("token", False, f"no token ({where})", token_fix))
        return checks
    code, body = _get(f"{target.url}/api/v1/users/me", target.token)
    if code == 200 and isinstance(body, dict):
        checks.append(Check("token", True, f"accepted: {body.get('name', '?')}"))
    elif target.token_from == ENV_TOKEN:
        file = target.engram_home / "token"
        checks.append(
            Check(
                "token",
                False,
                f"the server refused the token in the {ENV_TOKEN} environment variable "
                f"(HTTP {code}); it is used instead of {file}",
                f"set {ENV_TOKEN} to a key the server accepts (engram keys create), or unset it "
                f"to use {file}",
            )
        )
    else:
        token_fix = (
            "engram keys create (on the server), then engram setup --url URL --key KEY"
            if target.remote
            else "engram init --rotate"
        )
        where = f" in {target.token_from}" if target.token_from else ""
        checks.append(
            Check("token", False, f"the server refused the token{where} (HTTP {code})", token_fix)
        )
    return checks


def spool_checks(target: Target) -> list[Check]:
    """Whether captured events wait in the hooks' spool (not delivered yet: a problem now), and
    how many the server refused for good (set aside in ``rejected/``: a warning with their
    reasons; they are past, and the events behind them were delivered)."""
    from engram.hooks.paths import hooks_dir
    from engram.hooks.spool import Spool

    directory = hooks_dir({"ENGRAM_HOME": str(target.engram_home)})
    spool = Spool(os.path.join(directory, "spool"))
    waiting, refused = spool.count(), spool.count_rejected()
    out = [
        Check(
            "capture",
            False,
            f"{waiting} captured events wait in {spool.directory}",
            "engram hooks flush (it says why they are not delivered)",
        )
        if waiting
        else Check("capture", True, "no event waits in the spool")
    ]
    if refused:
        out.append(
            Check(
                "rejected",
                True,
                f"{refused} captured events were refused by the server for good and set aside "
                f"(they will not be delivered): {_reasons(spool.rejected_dir)}",
                f"read them in {spool.rejected_dir} (each file's 'reason'); once read, clear "
                f"them: rm -r {spool.rejected_dir}",
                mark="warn",
            )
        )
    return out


REASONS_READ = 200
"""Set-aside events whose reasons the doctor reads (their count is always exact)."""


def _reasons(directory: str) -> str:
    """The most common reasons the set-aside events in ``directory`` were refused for."""
    from collections import Counter

    reasons: Counter[str] = Counter()
    for path in sorted(Path(directory).glob("*.json"))[:REASONS_READ]:
        try:
            reason = json.loads(path.read_text(encoding="utf-8")).get("reason")
        except (OSError, ValueError, AttributeError):
            reason = None
        reasons[str(reason)[:160] if reason else "unreadable"] += 1
    return "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(3))


def model_check(target: Target) -> Check:
    if target.remote:
        return Check("model", True, "the remote server embeds")
    st = model.state(target.embedder, target.model_cache)
    return Check(
        "model", st.ready, st.detail, None if st.ready else "engram setup (or: engram init)"
    )


def _parse(command: str) -> tuple[dict[str, str], str | None]:
    """A hook command's ``VAR=value`` prefix and the program it runs."""
    try:
        words = shlex.split(command)
    except ValueError:
        return {}, None
    settings: dict[str, str] = {}
    for i, word in enumerate(words):
        key, sep, value = word.partition("=")
        if not (sep and key.isidentifier()):
            return settings, words[i]
        settings[key] = value
    return settings, None


def _exists(program: str | None, env: Mapping[str, str]) -> bool:
    if not program:
        return False
    if os.sep in program:
        return Path(program).is_file() and os.access(program, os.X_OK)
    return shutil.which(program, path=env.get("PATH")) is not None


def _mcp_entry(agent: AgentId, path: Path) -> Any:
    text = files.read(path)
    if AGENTS[agent].client is McpClient.CODEX:
        data = formats.parse_toml(path, text)
        return formats.get_entry(data, ("mcp_servers",), NAME)
    return formats.get_entry(
        formats.parse_json(path, text), (CONTAINER[AGENTS[agent].client],), NAME
    )


def is_wired(agent: AgentId, env: Mapping[str, str], platform: str) -> bool:
    """Whether any of Engram's wiring is in ``agent``'s files (its MCP entry or its hooks); a
    file that cannot be read counts as wired, so that its checks say why."""
    try:
        if isinstance(_mcp_entry(agent, mcp_path(agent, env, platform)), dict):
            return True
    except formats.ConfigError:
        return True
    info = AGENTS[agent]
    if info.hooks is None:
        return False
    st = hooks.status(info.hooks, env)
    return bool(st.installed) or st.error is not None


def not_wired(agent: AgentId, found: str) -> Check:
    """An agent installed here that setup did not wire (or whose wiring was removed)."""
    return Check(
        agent.value,
        True,
        f"not wired to Engram ({found}); to wire it: engram setup --agent {agent.value}",
        mark="skip",
    )


def agent_checks(agent: AgentId, env: Mapping[str, str], platform: str, cwd: Path) -> list[Check]:
    info = AGENTS[agent]
    fix = f"engram setup --agent {agent.value}"
    out: list[Check] = []
    path = mcp_path(agent, env, platform)
    try:
        found = _mcp_entry(agent, path)
    except formats.ConfigError as exc:
        return [Check(f"{agent.value} mcp", False, exc.message, f"fix {path}, then {fix}")]
    if not isinstance(found, dict):
        out.append(Check(f"{agent.value} mcp", False, f"no {NAME!r} server in {path}", fix))
    else:
        command = found.get("command")
        program = command[0] if isinstance(command, list) and command else command
        home = (found.get("env") or found.get("environment") or {}).get("ENGRAM_HOME")
        if isinstance(program, str) and not _exists(program, env):
            out.append(
                Check(
                    f"{agent.value} mcp", False, f"{path} runs {program}, which does not exist", fix
                )
            )
        elif isinstance(home, str) and not Path(home).is_dir():
            out.append(
                Check(
                    f"{agent.value} mcp",
                    False,
                    f"{path} names ENGRAM_HOME={home}, which does not exist",
                    f"engram --home {home} init",
                )
            )
        else:
            what = program or found.get("url") or found.get("httpUrl") or found.get("serverUrl")
            out.append(Check(f"{agent.value} mcp", True, f"{path} → {what}"))
    if info.hooks is not None:
        out.append(_hook_check(info.hooks, agent, env, fix))
    if agent is AgentId.GEMINI:
        out.append(_trust_check(env, cwd, fix))
    return out


_PLUGIN_ENV = "const ENV = { ...process.env, ..."


def _hook_command(agent: Agent, env: Mapping[str, str]) -> str | None:
    path = hooks.config_path(agent, env)
    text = files.read(path)
    if text is None:
        return None
    if agent is Agent.OPENCODE:
        argv: list[Any] | None = None
        settings: dict[str, Any] = {}
        for line in text.splitlines():
            if line.startswith("const HOOK = "):
                hook = json.loads(line.removeprefix("const HOOK = ").rstrip(";"))
                argv = hook if isinstance(hook, list) else [hook]  # a list since -I -S
            elif line.startswith(_PLUGIN_ENV):  # what the plugin passes to the hook
                found = json.loads(line.removeprefix(_PLUGIN_ENV).removesuffix(" };"))
                settings = found if isinstance(found, dict) else {}
        if argv is None:
            return None
        executable = shlex.join([str(a) for a in argv])
        return hooks.hook_command(agent, executable, {k: str(v) for k, v in settings.items()})
    for groups in (formats.parse_json(path, text).get("hooks") or {}).values():
        for group in groups if isinstance(groups, list) else []:
            for handler in group.get("hooks", [group]) if isinstance(group, dict) else []:
                if isinstance(handler, dict) and hooks.MARK in str(handler.get("command", "")):
                    return str(handler["command"])
    return None


def _hook_check(agent: Agent, agent_id: AgentId, env: Mapping[str, str], fix: str) -> Check:
    name = f"{agent_id.value} hooks"
    st = hooks.status(agent, env)
    if st.error is not None:  # never "not wired": setup would refuse to touch it
        detail = st.error.removesuffix("; fix or move it first")
        return Check(name, False, detail, f"repair {st.path} by hand (or move it), then {fix}")
    if not st.installed:
        return Check(name, False, f"not wired in {st.path}", fix)
    command = _hook_command(agent, env)
    settings, program = _parse(command or "")
    if command is None or not _exists(program, env):
        return Check(name, False, f"{st.path} runs {program}, which does not exist", fix)
    posts_to = settings.get("ENGRAM_URL") or env.get("ENGRAM_URL") or DEFAULT_URL
    try:
        code, _body = _get(f"{posts_to.rstrip('/')}/healthz", timeout=3.0)
    except (OSError, ValueError):
        code = 0
    if code != 200:
        return Check(name, False, f"the hooks post to {posts_to}, which does not answer", SERVE_FIX)
    took, answer = time_hook(command, agent, env)
    if answer is None:
        return Check(name, False, f"{program} did not answer with JSON (in {took:.1f} s)", fix)
    if took > HOOK_BUDGET_S:
        return Check(
            name,
            False,
            f"{program} took {took:.1f} s to answer (budget {HOOK_BUDGET_S} s)",
            "check the load; engram hooks status",
        )
    return Check(
        name, True, f"{len(st.installed)} events in {st.path}; answers in {1000 * took:.0f} ms"
    )


def time_hook(command: str, agent: Agent, env: Mapping[str, str]) -> tuple[float, Any]:
    """Run a wired hook command on a session-start payload, capture off (nothing is stored);
    the seconds it took and its parsed answer (None if it printed no JSON)."""
    event = {
        Agent.CLAUDE: "SessionStart",
        Agent.CODEX: "SessionStart",
        Agent.GEMINI: "SessionStart",
        Agent.CURSOR: "sessionStart",
        Agent.OPENCODE: "session.created",
    }[agent]
    payload = json.dumps(
        {
            "hook_event_name": event,
            "session_id": "engram-doctor",
            "cwd": str(Path.cwd()),
            "source": "startup",
        }
    )
    started = time.perf_counter()
    try:
        result = subprocess.run(
            command, shell=True, input=payload, capture_output=True, text=True, timeout=30,
            env={**env, "ENGRAM_CAPTURE": "off"},
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return 30.0, None
    took = time.perf_counter() - started
    try:
        return took, json.loads(result.stdout)
    except ValueError:
        return took, None


def is_trusted(trusted: Mapping[str, Any], folder: Path) -> bool | None:
    """Gemini CLI's rule: the longest matching entry decides (TRUST_PARENT covers the entry's
    parent folder); None when no entry matches."""
    here = folder.resolve()
    best: tuple[int, Any] = (-1, None)
    for rule, level in trusted.items():
        root = Path(rule).parent if level == "TRUST_PARENT" else Path(rule)
        root = root.resolve()
        if (here == root or root in here.parents) and len(rule) > best[0]:
            best = (len(rule), level)
    if best[1] == "DO_NOT_TRUST":
        return False
    return True if best[1] in ("TRUST_FOLDER", "TRUST_PARENT") else None


def _trust_check(env: Mapping[str, str], cwd: Path, fix: str) -> Check:
    path = gemini_trusted_folders(env)
    try:
        trusted = formats.parse_json(path, files.read(path))
    except formats.ConfigError as exc:
        return Check("gemini trust", False, exc.message, f"fix {path}")
    if is_trusted(trusted, cwd):
        return Check("gemini trust", True, f"{cwd} is trusted ({path})")
    return Check(
        "gemini trust",
        False,
        f"{cwd} is not a trusted folder: Gemini CLI loads no MCP server here",
        f"{fix} --trust {cwd}",
    )
