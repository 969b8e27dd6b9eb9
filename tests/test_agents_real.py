"""The real agent CLIs (npm, pinned in tests/agents/package.json), each in a throwaway HOME,
wired to Engram with ``engram hooks install`` and run non-interactively against a local fake
model server that answers with a tool call (``cat notes.txt``, whose output holds a fake
secret) and then a final message — so every lifecycle hook really fires.

For each agent: the observations are stored and scrubbed (the secrets planted in the prompt
and in the tool result are nowhere in the database, the spool or the hook log), the session's
episode exists, and the next session in the same repository — in a different agent — receives
the first one's summary in its injected context, read from that agent's own transcript.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engram import Engram, Settings
from engram.actors import Actor
from engram.cli.keys import bootstrap
from engram.handoffs import HandoffState
from engram.store.capture import CapturedSession
from tests.agents.fake_model import FakeModel
from tests.agents.harness import ENGRAM, available, base_env, install_hooks, run_agent
from tests.capture_checks import PROMPT_SECRET, RESULT_SECRET, files_bytes, stored_bytes
from tests.live_server import free_port, serve

pytestmark = pytest.mark.slow

TRANSCRIPTS = {
    "claude": ".claude/projects",
    "codex": ".codex/sessions",
    "gemini": ".gemini",
    "opencode": ".local/share/opencode",
}


@dataclass
class World:
    engram: Engram
    actor: Actor
    engram_home: Path
    repo: Path
    root: Path
    model: FakeModel
    url: str = ""

    def env(self, agent: str) -> dict[str, str]:
        home = self.root / f"home-{agent}"
        home.mkdir(exist_ok=True)
        return base_env(home, self.engram_home, self.url)

    def session(self, agent: str, prompt: str) -> CapturedSession:
        """Run one session of ``agent``; its captured session once its episode is written."""
        env = self.env(agent)
        install_hooks(agent, env)
        result = run_agent(agent, self.model, self.repo, env, prompt)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        assert "Next step: rotate the token" in result.stdout
        return self.wait_for_episode(agent)

    def wait_for_episode(self, agent: str) -> CapturedSession:
        deadline = time.monotonic() + 20
        while True:
            sessions = [
                s for s in self.engram.capture.list_sessions(self.actor, "proj") if s.agent == agent
            ]
            if sessions and sessions[0].episode_id:
                return sessions[0]
            assert time.monotonic() < deadline, f"no episode for the {agent} session: {sessions}"
            time.sleep(0.1)

    def check_captured(self, session: CapturedSession, agent: str) -> None:
        observations = self.engram.capture.observations(session.id, self.actor)
        kinds = {o.kind for o in observations}
        assert {"session_start", "prompt", "tool_result", "stop"} <= kinds, kinds
        tool = next(o for o in observations if o.kind == "tool_result")
        assert "cat notes.txt" in tool.command
        assert "[REDACTED:github_token]" in tool.output
        prompt = next(o for o in observations if o.kind == "prompt")
        assert "[REDACTED:" in prompt.text and "engram-memory" not in prompt.text
        assert session.episode_id is not None
        episode = self.engram.memories.get(session.episode_id, self.actor)
        assert f"Session in {agent}" in episode.content
        assert "`cat notes.txt`" in episode.content
        everything = stored_bytes(self.engram.store) + files_bytes(self.engram_home)
        assert PROMPT_SECRET.encode() not in everything
        assert RESULT_SECRET.encode() not in everything

    def transcript(self, agent: str) -> str:
        home = self.root / f"home-{agent}"
        return files_bytes(home / TRANSCRIPTS[agent]).decode("utf-8", "replace")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    missing = [a for a in ("claude", "codex", "gemini", "opencode") if not available(a)]
    if missing:
        pytest.skip(f"agent CLIs not installed ({', '.join(missing)}): npm ci in tests/agents")
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    engram_home = tmp_path / "engram"
    engram = Engram.open(Settings.load(engram_home))
    issued = bootstrap(engram, engram_home)
    assert issued is not None
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / "notes.txt").write_text(f"deploy token {RESULT_SECRET}\n")
    with FakeModel("cat notes.txt") as model:
        yield World(
            engram, engram.accounts.authenticate(issued.token), engram_home, repo, tmp_path, model
        )
    engram.close()


def _prompt(topic: str) -> str:
    return f"Summarise notes.txt for the {topic}. My key is {PROMPT_SECRET}"


@pytest.mark.parametrize(("first", "second"), [("claude", "codex"), ("gemini", "opencode")])
def test_a_session_in_one_agent_briefs_the_next_in_another(
    world: World, first: str, second: str
) -> None:
    with serve(world.engram) as world.url:
        one = world.session(first, _prompt("release checklist"))
        world.check_captured(one, first)
        two = world.session(second, _prompt("incident review"))
        world.check_captured(two, second)
    # the second agent's own transcript holds the first session's summary
    assert "release checklist" in world.transcript(second) or second == "opencode"
    # (OpenCode keeps no system prompt in its storage: read what its model was sent)
    sent = world.model.received()
    assert f"in {first}: Summarise notes.txt for the release checklist" in sent
    assert "Notes Engram keeps for the project proj" in sent


def test_a_claude_code_session_hands_off_to_codex_in_the_same_directory(world: World) -> None:
    with serve(world.engram) as world.url:
        one = world.session("claude", _prompt("release checklist"))
        (handoff,) = world.engram.handoffs.list(world.actor)
        assert handoff.automatic and handoff.from_agent == "claude"
        assert handoff.source_session == one.id and handoff.cwd == str(world.repo)
        assert "release checklist" in handoff.summary and "notes.txt" in handoff.summary
        two = world.session("codex", _prompt("incident review"))
    claimed = world.engram.handoffs.get(handoff.id, world.actor)
    assert claimed.state is HandoffState.ACCEPTED
    assert (claimed.accepted_agent, claimed.accepted_session) == ("codex", two.id)
    # what Codex's model was sent, and what Codex kept in its own transcript
    assert f"Handoff {handoff.id} from claude" in world.model.received()
    assert f"Handoff {handoff.id} from claude" in world.transcript("codex")
    # claimed once: Codex's own session, ended, now leaves the next handoff
    assert {h.from_agent for h in world.engram.handoffs.list(world.actor)} == {"codex"}


def test_with_the_server_stopped_the_agent_works_and_the_spool_delivers_later(
    world: World,
) -> None:
    world.url = f"http://127.0.0.1:{free_port()}"
    env = world.env("claude")
    install_hooks("claude", env)
    result = run_agent("claude", world.model, world.repo, env, _prompt("offline run"))
    assert result.returncode == 0 and "Next step" in result.stdout
    spool = world.engram_home / "hooks" / "spool"
    assert len(list(spool.glob("*.json"))) >= 4
    assert PROMPT_SECRET.encode() not in files_bytes(world.engram_home)
    port = int(world.url.rsplit(":", 1)[1])
    with serve(world.engram, port):
        flushed = subprocess.run(
            [str(ENGRAM), "--home", str(world.engram_home), "hooks", "flush"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert flushed.returncode == 0, flushed.stderr
        assert not list(spool.glob("*.json"))
        session = world.wait_for_episode("claude")
    world.check_captured(session, "claude")
