"""The hook client as a whole process (``engram-hook``) against a real server on both backends:
capture, scrubbing, the spool (server down, then back: delivered exactly once), load shedding,
opt-out, errors that never hurt the agent, and ``engram hooks install``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engram import Engram
from engram.actors import Actor
from engram.cli.keys import bootstrap
from engram.hooks.spool import Spool
from engram.models import Layer, MemoryFilter
from tests.capture_checks import (
    PROMPT_SECRET,
    RESULT_SECRET,
    files_bytes,
    run_hook,
    stored_bytes,
)
from tests.live_server import free_port, serve

ENGRAM = Path(sys.executable).parent / "engram"


@pytest.fixture
def owner(engram: Engram, tmp_path: Path) -> tuple[Actor, Path]:
    home = tmp_path / "engram-home"
    issued = bootstrap(engram, home)
    assert issued is not None
    return engram.accounts.authenticate(issued.token), home


def _repo(tmp_path: Path, name: str = "webapp") -> Path:
    repo = tmp_path / name
    (repo / ".git").mkdir(parents=True)
    return repo


def _claude_session(repo: Path, sid: str = "s-1") -> list[dict[str, Any]]:
    base = {"session_id": sid, "cwd": str(repo), "transcript_path": "/x.jsonl"}
    return [
        {**base, "hook_event_name": "SessionStart", "source": "startup"},
        {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "<system-reminder>today is monday</system-reminder>Fix the upload race. "
            f"We use pnpm. My key is {PROMPT_SECRET} <private>the launch codes</private>",
        },
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": str(repo / "src/upload.py"), "content": "x = 1"},
            "tool_response": {"success": True},
        },
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q tests/test_upload.py"},
            "tool_response": {"stdout": f"token {RESULT_SECRET}\n1 failed", "exit_code": 1},
        },
        {
            **base,
            "hook_event_name": "Stop",
            "last_assistant_message": "I fixed the race in upload.py. Is CI green again? "
            "Next step: add a retry to the uploader.",
        },
        {**base, "hook_event_name": "SessionEnd", "reason": "other"},
    ]


def _wait(predicate: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


def test_a_session_is_captured_scrubbed_and_summarised(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    repo = _repo(tmp_path)
    with serve(engram) as url:
        env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": url, "HOME": str(tmp_path)}
        outputs = [run_hook("claude", p, env) for p in _claude_session(repo)]
        assert all(code == 0 for code, _ in outputs)
        assert all(json.loads(out) is not None for _, out in outputs)
        sessions = _wait(lambda: engram.capture.list_sessions(actor, "webapp"))
        assert len(sessions) == 1 and sessions[0].events == 6
        session = _wait(
            lambda: (
                engram.capture.get_session(sessions[0].id, actor).episode_id
                and (engram.capture.get_session(sessions[0].id, actor))
            )
        )
        assert session.episode_id
    episode = engram.memories.get(session.episode_id, actor)
    assert episode.layer is Layer.EPISODE
    assert "Fix the upload race" in episode.content
    assert "today is monday" not in episode.content  # scaffolding is not the user's words
    assert "src/upload.py" in episode.content
    assert "`pytest -q tests/test_upload.py` (failed)" in episode.content
    assert episode.episode is not None and episode.episode.agent == "claude"
    assert episode.episode.open_questions == ["Is CI green again?"]
    assert episode.metadata["capture_session"] == session.id
    # the observations stay searchable, and link back to the session
    hits = engram.capture.search("uploader retry", actor, "webapp")
    assert hits and hits[0].session == session.id
    # a preference the user stated became a fact
    prefs = engram.store.list_memories(
        MemoryFilter(environment_ids=[session.environment_id], categories=["preference"]),
        limit=10,
    )
    assert [m.content for m in prefs] == ["We use pnpm."]
    # nothing secret anywhere: database, spool, hook log
    everything = stored_bytes(engram.store) + files_bytes(home)
    for secret in (PROMPT_SECRET, RESULT_SECRET, "launch codes"):
        assert secret.encode() not in everything


def test_server_down_spools_owner_only_then_delivers_exactly_once(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    repo = _repo(tmp_path)
    port = free_port()
    env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": f"http://127.0.0.1:{port}"}
    payloads = _claude_session(repo)
    for p in payloads[:4]:  # the server is down
        code, out = run_hook("claude", p, env)
        assert code == 0
        expected = "{}"
        if p["hook_event_name"] == "SessionStart":
            expected = "{}"
        assert out.strip() == expected
    spool_dir = home / "hooks" / "spool"
    spooled = sorted(spool_dir.glob("*.json"))
    assert len(spooled) == 4
    assert stat.S_IMODE(spool_dir.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in spooled)
    assert PROMPT_SECRET.encode() not in files_bytes(home)
    assert RESULT_SECRET.encode() not in files_bytes(home)
    log = (home / "hooks" / "hook.log").read_text()
    assert "spooled" in log
    # a crash after delivery but before the spool was cleared: the same events come again
    copies = [json.loads(p.read_text()) for p in spooled]
    with serve(engram, port):
        for p in payloads[4:]:
            assert run_hook("claude", p, env)[0] == 0
        assert not list(spool_dir.glob("*.json"))
        for event in copies:
            Spool(spool_dir).put(event)
        assert run_hook("claude", {**payloads[0], "hook_event_name": "Notification"}, env)[0] == 0
        assert not list(spool_dir.glob("*.json"))
        sessions = engram.capture.list_sessions(actor, "webapp")
        assert len(sessions) == 1
        observations = engram.capture.observations(sessions[0].id, actor)
    keys = [o.key for o in observations]
    assert len(keys) == len(set(keys)) == 7  # 6 events and the notification, each once


def test_a_saturated_server_sheds_load_and_the_hook_spools(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    _, home = owner
    repo = _repo(tmp_path)
    engram.capture.max_pending = 0  # every request finds the queue full
    with serve(engram) as url:
        env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": url}
        payload = _claude_session(repo)[1]
        import httpx

        token = (home / "token").read_text().strip()
        answer = httpx.post(
            f"{url}/api/v1/capture/events",
            json={"events": [_wire_event(repo)]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert answer.status_code == 429
        assert answer.json()["error"]["code"] == "saturated"
        assert run_hook("claude", payload, env) == (0, "{}\n")
    assert len(list((home / "hooks" / "spool").glob("*.json"))) == 1


def _wire_event(repo: Path, **extra: Any) -> dict[str, Any]:
    return {
        "agent": "claude",
        "kind": "prompt",
        "session_id": "s-9",
        "cwd": str(repo),
        "at": "2026-01-01T12:00:00Z",
        "key": "claude-0123456789abcdef",
        "project": "webapp",
        "text": "hello",
        **extra,
    }


def test_bad_events_get_a_clear_error_and_store_nothing(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    repo = _repo(tmp_path)
    import httpx

    token = (home / "token").read_text().strip()
    with serve(engram) as url:
        good = _wire_event(repo)
        bad = _wire_event(repo, key="k2-0123456789", kind="exploded")
        answer = httpx.post(
            f"{url}/api/v1/capture/events",
            json={"events": [good, bad]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert answer.status_code == 422
        assert "events[1]" in answer.json()["error"]["message"]
        assert "'kind' must be one of" in answer.json()["error"]["message"]
        assert engram.store.capture.count_observations([]) == 0
        answer = httpx.post(f"{url}/api/v1/capture/events", json={"events": [good]}, timeout=60)
        assert answer.status_code == 401
    assert engram.capture.list_sessions(actor) == []


def test_the_hook_never_hurts_the_agent(tmp_path: Path) -> None:
    env = {"ENGRAM_HOME": str(tmp_path / "h"), "ENGRAM_URL": "http://127.0.0.1:9"}
    # not JSON on stdin: valid empty output, exit 0, the error in the log
    result = subprocess.run(
        [str(Path(sys.executable).parent / "engram-hook"), "codex"],
        input="{not json",
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0 and result.stdout == "{}\n"
    assert "JSONDecodeError" in (tmp_path / "h" / "hooks" / "hook.log").read_text()
    # Codex's SessionStart output always carries hookSpecificOutput with hookEventName
    code, out = run_hook(
        "codex",
        {"session_id": "c", "cwd": str(tmp_path), "hook_event_name": "SessionStart"},
        env,
    )
    assert code == 0
    assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "SessionStart"}}
    assert run_hook("nonsense", {}, env) == (0, "{}\n")
    # the agent closed the hook's stdout before it answered: still exit 0, and a log line
    hook = subprocess.Popen(
        [str(Path(sys.executable).parent / "engram-hook"), "claude"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert hook.stdout is not None and hook.stdin is not None and hook.stderr is not None
    hook.stdout.close()
    hook.stdin.write(json.dumps({"session_id": "z", "hook_event_name": "SessionStart"}).encode())
    hook.stdin.close()
    assert hook.wait(timeout=30) == 0
    assert hook.stderr.read() == b""
    hook.stderr.close()
    assert (
        "output not delivered: BrokenPipeError"
        in (tmp_path / "h" / "hooks" / "hook.log").read_text()
    )


def test_a_repository_can_opt_out_or_ignore_paths(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    quiet = _repo(tmp_path, "quiet")
    (quiet / ".engram.toml").write_text("[capture]\nenabled = false\n")
    noisy = _repo(tmp_path, "noisy")
    (noisy / ".engram.toml").write_text(
        '[capture]\nignore_paths = ["secrets/**"]\nignore_commands = ["vault *"]\n'
    )
    with serve(engram) as url:
        env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": url}
        for p in _claude_session(quiet):
            assert run_hook("claude", p, env)[0] == 0
        base = {"session_id": "n", "cwd": str(noisy)}
        run_hook(
            "claude",
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Write",
                "tool_input": {"file_path": str(noisy / "secrets/prod.env")},
            },
            env,
        )
        run_hook(
            "claude",
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "vault read secret/db"},
            },
            env,
        )
        run_hook("claude", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "hi"}, env)
        # only-opted-in mode: nothing from a repository that did not opt in
        run_hook(
            "claude",
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "again"},
            {**env, "ENGRAM_CAPTURE": "opt-in"},
        )
        engram.capture.drain()
    envs = {e.name for e in engram.environments.list(actor)}
    assert "quiet" not in envs
    sessions = engram.capture.list_sessions(actor, "noisy")
    kinds = [o.text for o in engram.capture.observations(sessions[0].id, actor)]
    assert kinds == ["hi"]


def test_an_event_refused_for_good_is_set_aside_and_never_blocks_the_others(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    webapp = _repo(tmp_path)
    pinned = _repo(tmp_path, "pinned")  # pins an environment this server does not have
    (pinned / ".engram.toml").write_text('[environment]\nid = "env_01m8y4zg6ktxmd3q4xe3v1ca8x"\n')
    port = free_port()
    env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": f"http://127.0.0.1:{port}"}
    spool_dir, rejected = home / "hooks" / "spool", home / "hooks" / "rejected"

    def prompt(repo: Path, text: str, sid: str) -> dict[str, Any]:
        return {"session_id": sid, "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
                "prompt": text}  # fmt: skip

    # the server is down: a bad event and good ones are spooled, in this order
    assert run_hook("claude", prompt(pinned, "pinned prompt", "p1"), env)[0] == 0
    assert run_hook("claude", prompt(webapp, "spooled one", "w1"), env)[0] == 0
    assert run_hook("claude", prompt(pinned, "second pinned", "p2"), env)[0] == 0
    assert run_hook("claude", prompt(webapp, "spooled two", "w1"), env)[0] == 0
    assert len(list(spool_dir.glob("*.json"))) == 4
    with serve(engram, port):
        start = {**prompt(webapp, "", "w2"), "hook_event_name": "SessionStart"}
        code, out = run_hook("claude", start, env)
        assert code == 0 and json.loads(out) is not None  # the new event got its answer
        assert not list(spool_dir.glob("*.json"))  # the good ones delivered, the bad set aside
        kept = sorted(rejected.glob("*.json"))
        assert len(kept) == 2
        assert stat.S_IMODE(rejected.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in kept)
        assert {json.loads(p.read_text())["event"]["text"] for p in kept} == {
            "pinned prompt",
            "second pinned",
        }
        assert "does not exist" in json.loads(kept[0].read_text())["reason"]
        # a new refused event, alone: set aside at once, and the next event still goes through
        assert run_hook("claude", prompt(pinned, "third pinned", "p3"), env) == (0, "{}\n")
        bad_env = {**env, "ENGRAM_ENV": "My Env"}
        assert run_hook("claude", prompt(webapp, "bad env", "w3"), bad_env)[0] == 0
        assert run_hook("claude", prompt(webapp, "after the refusals", "w4"), env)[0] == 0
        engram.capture.drain()
        texts = {o.text for o in engram.capture.search("spooled", actor, "webapp")}
        texts |= {o.text for o in engram.capture.search("refusals", actor, "webapp")}
        assert texts == {"spooled one", "spooled two", "after the refusals"}
        sessions = {s.session_id for s in engram.capture.list_sessions(actor, "webapp")}
        assert sessions == {"w1", "w2", "w3", "w4"}  # w3: in the project, ENGRAM_ENV refused
        assert len(list(rejected.glob("*.json"))) == 3
        log = (home / "hooks" / "hook.log").read_text()
        assert "refused by the server for good, set aside in" in log and "HTTP 404" in log
        assert "environment 'My Env' does not exist" in log
        # engram hooks flush says why; hooks status and doctor report the set-aside events
        Spool(spool_dir).put({**json.loads(kept[0].read_text())["event"], "key": "claude-again1"})
        cli_env = {**os.environ, **env, "HOME": str(tmp_path), "ENGRAM_EMBEDDER": "none"}

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(ENGRAM), "--home", str(home), *args],
                env=cli_env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip

        flushed = cli("hooks", "flush")
        assert flushed.returncode == 1
        assert "delivered 0 spooled events; 0 left" in flushed.stdout
        assert "refused for good, set aside in" in flushed.stdout
        assert "1 x HTTP 404: environment 'env_01m8y4zg6ktxmd3q4xe3v1ca8x' does not exist" in (
            flushed.stdout
        )
        assert "rejected: 4 events the server refused for good" in cli("hooks", "status").stdout
        doctor = cli("doctor", "--url", f"http://127.0.0.1:{port}", "--agent", "claude")
        assert "warn rejected: 4 captured events were refused by the server for good" in (
            doctor.stdout
        )


def test_a_mistyped_engram_env_is_never_created_the_project_gets_the_events(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    webapp = _repo(tmp_path)
    port = free_port()
    env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": f"http://127.0.0.1:{port}"}
    typo = {**env, "ENGRAM_ENV": "nosuch3"}

    def prompt(text: str, sid: str) -> dict[str, Any]:
        return {"session_id": sid, "cwd": str(webapp), "hook_event_name": "UserPromptSubmit",
                "prompt": text}  # fmt: skip

    assert run_hook("claude", prompt("typed while down", "t0"), typo)[0] == 0  # spooled
    engram.environments.create("shared", actor, "an environment that exists")
    with serve(engram, port):
        start = {**prompt("", "t1"), "hook_event_name": "SessionStart"}
        code, out = run_hook("claude", start, typo)
        assert code == 0 and json.loads(out) is not None
        assert run_hook("claude", prompt("mistyped env prompt", "t1"), typo)[0] == 0
        shared = {**env, "ENGRAM_ENV": "shared"}
        assert run_hook("claude", prompt("shared env prompt", "t2"), shared)[0] == 0
        engram.capture.drain()
    assert "nosuch3" not in {e.name for e in engram.environments.list(actor)}
    in_project = {s.session_id for s in engram.capture.list_sessions(actor, "webapp")}
    assert in_project == {"t0", "t1"}  # the spooled one too: set aside in the project
    assert {s.session_id for s in engram.capture.list_sessions(actor, "shared")} == {"t2"}
    assert not list((home / "hooks" / "rejected").glob("*.json"))
    log = (home / "hooks" / "hook.log").read_text()
    assert (
        "ENGRAM_ENV='nosuch3' was refused (HTTP 404: environment 'nosuch3' does not exist); "
        "captured in the project's environment (webapp) instead"
    ) in log


def test_ignore_paths_drops_reads_and_commands_that_name_an_ignored_path(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    repo = _repo(tmp_path, "ign")
    (repo / "src").mkdir()
    (repo / ".engram.toml").write_text('[capture]\nignore_paths = ["secrets/**", "*.pem"]\n')
    secret = "dbpass=letmein99"
    base = {"session_id": "ign1", "cwd": str(repo), "hook_event_name": "PostToolUse"}
    gemini = {**base, "hook_event_name": "AfterTool"}
    many, up = ["a", "secrets/b"], {"command": "cat ../secrets/x"}
    dropped = [
        ("claude", {"tool_name": "Read", "tool_input": {"file_path": str(repo / "secrets/db")}}),
        ("gemini", {**gemini, "tool_name": "read_file", "tool_input": {"absolute_path": "x.pem"}}),
        ("gemini", {**gemini, "tool_name": "read_many_files", "tool_input": {"paths": many}}),
        ("claude", {"tool_name": "Grep", "tool_input": {"pattern": "pw", "path": "secrets"}}),
        ("claude", {"tool_name": "Bash", "tool_input": {"command": "cat secrets/db.txt"}}),
        ("claude", {"tool_name": "Bash", "tool_input": {"command": "grep pw 'secrets/db'|wc"}}),
        ("codex", {"tool_name": "Bash", "tool_input": {"command": "openssl x509 -in=k/id.pem"}}),
        # from a subdirectory: ../secrets is the repository's secrets/
        ("claude", {"cwd": str(repo / "src"), "tool_name": "Bash", "tool_input": up}),
    ]  # fmt: skip
    kept = {"tool_name": "Bash", "tool_input": {"command": "cat src/app.py"}}
    with serve(engram) as url:
        env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": url}
        for agent, payload in dropped:
            event = {**base, **payload, "tool_response": {"stdout": secret, "content": secret}}
            assert run_hook(agent, event, env)[0] == 0
        assert run_hook("claude", {**base, **kept, "tool_response": {"stdout": "ok"}}, env)[0] == 0
        engram.capture.drain()
    sessions = engram.capture.list_sessions(actor, "ign")
    commands = [o.command for o in engram.capture.observations(sessions[0].id, actor)]
    assert commands == ["cat src/app.py"]
    assert secret.encode() not in stored_bytes(engram.store) + files_bytes(home)


def test_the_hook_applies_the_homes_scrub_toml_before_spooling(tmp_path: Path) -> None:
    from engram.capture.privacy import SCRUB_FILE
    from engram.scrub.config import FILE

    assert SCRUB_FILE == FILE
    home = tmp_path / "h"
    home.mkdir()
    (home / FILE).write_text(
        'allow = ["AKIAIOSFODNN7EXAMPLE"]\n[patterns]\ninternal_token = "itk_[A-Za-z0-9]{20,}"\n'
    )
    repo = _repo(tmp_path)
    env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": f"http://127.0.0.1:{free_port()}"}
    prompt = "scrubtest itk_abcdefghijklmnopqrstuvwx and docs key AKIAIOSFODNN7EXAMPLE"
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit"}
    assert run_hook("claude", {**payload, "prompt": prompt}, env) == (0, "{}\n")
    (spooled,) = (home / "hooks" / "spool").glob("*.json")
    text = json.loads(spooled.read_text())["text"]
    assert text == "scrubtest [REDACTED:internal_token] and docs key AKIAIOSFODNN7EXAMPLE"
    # a scrub.toml that is not valid: nothing is captured (as the server refuses to start)
    (home / FILE).write_text("[patterns]\nBad-Name = 'x'\n")
    assert run_hook("claude", {**payload, "prompt": "again"}, env) == (0, "{}\n")
    assert len(list((home / "hooks" / "spool").glob("*.json"))) == 1
    assert "scrub.toml" in (home / "hooks" / "hook.log").read_text()


def test_a_context_budget_above_the_maximum_is_clamped_not_refused(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    _, home = owner
    repo = _repo(tmp_path)
    start = {"session_id": "tok", "cwd": str(repo), "hook_event_name": "SessionStart"}
    with serve(engram) as url:
        env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": url, "ENGRAM_CONTEXT_TOKENS": "99999"}
        assert run_hook("claude", start, env)[0] == 0
    assert not list((home / "hooks").glob("*/*.json"))  # neither spooled nor refused
    log = (home / "hooks" / "hook.log").read_text()
    assert "ENGRAM_CONTEXT_TOKENS=99999 is outside 100-8000: 8000 is used" in log


def test_capture_off_takes_the_usual_false_values_and_fails_closed(
    engram: Engram, owner: tuple[Actor, Path], tmp_path: Path
) -> None:
    actor, home = owner
    repo = _repo(tmp_path)
    base = {"session_id": "v", "cwd": str(repo), "hook_event_name": "UserPromptSubmit"}
    with serve(engram) as url:
        env = {"ENGRAM_HOME": str(home), "ENGRAM_URL": url}
        for value in ("false", "0", "OFF", "no", " Disabled ", "nope"):
            payload = {**base, "prompt": f"capvalue {value}"}
            assert run_hook("claude", payload, {**env, "ENGRAM_CAPTURE": value}) == (0, "{}\n")
        assert run_hook("claude", {**base, "prompt": "kept"}, {**env, "ENGRAM_CAPTURE": "TRUE"})
        engram.capture.drain()
    sessions = engram.capture.list_sessions(actor, "webapp")
    assert [o.text for o in engram.capture.observations(sessions[0].id, actor)] == ["kept"]
    log = (home / "hooks" / "hook.log").read_text()
    assert "ENGRAM_CAPTURE='nope' is not on, opt-in or off" in log
    assert "'false'" not in log  # a known false value is not a warning


def test_hooks_install_merges_backs_up_and_uninstalls(tmp_path: Path) -> None:
    home = tmp_path / "user"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    other = {"type": "command", "command": "other-tool notify"}
    settings.write_text(
        json.dumps({"model": "x", "hooks": {"Stop": [{"hooks": [other]}]}}, indent=2)
    )
    env = {**os.environ, "HOME": str(home)}
    engram_home = str(tmp_path / "eh")

    def cli(*args: str) -> str:
        result = subprocess.run(
            [str(ENGRAM), "--home", engram_home, "hooks", *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    out = cli("install", "--agent", "claude", "--agent", "codex", "--agent", "gemini")
    assert "claude: updated" in out and "backup:" in out and "codex: installed" in out
    data = json.loads(settings.read_text())
    assert data["model"] == "x"
    assert data["hooks"]["Stop"][0]["hooks"] == [other]  # the other tool's hook is kept
    ours = data["hooks"]["Stop"][1]["hooks"][0]
    # this Python, isolated and without site-packages, on the launcher
    assert (
        f"{sys.executable} -I -S " in ours["command"]
        and f"ENGRAM_HOME={engram_home}" in ours["command"]
    )
    assert ours["command"].endswith("engram-hook.py claude")
    assert set(data["hooks"]) >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "SessionEnd"}
    backups = list(settings.parent.glob("settings.json.engram-backup-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text())["hooks"]["Stop"] == [
        {"hooks": [other]}
    ]
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] == 10000
    assert "claude: unchanged" in cli("install", "--agent", "claude")  # idempotent
    status = cli("status", "--agent", "claude")
    assert "SessionStart" in status and "spool: 0 events" in status
    out = cli("uninstall", "--agent", "claude")
    assert f"claude: removed Engram's hooks from {settings} (other settings kept)" in out
    assert "no Engram hooks in" in cli("uninstall", "--agent", "claude")
    assert json.loads(settings.read_text()) == {
        "model": "x",
        "hooks": {"Stop": [{"hooks": [other]}]},
    }
    assert "claude: not installed" in cli("status", "--agent", "claude")
    # a file that is not JSON is named and left alone
    broken = home / ".cursor" / "hooks.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{oops")
    result = subprocess.run(
        [str(ENGRAM), "--home", engram_home, "hooks", "install", "--agent", "cursor"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "hooks.json is not valid JSON" in result.stderr
    assert broken.read_text() == "{oops"
