"""engram doctor against a real server and a fake HOME wired by engram setup: all good, then
each thing broken in turn is reported with the command that fixes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram import Engram, Settings
from engram.cli import main
from engram.cli.keys import bootstrap
from tests.live_server import free_port, serve


@pytest.fixture
def wired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    home = tmp_path / "home"
    for name in (
        "XDG_CONFIG_HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "ENGRAM_TOKEN",
        "ENGRAM_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    engram_home = tmp_path / "engram"
    monkeypatch.setenv("ENGRAM_HOME", str(engram_home))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    for folder in (".claude", ".gemini", ".config/opencode", ".cursor"):
        (home / folder).mkdir(parents=True)
    engram = Engram.open(Settings.load(engram_home))
    assert bootstrap(engram, engram_home) is not None
    with serve(engram) as url:
        monkeypatch.setenv("ENGRAM_URL", url)  # what the agents pass on to their hooks
        assert main(["setup", "--yes"]) == 0
        yield home, url
    engram.close()


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def test_all_good_after_setup(wired: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    _home, url = wired
    code, out = doctor(capsys, "--url", url)
    assert code == 0, out
    assert "All good." in out and "FAIL" not in out
    for name in ("server", "token", "model", "claude mcp", "claude hooks", "gemini trust",
                 "opencode hooks", "cursor hooks"):  # fmt: skip
        assert f"ok   {name}:" in out, out
    assert "answers in" in out


def test_a_server_that_is_down(wired: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = doctor(capsys, "--url", f"http://127.0.0.1:{free_port()}")
    assert code == 1
    assert "FAIL server:" in out and "fix: engram service install (or run: engram serve)" in out


def test_hooks_that_post_to_a_server_that_is_down(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _home, url = wired
    down = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ENGRAM_URL", down)
    assert main(["setup", "--yes"]) == 0  # the hooks now carry ENGRAM_URL={down}
    code, out = doctor(capsys, "--url", url)
    assert code == 1 and "ok   server:" in out
    assert f"FAIL claude hooks: the hooks post to {down}, which does not answer" in out


def test_a_refused_token(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _home, url = wired
    import os

    token = Path(os.environ["ENGRAM_HOME"]) / "token"
    monkeypatch.setenv("ENGRAM_TOKEN", "egm_not_a_real_key")
    code, out = doctor(capsys, "--url", url)
    assert code == 1
    assert (
        "FAIL token: the server refused the token in the ENGRAM_TOKEN environment variable "
        f"(HTTP 401); it is used instead of {token}"
    ) in out
    assert "fix: set ENGRAM_TOKEN to a key the server accepts (engram keys create), or " in out
    assert "init --rotate" not in out  # it would replace the owner token, not ENGRAM_TOKEN
    monkeypatch.delenv("ENGRAM_TOKEN")
    token.write_text("egm_not_the_owner_token\n")
    code, out = doctor(capsys, "--url", url)
    assert code == 1
    assert f"FAIL token: the server refused the token in {token} (HTTP 401)" in out
    assert "fix: engram init --rotate" in out


def test_wiring_that_points_at_missing_files(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home, url = wired
    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    for groups in data["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = "/nonexistent/engram-hook claude"
    settings.write_text(json.dumps(data))
    claude = home / ".claude.json"
    entry = json.loads(claude.read_text())
    entry["mcpServers"]["engram"]["env"]["ENGRAM_HOME"] = str(tmp_path / "gone")
    claude.write_text(json.dumps(entry))
    (home / ".cursor" / "mcp.json").unlink()
    code, out = doctor(capsys, "--url", url)
    assert code == 1
    assert "FAIL claude hooks:" in out and "runs /nonexistent/engram-hook, which does not" in out
    assert f"names ENGRAM_HOME={tmp_path / 'gone'}, which does not exist" in out
    assert f"fix: engram --home {tmp_path / 'gone'} init" in out
    assert "FAIL cursor mcp: no 'engram' server in" in out
    assert out.count("fix: engram setup --agent claude") == 1
    assert "fix: engram setup --agent cursor" in out
    assert main(["setup", "--yes"]) == 0
    code, out = doctor(capsys, "--url", url)
    assert code == 0, out


def test_a_model_not_prepared_and_an_untrusted_folder(
    wired: tuple[Path, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    home, url = wired
    monkeypatch.setenv("ENGRAM_EMBEDDER", "default")
    monkeypatch.setenv("ENGRAM_MODEL_CACHE", str(tmp_path / "empty-cache"))
    (home / ".gemini" / "trustedFolders.json").write_text("{}")
    code, out = doctor(capsys, "--url", url)
    assert code == 1
    assert "FAIL model: default model not prepared yet" in out
    assert "fix: engram setup (or: engram init)" in out
    assert f"FAIL gemini trust: {Path.cwd()} is not a trusted folder" in out
    assert f"fix: engram setup --agent gemini --trust {Path.cwd()}" in out


def test_the_installed_service_port_is_checked_without_engram_url(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from engram.setup import unit

    _home, url = wired
    port = int(url.rsplit(":", 1)[1])
    monkeypatch.delenv("ENGRAM_URL")
    # the unit 'engram service install --port N' writes (not started: no systemctl in a test)
    spec = unit.ServiceSpec("engram", Path(os.environ["ENGRAM_HOME"]), "127.0.0.1", port, {})
    path = unit.unit_path(os.environ, "linux")
    path.parent.mkdir(parents=True)
    path.write_text(unit.systemd_unit(spec))
    code, out = doctor(capsys)
    assert f"ok   server: {url} ready" in out, out
    assert main(["setup", "--yes"]) == 0  # the hooks carry that port as well
    code, out = doctor(capsys)
    assert code == 0, out


def test_agents_not_wired_are_listed_not_failed(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    home, url = wired
    (home / ".codex").mkdir()  # installed after setup, never wired
    assert main(["setup", "--uninstall", "--yes", "--agent", "cursor", "--agent", "opencode"]) == 0
    code, out = doctor(capsys, "--url", url)
    assert code == 0, out
    assert "All good." in out and "FAIL" not in out
    for name in ("codex", "cursor", "opencode"):
        assert f"skip {name}: not wired to Engram (" in out
        assert f"to wire it: engram setup --agent {name}" in out
    assert "ok   claude hooks:" in out and "ok   gemini trust:" in out
    code, out = doctor(capsys, "--url", url, "--agent", "codex")  # named: checked in full
    assert code == 1 and "FAIL codex mcp: no 'engram' server in" in out


def test_events_refused_for_good_are_a_warning_with_their_reasons(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from engram.hooks.spool import Spool

    _home, url = wired
    spool = Spool(Path(os.environ["ENGRAM_HOME"]) / "hooks" / "spool")
    reason = "HTTP 404: environment 'env_01m8y4zg6ktxmd3q4xe3v1ca8x' does not exist"
    for key in ("claude-a1", "claude-a2"):
        spool.reject(None, {"key": key, "agent": "claude", "text": "x"}, reason)
    code, out = doctor(capsys, "--url", url)
    assert code == 0, out
    assert "ok   capture: no event waits in the spool" in out
    assert (
        "warn rejected: 2 captured events were refused by the server for good and set aside "
        f"(they will not be delivered): 2 x {reason}"
    ) in out
    assert f"clear them: rm -r {spool.rejected_dir}" in out
    assert "All good." in out


def test_a_settings_file_that_is_not_json_is_named_with_its_line(
    wired: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    home, url = wired
    settings = home / ".claude" / "settings.json"
    broken = '{"theme": "dark", // comment\n "hooks": {}\n'
    settings.write_text(broken)
    code, out = doctor(capsys, "--url", url)
    assert code == 1
    assert f"FAIL claude hooks: {settings} is not valid JSON (" in out and "line 1 column" in out
    assert f"fix: repair {settings} by hand (or move it), then engram setup --agent claude" in out
    assert "not wired" not in out
    capsys.readouterr()
    assert main(["hooks", "status", "--agent", "claude"]) == 0
    status = capsys.readouterr().out
    assert f"claude: {settings} is not valid JSON (" in status and "line 1 column" in status
    assert "fix or move it first, then engram hooks install --agent claude" in status
    assert "not installed" not in status
    assert main(["setup", "--yes", "--agent", "claude"]) == 2  # the fix refuses to overwrite it
    assert main(["hooks", "install", "--agent", "claude"]) == 2
    assert settings.read_text() == broken
