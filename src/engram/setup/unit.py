"""``engram service``: the server as a per-user service that starts at login — a systemd
``--user`` unit on Linux (``~/.config/systemd/user/engram.service``), a launchd agent on macOS
(``~/Library/LaunchAgents/dev.engram.plist``). The file is written (backed up if it changes),
then the service manager is asked to load it; when there is none (a container, no user
session) the answer says so and how to start the server instead."""

from __future__ import annotations

import itertools
import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engram.config import DEFAULT_HOST
from engram.setup import files

LABEL = "dev.engram"
UNIT = "engram.service"
PASSED_ON = ("ENGRAM_MODEL_CACHE", "ENGRAM_EMBEDDER", "ENGRAM_DATABASE_URL")
"""Settings of the installing shell the service keeps (others: ``~/.config/engram/env``)."""

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class ServiceSpec:
    executable: str
    home: Path
    host: str
    port: int
    env: Mapping[str, str]

    @property
    def args(self) -> list[str]:
        return [
            self.executable, "--home", str(self.home), "serve",
            "--host", self.host, "--port", str(self.port),
        ]  # fmt: skip


@dataclass(frozen=True)
class ServiceResult:
    path: Path
    action: str
    """written, unchanged, removed, absent"""
    backup: Path | None
    manager: str
    """What the service manager said (or why there is none)."""
    ok: bool


def spec_env(spec_home: Path, env: Mapping[str, str], *, client: bool = False) -> dict[str, str]:
    """The settings a service (or, ``client``, an MCP client's entry) is started with. A
    client's entry never holds a database URL with a password in it: it would land in the
    client's config file (a project's .mcp.json is often committed); use a URL without one and
    libpq's ~/.pgpass."""
    out = {"ENGRAM_HOME": str(spec_home)}
    for k in PASSED_ON:
        value = env.get(k)
        if value and not (client and k == "ENGRAM_DATABASE_URL" and _has_password(value)):
            out[k] = value
    return out


def _has_password(url: str) -> bool:
    import urllib.parse

    try:
        return urllib.parse.urlsplit(url).password is not None
    except ValueError:
        return True  # unreadable: not written anywhere


def _quote(arg: str) -> str:
    if arg and not any(c in arg for c in " \t\"'\\%$;"):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def systemd_unit(spec: ServiceSpec) -> str:
    env = "".join(f"Environment={_quote(f'{k}={v}')}\n" for k, v in sorted(spec.env.items()))
    return (
        "# Written by `engram service install`; removed by `engram service uninstall`.\n"
        "[Unit]\n"
        "Description=Engram - persistent memory for AI assistants\n"
        "After=network.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={' '.join(_quote(a) for a in spec.args)}\n"
        f"{env}"
        "EnvironmentFile=-%h/.config/engram/env\n"
        "Restart=on-failure\n"
        "RestartSec=2\n"
        "NoNewPrivileges=yes\n"
        "# logs: journalctl --user -u engram\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_plist(spec: ServiceSpec, log_dir: Path) -> str:
    data = {
        "Label": LABEL,
        "ProgramArguments": spec.args,
        "EnvironmentVariables": dict(sorted(spec.env.items())),
        "RunAtLoad": True,
        "KeepAlive": True,
        "StandardOutPath": str(log_dir / "stdout.log"),
        "StandardErrorPath": str(log_dir / "stderr.log"),
        "ProcessType": "Background",
    }
    return plistlib.dumps(data).decode("utf-8")


def unit_path(env: Mapping[str, str], platform: str = sys.platform) -> Path:
    home = Path(env.get("HOME") or Path.home())
    if platform == "darwin":
        return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return config / "systemd" / "user" / UNIT


def installed_address(
    env: Mapping[str, str], platform: str = sys.platform
) -> tuple[str, int] | None:
    """The host and port the installed service's ``engram serve`` binds (from its unit or
    plist); None when no service is installed or its file does not say."""
    path = unit_path(env, platform)
    text = files.read(path)
    if text is None:
        return None
    args: list[str] = []
    try:
        if platform == "darwin":
            args = [str(a) for a in plistlib.loads(text.encode()).get("ProgramArguments", [])]
        else:
            line = next((x for x in text.splitlines() if x.startswith("ExecStart=")), "")
            args = shlex.split(line.removeprefix("ExecStart="))
    except (ValueError, plistlib.InvalidFileException):
        return None
    options = dict(itertools.pairwise(args))
    port = options.get("--port", "")
    if not port.isdigit():
        return None
    return options.get("--host", DEFAULT_HOST), int(port)


def render(spec: ServiceSpec, env: Mapping[str, str], platform: str = sys.platform) -> str:
    if platform == "darwin":
        home = Path(env.get("HOME") or Path.home())
        return launchd_plist(spec, home / "Library" / "Logs" / "engram")
    if platform.startswith("linux"):
        return systemd_unit(spec)
    raise files_error(platform)


def files_error(platform: str) -> Exception:
    from engram.errors import InvalidInput

    return InvalidInput(
        f"no per-user service manager is supported on {platform}; run 'engram serve' instead"
    )


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(args), 127, "", str(exc))


def _manager(platform: str) -> str:
    return "launchctl" if platform == "darwin" else "systemctl"


def _commands(action: str, path: Path, platform: str) -> list[list[str]]:
    if platform == "darwin":
        target = f"gui/{os.getuid()}"
        if action == "start":
            return [
                ["launchctl", "bootout", f"{target}/{LABEL}"],
                ["launchctl", "bootstrap", target, str(path)],
            ]
        if action == "stop":
            return [["launchctl", "bootout", f"{target}/{LABEL}"]]
        return [["launchctl", "print", f"{target}/{LABEL}"]]
    if action == "start":
        return [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", UNIT],
            ["systemctl", "--user", "restart", UNIT],
        ]
    if action == "stop":
        return [
            ["systemctl", "--user", "disable", "--now", UNIT],
            ["systemctl", "--user", "daemon-reload"],
        ]
    return [["systemctl", "--user", "is-active", UNIT]]


def _ask(
    action: str, path: Path, platform: str, run: Runner, env: Mapping[str, str]
) -> tuple[bool, str]:
    """Ask the service manager; (worked, what it said or why it could not)."""
    tool = _manager(platform)
    if shutil.which(tool, path=env.get("PATH")) is None:
        return False, f"{tool} is not available here"
    said: list[str] = []
    for i, command in enumerate(_commands(action, path, platform)):
        result = run(command)
        out = (result.stdout + result.stderr).strip()
        first = out.splitlines()[0] if out else ""
        if result.returncode != 0 and not (platform == "darwin" and action == "start" and i == 0):
            return (
                False,
                f"`{' '.join(command)}` failed: {first or result.returncode}",
            )
        if out:
            said.append(out.splitlines()[0])
    return True, "; ".join(said) or "ok"


def install(
    spec: ServiceSpec, env: Mapping[str, str], platform: str = sys.platform, run: Runner = _run
) -> ServiceResult:
    path = unit_path(env, platform)
    text = render(spec, env, platform)
    before = files.read(path)
    backup = files.write(path, text)
    ok, said = _ask("start", path, platform, run, env)
    if not ok:
        said += (
            f" — the {'plist' if platform == 'darwin' else 'unit'} is written, but not started; "
            "run 'engram serve' yourself (or, in a login session: "
            + (
                "launchctl bootstrap gui/$(id -u) " + str(path)
                if platform == "darwin"
                else "systemctl --user enable --now engram"
            )
            + ")"
        )
    return ServiceResult(path, "unchanged" if before == text else "written", backup, said, ok)


def status(
    env: Mapping[str, str], platform: str = sys.platform, run: Runner = _run
) -> ServiceResult:
    path = unit_path(env, platform)
    if not path.exists():
        return ServiceResult(path, "absent", None, "not installed (engram service install)", False)
    ok, said = _ask("status", path, platform, run, env)
    return ServiceResult(path, "installed", None, said, ok)


def uninstall(
    env: Mapping[str, str], platform: str = sys.platform, run: Runner = _run
) -> ServiceResult:
    path = unit_path(env, platform)
    if not path.exists():
        return ServiceResult(path, "absent", None, "not installed", True)
    ok, said = _ask("stop", path, platform, run, env)
    backup = files.write(path, None)
    return ServiceResult(path, "removed", backup, said, ok)
