"""engram service: the systemd --user unit and the launchd plist it writes (checked by
systemd-analyze and plistlib), and what it says when there is no service manager."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engram.setup import unit

ENGRAM = Path(sys.executable).parent / "engram"


def _spec(home: Path) -> unit.ServiceSpec:
    env = {"ENGRAM_MODEL_CACHE": "/var/cache/engram models", "OTHER": "x"}
    return unit.ServiceSpec(str(ENGRAM), home, "127.0.0.1", 8765, unit.spec_env(home, env))


def test_the_systemd_unit_runs_this_engram_on_this_home(tmp_path: Path) -> None:
    home = tmp_path / "data dir"
    text = unit.systemd_unit(_spec(home))
    lines = text.splitlines()
    assert f'ExecStart={ENGRAM} --home "{home}" serve --host 127.0.0.1 --port 8765' in lines
    assert f'Environment="ENGRAM_HOME={home}"' in lines
    assert 'Environment="ENGRAM_MODEL_CACHE=/var/cache/engram models"' in lines
    assert not any("OTHER" in line for line in lines)
    assert "WantedBy=default.target" in lines and "Restart=on-failure" in lines
    if shutil.which("systemd-analyze"):
        path = tmp_path / "engram.service"
        path.write_text(text)
        checked = subprocess.run(
            ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
        )
        assert checked.returncode == 0 and checked.stderr == "", checked.stderr


def test_systemd_analyze_would_catch_a_broken_unit(tmp_path: Path) -> None:
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed")
    path = tmp_path / "engram.service"
    path.write_text(unit.systemd_unit(_spec(tmp_path)).replace(str(ENGRAM), "/nonexistent/engram"))
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode != 0 and "/nonexistent/engram" in checked.stderr


def test_the_launchd_plist_is_a_valid_property_list(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    text = unit.render(spec, {"HOME": "/Users/me"}, "darwin")
    data = plistlib.loads(text.encode())
    assert data["Label"] == "dev.engram" and data["RunAtLoad"] and data["KeepAlive"]
    assert data["ProgramArguments"] == [str(ENGRAM), "--home", str(tmp_path), "serve",
                                        "--host", "127.0.0.1", "--port", "8765"]  # fmt: skip
    assert data["EnvironmentVariables"]["ENGRAM_HOME"] == str(tmp_path)
    assert data["StandardErrorPath"] == "/Users/me/Library/Logs/engram/stderr.log"
    assert unit.unit_path({"HOME": "/Users/me"}, "darwin") == Path(
        "/Users/me/Library/LaunchAgents/dev.engram.plist"
    )


def _cli(tmp_path: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": path,
        "ENGRAM_HOME": str(tmp_path / "engram"),
        "ENGRAM_MODEL_CACHE": os.environ.get("ENGRAM_MODEL_CACHE", ""),
    }
    return subprocess.run(
        [str(ENGRAM), "service", *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the systemd unit is Linux's")
def test_without_systemctl_the_unit_is_written_and_the_warning_says_how_to_start(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = _cli(tmp_path, str(empty), "install")
    assert result.returncode == 0, result.stderr
    path = tmp_path / "home" / ".config" / "systemd" / "user" / "engram.service"
    assert f"{path}: written" in result.stdout
    assert "systemctl is not available here" in result.stderr
    assert "run 'engram serve' yourself" in result.stderr
    assert f"--home {tmp_path / 'engram'} serve" in path.read_text()
    again = _cli(tmp_path, str(empty), "install")
    assert f"{path}: unchanged" in again.stdout
    status = _cli(tmp_path, str(empty), "status")
    assert status.returncode == 1 and "systemctl is not available here" in status.stderr
    removed = _cli(tmp_path, str(empty), "uninstall")
    assert f"{path}: removed (backup: " in removed.stdout and not path.exists()
    assert _cli(tmp_path, str(empty), "status").returncode == 1


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="no systemctl")
def test_a_systemctl_without_a_user_session_is_reported(tmp_path: Path) -> None:
    probe = subprocess.run(
        ["systemctl", "--user", "is-system-running"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode == 0:
        pytest.skip("this machine has a running user manager")
    result = _cli(tmp_path, "/usr/bin:/bin", "install")
    assert result.returncode == 0
    assert "`systemctl --user daemon-reload` failed" in result.stderr
    assert "the unit is written, but not started" in result.stderr
