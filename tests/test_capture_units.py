"""The pure capture package: each agent's real payloads (as captured from the CLIs, see
ecosystem.md §2; Cursor's as documented) mapped onto one vocabulary, each agent's output
format, bounds, privacy filters, per-repository rules and the LLM-free summary."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engram.capture.adapters import read_payload, render_output, to_event
from engram.capture.bounds import bound
from engram.capture.events import Agent, Event, EventKind, from_dict, validation_errors
from engram.capture.privacy import clean, strip_scaffolding
from engram.capture.repo import RepoRulesError, find_rules, load_rules
from engram.capture.summary import summarize
from engram.store.capture import Observation

CLAUDE = [
    {"session_id": "9447", "transcript_path": "/t.jsonl", "cwd": "/home/u/proj",
     "hook_event_name": "SessionStart", "source": "startup"},
    {"session_id": "9447", "transcript_path": "/t.jsonl", "cwd": "/home/u/proj",
     "prompt_id": "d578", "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
     "prompt": "hello"},
    {"session_id": "9447", "transcript_path": "/t.jsonl", "cwd": "/home/u/proj",
     "prompt_id": "d578", "hook_event_name": "SessionEnd", "reason": "other"},
]  # fmt: skip
CODEX = [
    {"session_id": "01a2", "transcript_path": "/r.jsonl", "cwd": "/home/u/proj",
     "hook_event_name": "SessionStart", "model": "gpt", "permission_mode": "bypassPermissions",
     "source": "startup"},
    {"session_id": "01a2", "turn_id": "01a2-60fb", "transcript_path": "/r.jsonl",
     "cwd": "/home/u/proj", "hook_event_name": "UserPromptSubmit", "model": "gpt",
     "permission_mode": "bypassPermissions", "prompt": "hello"},
    {"session_id": "01a2", "cwd": "/home/u/proj", "hook_event_name": "PostToolUse",
     "tool_name": "Bash", "tool_input": {"command": "cargo test"},
     "tool_response": "error: 2 tests failed\nexit code: 101"},
]  # fmt: skip
GEMINI = [
    {"session_id": "0e78", "transcript_path": "/g.jsonl", "cwd": "/home/u/proj",
     "hook_event_name": "SessionStart", "timestamp": "2026-11-29T22:01:54.028Z",
     "source": "startup"},
    {"session_id": "0e78", "transcript_path": "/g.jsonl", "cwd": "/home/u/proj",
     "hook_event_name": "BeforeAgent", "timestamp": "2026-11-29T22:01:55.000Z",
     "prompt": "<hook_context>memory: user prefers tabs</hook_context>\n\nhello"},
    {"session_id": "0e78", "cwd": "/home/u/proj", "hook_event_name": "AfterAgent",
     "prompt": "hello", "prompt_response": "Hi! What next?", "stop_hook_active": False},
    {"session_id": "0e78", "transcript_path": "/g.jsonl", "cwd": "/home/u/proj",
     "hook_event_name": "SessionEnd", "timestamp": "2026-11-29T22:02:00.000Z", "reason": "exit"},
]  # fmt: skip
CURSOR = [
    {"hook_event_name": "beforeSubmitPrompt", "conversation_id": "c-1", "generation_id": "g-1",
     "workspace_roots": ["/home/u/proj"], "prompt": "add a login page",
     "cursor_version": "1.7"},
    {"hook_event_name": "afterShellExecution", "conversation_id": "c-1", "generation_id": "g-1",
     "workspace_roots": ["/home/u/proj"], "command": "npm test", "output": "1 failing",
     "exit_code": 1},
    {"hook_event_name": "afterFileEdit", "conversation_id": "c-1", "generation_id": "g-1",
     "workspace_roots": ["/home/u/proj"], "file_path": "/home/u/proj/src/login.tsx",
     "edits": [{"old_string": "", "new_string": "export {}"}]},
    {"hook_event_name": "stop", "conversation_id": "c-1", "generation_id": "g-1",
     "workspace_roots": ["/home/u/proj"], "status": "completed"},
]  # fmt: skip


def _event(agent: Agent, payload: dict[str, Any]) -> Event:
    raw = read_payload(agent, payload)
    return to_event(agent, raw, at="2026-01-01T00:00:00Z", key="k-12345678", cwd=raw.cwd,
                    project="proj")  # fmt: skip


def test_real_payloads_map_onto_one_vocabulary() -> None:
    kinds = {
        Agent.CLAUDE: [_event(Agent.CLAUDE, p).kind for p in CLAUDE],
        Agent.CODEX: [_event(Agent.CODEX, p).kind for p in CODEX],
        Agent.GEMINI: [_event(Agent.GEMINI, p).kind for p in GEMINI],
        Agent.CURSOR: [_event(Agent.CURSOR, p).kind for p in CURSOR],
    }
    k = EventKind
    assert kinds == {
        Agent.CLAUDE: [k.SESSION_START, k.PROMPT, k.SESSION_END],
        Agent.CODEX: [k.SESSION_START, k.PROMPT, k.TOOL_RESULT],
        Agent.GEMINI: [k.SESSION_START, k.PROMPT, k.STOP, k.SESSION_END],
        Agent.CURSOR: [k.PROMPT, k.TOOL_RESULT, k.TOOL_RESULT, k.STOP],
    }
    gemini_prompt = _event(Agent.GEMINI, GEMINI[1])
    assert gemini_prompt.text == "hello"  # the injected context is not the user's words
    assert _event(Agent.GEMINI, GEMINI[2]).text == "Hi! What next?"
    codex_tool = _event(Agent.CODEX, CODEX[2])
    assert codex_tool.command == "cargo test" and codex_tool.failed
    shell = _event(Agent.CURSOR, CURSOR[1])
    assert (shell.session_id, shell.cwd, shell.command, shell.failed) == (
        "c-1", "/home/u/proj", "npm test", True,
    )  # fmt: skip
    assert _event(Agent.CURSOR, CURSOR[2]).files == ("/home/u/proj/src/login.tsx",)
    assert _event(Agent.CLAUDE, {"hook_event_name": "MessageDisplay"}).kind is k.OTHER


def test_the_content_a_command_writes_is_not_kept() -> None:
    """Walkthrough 35: Codex's apply_patch carries the patch in its command, so the file's
    content was kept as the command run (up to 2 KB, in episodes and briefs as "`*** Begin
    Patch`"); a heredoc's body the same way. The command keeps its first line, the files their
    names."""
    body = "def test_discount(): assert 1"
    patch = f"*** Begin Patch\n*** Add File: tests/test_discount.py\n+{body}\n*** End Patch"

    def tool(command: Any) -> Event:
        return _event(Agent.CODEX, {
            "session_id": "01a2", "cwd": "/home/u/proj", "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch", "tool_input": {"command": command},
            "tool_response": "Success. Updated the following files: A tests/test_discount.py",
        })  # fmt: skip

    for command in (patch, ["apply_patch", patch], f"apply_patch <<'EOF'\n{patch}\nEOF"):
        event = tool(command)
        assert body not in event.command and event.command.startswith("apply_patch")
        assert event.files == ("tests/test_discount.py",)
    heredoc = tool(f"cat > notes.txt <<EOF\n{body}\nEOF")
    assert heredoc.command == "cat > notes.txt <<EOF"
    # a heredoc on a later line, and what follows its end (the review of stop 35)
    later = tool(f"cd app\ncat > .env <<'EOF'\n{body}\nEOF\nnpm test")
    assert later.command == "cd app\ncat > .env <<'EOF'\nnpm test"
    assert tool("grep x <<< 'one'\nls").command == "grep x <<< 'one'\nls"
    assert tool("make lint\nmake test").command == "make lint\nmake test"


# Codex's generated schema for SessionStart command output (openai/codex, see ecosystem.md)
CODEX_SESSION_START = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "continue": {"type": "boolean"},
        "stopReason": {"type": "string"},
        "suppressOutput": {"type": "boolean"},
        "systemMessage": {"type": "string"},
        "hookSpecificOutput": {
            "type": "object",
            "additionalProperties": False,
            "required": ["hookEventName"],
            "properties": {
                "hookEventName": {"const": "SessionStart"},
                "additionalContext": {"type": "string"},
                "env": {"type": "object"},
            },
        },
    },
    "required": ["hookSpecificOutput"],
}


def test_a_gemini_command_that_failed_is_marked_failed() -> None:
    # Gemini CLI 0.61's real AfterTool payload: the exit status is only in llmContent
    def after_tool(code: int) -> dict[str, Any]:
        content = (
            "<untrusted_context>\nOutput: ls: cannot access '/nonexistent': No such file or "
            f"directory\nExit Code: {code}\nProcess Group PGID: 30400\n</untrusted_context>"
        )
        return {
            "session_id": "g",
            "cwd": "/r",
            "hook_event_name": "AfterTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "ls /nonexistent"},
            "tool_response": {"llmContent": content, "returnDisplay": "ls: cannot access"},
        }

    assert read_payload("gemini", after_tool(2)).failed
    assert not read_payload("gemini", after_tool(0)).failed


def test_the_hook_clamps_the_context_budget_to_what_the_route_takes(tmp_path: Path) -> None:
    from engram.api.routers.capture import SessionStartIn
    from engram.capture.bounds import START_TOKENS
    from engram.hooks.client import _context_tokens

    schema = SessionStartIn.model_json_schema()["properties"]["max_tokens"]
    assert (schema["minimum"], schema["maximum"]) == START_TOKENS
    env = {"ENGRAM_HOME": str(tmp_path)}
    assert _context_tokens({**env, "ENGRAM_CONTEXT_TOKENS": "99999"}) == 8000
    assert _context_tokens({**env, "ENGRAM_CONTEXT_TOKENS": "5"}) == 100
    assert _context_tokens({**env, "ENGRAM_CONTEXT_TOKENS": "3000"}) == 3000
    assert _context_tokens({**env, "ENGRAM_CONTEXT_TOKENS": "lots"}) is None
    assert _context_tokens(env) is None
    log = (tmp_path / "hooks" / "hook.log").read_text()
    assert "ENGRAM_CONTEXT_TOKENS=99999 is outside 100-8000: 8000 is used" in log
    assert "ENGRAM_CONTEXT_TOKENS='lots' is not a number" in log


def test_each_agent_gets_its_own_output_format() -> None:
    for context in ("", "notes"):
        out = json.loads(render_output(Agent.CODEX, "SessionStart", context))
        jsonschema.validate(out, CODEX_SESSION_START)
    assert json.loads(render_output(Agent.CLAUDE, "SessionStart", "notes")) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "notes"}
    }
    assert render_output(Agent.CLAUDE, "SessionStart") == "{}"
    assert (
        json.loads(render_output(Agent.GEMINI, "SessionStart", "n"))["hookSpecificOutput"][
            "additionalContext"
        ]
        == "n"
    )
    assert render_output(Agent.GEMINI, "AfterTool") == "{}"  # stdout must be JSON only
    assert json.loads(render_output(Agent.CURSOR, "beforeSubmitPrompt")) == {"continue": True}
    assert json.loads(render_output(Agent.OPENCODE, "session.created", "n")) == {"context": "n"}


def test_bound_keeps_head_and_tail_within_the_limit() -> None:
    text = "QUESTION " + "é" * 40_000 + " OUTCOME"
    out = bound(text, 2048)
    assert len(out.encode()) <= 2048
    assert out.startswith("QUESTION") and out.endswith("OUTCOME") and "bytes cut" in out
    assert bound("short", 2048) == "short"


def test_privacy_drops_private_spans_scrubs_then_bounds() -> None:
    out = clean(
        "token ghp_FAKE0123456789abcdefghijklmnopqrstuv <private>my diary</private> done", 100
    )
    assert "ghp_FAKE" not in out and "diary" not in out and "[REDACTED:github_token]" in out
    assert (
        strip_scaffolding(
            "<system-reminder>\nuse tools\n</system-reminder>\n"
            "Caveat: The messages below were generated by the user while running local commands.\n"
            "<command-name>/clear</command-name>\nreal words"
        )
        == "real words"
    )


def test_repository_rules(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert find_rules(repo / "sub").captures("on")
    assert not find_rules(repo / "sub").captures("opt-in")
    (repo / ".engram.toml").write_text(
        '[capture]\nenabled = true\nignore_paths = ["*.pem", "secrets/**"]\n'
    )
    rules = find_rules(repo / "sub")
    assert rules.captures("opt-in") and not rules.captures("off")
    assert rules.ignores("", [str(repo / "k/id.pem")])
    assert rules.ignores("", [str(repo / "secrets/a/b")])
    assert not rules.ignores("", [str(repo / "src/a.py")])
    assert not rules.ignores("ls", [str(tmp_path / "elsewhere/secrets/x")])
    (repo / ".engram.toml").write_text("[capture]\nenabled = 'yes'\n")
    with pytest.raises(RepoRulesError, match=r"\.engram\.toml: capture\.enabled must be"):
        load_rules(repo / ".engram.toml")


def test_wire_events_are_validated_with_clear_messages() -> None:
    assert validation_errors([]) == ["an event must be a JSON object"]
    errors = validation_errors({"agent": "vim", "kind": "prompt", "session_id": "s", "cwd": "/",
                                "at": "now", "key": "bad key!"})  # fmt: skip
    assert any("'agent' must be one of" in e for e in errors)
    assert any("'key' must be" in e for e in errors)
    good = _event(Agent.CLAUDE, CLAUDE[1]).to_dict()
    assert validation_errors(good) == [] and from_dict(good) == _event(Agent.CLAUDE, CLAUDE[1])
    # every field has a bound, named in the message (the hook sends far less)
    for name, value, says in [
        ("text", "x" * 70_000, "'text' is longer than 65536 characters"),
        ("cwd", "/" * 5000, "'cwd' is longer than 4096 characters"),
        ("files", ["a"] * 201, "'files' holds more than 200 paths"),
        ("failed", "yes", "'failed' must be true or false"),
        ("extra", {"k": [1]}, "'extra' values must be strings, numbers or booleans"),
        ("project", "p" * 5000, "'project' is longer than 4096 characters"),
        # a key the server does not know would ride along unchecked (found by the poison pass
        # of tests/test_api_schema.py: a 2 MB string under an unknown key was stored)
        ("notes", [{"deep": "x" * 2_000_000}], "unknown field 'notes': an event holds only"),
    ]:
        assert any(says in e for e in validation_errors({**good, name: value})), name


def _obs(kind: str, minutes: int, **fields: Any) -> Observation:
    at = datetime(2026, 1, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    return Observation(key=f"k{minutes}", session="s", environment_id="e", agent="claude",
                       kind=kind, at=at, **fields)  # fmt: skip


def test_the_summary_reads_what_happened_without_an_llm() -> None:
    summary = summarize(
        [
            _obs("prompt", 0, text="Add caching to the API. Let's use Redis instead of memcached."),
            _obs("tool_result", 1, tool="Edit", files=("/p/api/cache.py",)),
            _obs("tool_result", 2, command="pytest", failed=True, output="2 failed"),
            _obs("tool_result", 3, command="pytest", failed=False),
            _obs("tool_result", 4, command="mypy .", failed=True, output="error: x"),
            _obs("stop", 5, text="Caching is in. Is the TTL right? Next step: tune eviction."),
        ],
        cwd="/p",
    )
    assert summary.title == "Add caching to the API. Let's use Redis instead of memcached."
    assert summary.files == ["api/cache.py"]
    assert summary.decisions == ["Let's use Redis instead of memcached."]
    assert summary.failures == ["`mypy .`: error: x"]  # pytest passed afterwards
    assert summary.open_questions == ["Is the TTL right?"]
    assert summary.next_steps == ["Next step: tune eviction.", "fix the failing `mypy .`"]
    text = summary.render("claude")
    assert text.startswith("Session in claude on 2026-01-01 09:00 UTC: Add caching")
    assert "Commands run: `pytest` (failed); `pytest`; `mypy .` (failed)" in text


def test_a_decision_that_sets_a_rule_is_a_decision() -> None:
    """Walkthrough 35: "From now on we deploy with the Makefile, never by hand." was filed as
    a preference ("never"); the README names "from now on" as a decision's wording."""
    said = "From now on we deploy with the Makefile, never by hand."
    summary = summarize([_obs("prompt", 0, text=f"{said} Always run the type checker first.")])
    assert summary.stated_decisions == [said]
    assert summary.preferences == ["Always run the type checker first."]


def test_the_hook_client_does_not_load_the_service_stack() -> None:
    heavy = {"pydantic", "fastapi", "numpy", "httpx", "typer", "starlette", "tiktoken", "email"}
    heavy |= {"typing", "uuid", "tomllib"}  # each costs the hook milliseconds at start-up
    code = (
        "import sys, engram.hooks.client; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(heavy)!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


HOOK_NEVER_LOADS = {
    "json", "re", "enum", "dataclasses", "pathlib", "socket", "selectors", "datetime",
    "urllib", "inspect", "functools", "collections", "contextlib", "importlib", "warnings",
    "typing", "fnmatch", "tomllib", "site",
}  # fmt: skip
"""What a hook run loads without need: each costs milliseconds of CPU at every start (together
several times the interpreter's own start)."""


def test_a_hook_run_as_installed_loads_nothing_it_does_not_need(tmp_path: Path) -> None:
    """The whole hook, as the installed command runs it (python -I -S on the launcher), on a
    tool result whose text holds no secret's literal, server down (it spools): no module of
    HOOK_NEVER_LOADS is imported, and the event is spooled as before."""
    from engram.hooks.install import LAUNCHER, hook_executable

    assert hook_executable() == f"{sys.executable} -I -S {LAUNCHER}"
    payload = {"session_id": "9447", "cwd": str(tmp_path), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": "pytest -q"},
               "tool_response": {"stdout": "12 passed", "exit_code": 0}}  # fmt: skip
    env = {"ENGRAM_HOME": str(tmp_path / "home"), "ENGRAM_URL": f"http://127.0.0.1:{_free_port()}"}
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(LAUNCHER), "claude"],
        input=json.dumps(payload), capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "{}"
    # -X importtime: one line per module imported, "import time: self | cumulative | name"
    loaded = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in out.stderr.splitlines()
        if line.startswith("import time:") and "cumulative" not in line
    }
    assert "engram" in loaded
    assert loaded & HOOK_NEVER_LOADS == set()
    spooled = list((tmp_path / "home" / "hooks" / "spool").glob("*.json"))
    assert len(spooled) == 1
    event = json.loads(spooled[0].read_text())
    assert event["kind"] == "tool_result" and event["command"] == "pytest -q"


def test_a_hook_whose_server_is_down_does_not_read_its_spool(tmp_path: Path) -> None:
    """The spool is read once the connection is open: with the server down a hook only adds
    its event (an unreadable spooled file, set aside as .bad when read, stays untouched)."""
    from engram.hooks.install import LAUNCHER

    spool = tmp_path / "home" / "hooks" / "spool"
    spool.mkdir(parents=True)
    (spool / "claude-unreadable-0000.json").write_text("{not json")
    env = {"ENGRAM_HOME": str(tmp_path / "home"), "ENGRAM_URL": f"http://127.0.0.1:{_free_port()}"}
    payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
               "prompt": "hello"}  # fmt: skip
    subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), "claude"], env=env, check=True,
                   input=json.dumps(payload), capture_output=True, text=True)  # fmt: skip
    names = sorted(p.name for p in spool.iterdir())
    assert "claude-unreadable-0000.json" in names and len(names) == 2
    assert not any(n.endswith(".bad") for n in names)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_the_hook_json_is_the_json_package() -> None:
    """engram.capture.jsonio (over _json, without importing json) reads and writes what the
    json package does, errors included."""
    from engram.capture import jsonio

    values: list[Any] = [
        {"a": [1, 2.5, None, True, False, "é\u2028\"\\x\x00"], "b": {"z": 1, "a": -0.0}},
        "text", 1, 1.5, None, [], {}, {"emoji": "\U0001f600"}, [1e300, 10**30, float("inf")],
        *CLAUDE, *CURSOR,
    ]  # fmt: skip
    for value in values:
        for ascii_only in (True, False):
            for sort_keys in (True, False):
                assert jsonio.dumps(value, ascii=ascii_only, sort_keys=sort_keys) == json.dumps(
                    value, ensure_ascii=ascii_only, sort_keys=sort_keys
                )
        text = json.dumps(value)
        assert repr(jsonio.loads(text)) == repr(json.loads(text))
        assert repr(jsonio.loads(b"\xef\xbb\xbf " + text.encode() + b"\n")) == repr(value)
    assert jsonio.dumps({"o": object()}, default=lambda o: "x") == '{"o": "x"}'
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsonio.dumps(object())
    for bad in ("", "{", "{} x", "nul", "[1,]", '{"a" 1}'):
        with pytest.raises(json.JSONDecodeError) as theirs:
            json.loads(bad)
        with pytest.raises(ValueError, match=str(theirs.value).split(":")[0]):
            jsonio.loads(bad)
    # in a process that has not loaded json (the hook), the first error is json's too
    code = (
        "from engram.capture.jsonio import loads\n"
        "try:\n    loads(b'{')\nexcept ValueError as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (
        out.stdout.strip() == "JSONDecodeError Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1)"
    )


def test_the_vocabulary_strings_are_the_enums() -> None:
    from engram.capture import vocab

    assert tuple(Agent) == vocab.AGENTS and tuple(EventKind) == vocab.KINDS


def test_a_hook_posting_to_a_local_address_loads_no_idna_codec_and_compiles_few_patterns() -> None:
    """Start-up cost of one hook run: no IDNA codec (unicodedata) for an ASCII host, and only
    the scrub patterns whose literals the text holds are compiled."""
    code = (
        "import socket, sys\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()\n"
        "from engram.hooks.wire import ServerUnavailable, post_json\n"
        "from engram.capture.privacy import clean\n"
        "from engram.scrub.patterns import BUILTIN\n"
        "clean('ordinary words about tests and files', 1000)\n"
        "try:\n"
        "    post_json(f'http://127.0.0.1:{port}', '/x', lambda: {}, 't', 1.0)\n"
        "except ServerUnavailable:\n"
        "    pass\n"
        "print(sorted(m for m in ('encodings.idna', 'unicodedata', 'stringprep') "
        "if m in sys.modules), sum(p._regex is not None for p in BUILTIN))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] 0"
