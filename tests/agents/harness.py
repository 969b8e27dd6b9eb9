"""Running the real agent CLIs (installed from npm in ``tests/agents``) non-interactively in a
throwaway HOME, against :class:`FakeModel`, with Engram wired in by ``engram hooks install``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.agents.fake_model import FakeModel

AGENTS_DIR = Path(__file__).parent
BIN = AGENTS_DIR / "node_modules" / ".bin"
ENGRAM = Path(sys.executable).parent / "engram"
AGENT_BINARIES = {"claude": "claude", "codex": "codex", "gemini": "gemini", "opencode": "opencode"}


def available(agent: str) -> bool:
    return (BIN / AGENT_BINARIES[agent]).exists() and shutil.which("node") is not None


def base_env(home: Path, engram_home: Path, engram_url: str) -> dict[str, str]:
    node_dir = str(Path(shutil.which("node") or "/usr/bin/node").parent)
    return {
        "HOME": str(home),
        "PATH": f"{BIN}:{node_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "ENGRAM_HOME": str(engram_home),
        "ENGRAM_URL": engram_url,
        "ENGRAM_EMBEDDER": "none",
    }


def install_hooks(agent: str, env: dict[str, str]) -> None:
    subprocess.run(
        [str(ENGRAM), "--home", env["ENGRAM_HOME"], "hooks", "install", "--agent", agent],
        env={**env, "ENGRAM_MODEL_CACHE": os.environ.get("ENGRAM_MODEL_CACHE", "")},
        check=True,
        capture_output=True,
        timeout=60,
    )


def run_agent(
    agent: str, model: FakeModel, repo: Path, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    """One whole non-interactive session of ``agent`` in ``repo``."""
    home = Path(env["HOME"])
    env = dict(env)
    if agent == "claude":
        env.update(
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY="fake-key",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
            IS_SANDBOX="1",
        )
        args = ["claude", "-p", prompt, "--permission-mode", "bypassPermissions"]
    elif agent == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\ncheck_for_update_on_startup = false\n'
            "[model_providers.fake]\n"
            f'name = "fake"\nbase_url = "{model.url}/v1"\nwire_api = "responses"\n'
            'env_key = "FAKE_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        env.update(FAKE_API_KEY="fake-key", CODEX_HOME=str(codex_home))
        args = [
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            prompt,
        ]
    elif agent == "gemini":
        settings = home / ".gemini" / "settings.json"
        current = json.loads(settings.read_text()) if settings.exists() else {}
        current.update(
            security={"auth": {"selectedType": "gemini-api-key"}},
            general={"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            privacy={"usageStatisticsEnabled": False},
            telemetry={"enabled": False},
        )
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps(current))
        env.update(
            GOOGLE_GEMINI_BASE_URL=model.url,
            GEMINI_API_KEY="fake-key",
            GEMINI_CLI_TRUST_WORKSPACE="true",
            GEMINI_CLI_NO_RELAUNCH="true",
        )
        args = ["gemini", "-p", prompt, "--yolo"]
    elif agent == "opencode":
        config = home / ".config" / "opencode"
        config.mkdir(parents=True, exist_ok=True)
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": f"{model.url}/v1", "apiKey": "fake-key"},
            "models": {
                "fake-model": {"tool_call": True, "limit": {"context": 128000, "output": 8192}}
            },
        }
        (config / "opencode.json").write_text(
            json.dumps(
                {
                    "$schema": "https://opencode.ai/config.json",
                    "provider": {"fake": provider},
                    "model": "fake/fake-model",
                    "small_model": "fake/fake-model",
                    "autoupdate": False,
                    "share": "disabled",
                    "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
                }
            )
        )
        # the plugin folder makes OpenCode install @opencode-ai/plugin: give it the pinned copy
        modules = config / "node_modules" / "@opencode-ai"
        modules.mkdir(parents=True, exist_ok=True)
        link = modules / "plugin"
        if not link.exists():
            link.symlink_to(AGENTS_DIR / "node_modules" / "@opencode-ai" / "plugin")
        env.update(
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
            OPENCODE_DISABLE_SHARE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
            npm_config_offline="true",
            npm_config_fetch_retries="0",
        )
        args = ["opencode", "run", prompt]
    else:
        raise ValueError(agent)
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
