"""Exports of other products built from their documented structures (invented content, real
shapes): ChatGPT (branches, hidden nodes, multimodal parts, bio memory writes, custom
instructions, missing timestamps, shards), Claude.ai (legacy zip and 2026 manifest with split
per-category zips, projects, memories), Gemini Takeout, agent transcripts, and hostile files."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

T0 = 1767225600.0  # 2026-01-01T00:00:00Z


def _msg(node: str, role: str, text: Any, t: float | None, **extra: Any) -> dict[str, Any]:
    content = text if isinstance(text, dict) else {"content_type": "text", "parts": [text]}
    return {
        "id": node,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": t,
        "content": content,
        "status": "finished_successfully",
        "weight": extra.pop("weight", 1.0),
        "recipient": extra.pop("recipient", "all"),
        "metadata": extra.pop("metadata", {}),
        **extra,
    }


def chatgpt_conversation(
    cid: str, title: str, turns: list[tuple[str, str]], t: float = T0
) -> dict[str, Any]:
    """A linear conversation: a null root, then the turns."""
    mapping: dict[str, Any] = {
        "root": {"id": "root", "parent": None, "children": [], "message": None}
    }
    parent = "root"
    for i, (role, text) in enumerate(turns):
        node = f"{cid}-n{i}"
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": _msg(node, role, text, t + i),
        }
        mapping[parent]["children"].append(node)
        parent = node
    return {
        "id": cid,
        "conversation_id": cid,
        "title": title,
        "create_time": t,
        "update_time": t + len(turns),
        "current_node": parent,
        "mapping": mapping,
    }


def chatgpt_branched() -> dict[str, Any]:
    """Root -> system (hidden) -> user -> two assistant branches (the first regenerated);
    current_node is on the second; a bio write, a tool reply, an image message, custom
    instructions and a message without a time."""
    m: dict[str, Any] = {}

    def node(nid: str, parent: str | None, message: dict[str, Any] | None) -> None:
        m[nid] = {"id": nid, "parent": parent, "children": [], "message": message}
        if parent:
            m[parent]["children"].append(nid)

    node("r", None, None)
    node("s", "r", _msg("s", "system", "", T0, weight=0.0))
    node(
        "ci",
        "s",
        _msg(
            "ci",
            "user",
            {
                "content_type": "user_editable_context",
                "user_profile": "I am a backend developer in Lyon.",
                "user_instructions": "Answer briefly.",
            },
            T0,
            metadata={"is_visually_hidden_from_conversation": True},
        ),
    )
    node("u1", "ci", _msg("u1", "user", "I always use tabs, width 4, in Python.", T0 + 1))
    node("a1", "u1", _msg("a1", "assistant", "OLD BRANCH answer that was regenerated", T0 + 2))
    node(
        "a2",
        "u1",
        _msg(
            "a2",
            "assistant",
            "",
            T0 + 3,
            recipient="bio",
            content={"content_type": "text", "parts": ["Prefers tabs with width 4 in Python."]},
        ),
    )
    node("t1", "a2", _msg("t1", "tool", "Model set context updated.", T0 + 4))
    node("a3", "t1", _msg("a3", "assistant", "Noted: tabs, width 4.", T0 + 5))
    node(
        "u2",
        "a3",
        _msg(
            "u2",
            "user",
            {
                "content_type": "multimodal_text",
                "parts": [
                    {
                        "content_type": "image_asset_pointer",
                        "asset_pointer": "file-service://file-1",
                        "width": 10,
                        "height": 10,
                    },
                    "What is in this screenshot?",
                ],
            },
            None,
        ),
    )
    node("a4", "u2", _msg("a4", "assistant", "A terminal with a failing test.", T0 + 7))
    node("u3", "a4", _msg("u3", "user", "   ", T0 + 8))  # empty: skipped
    return {
        "id": "conv-branch",
        "conversation_id": "conv-branch",
        "title": "Editor setup",
        "create_time": T0,
        "update_time": T0 + 8,
        "current_node": "u3",
        "mapping": m,
    }


def chatgpt_export(path: Path, *, sharded: bool = False, extra: int = 0) -> Path:
    convs = [
        chatgpt_branched(),
        chatgpt_conversation(
            "conv-db",
            "Database choice",
            [
                ("user", "We decided to use PostgreSQL for the billing service."),
                ("assistant", "PostgreSQL it is."),
            ],
            T0 + 100,
        ),
    ]
    convs += [
        chatgpt_conversation(
            f"conv-x{i}",
            f"Chat {i}",
            [("user", f"Question number {i} about topic {i}"), ("assistant", f"Answer number {i}")],
            T0 + 200 + i,
        )
        for i in range(extra)
    ]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        if sharded:
            z.writestr("conversations-000.json", json.dumps(convs[:1]))
            z.writestr("conversations-001.json", json.dumps(convs[1:]))
        else:
            z.writestr("conversations.json", json.dumps(convs))
        z.writestr("user.json", json.dumps({"id": "user-1", "email": "a@example.com"}))
        z.writestr("chat.html", "<html><body>chat</body></html>")
        z.writestr("file-abc.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    return path


def claude_conversations() -> list[dict[str, Any]]:
    return [
        {
            "uuid": "0198aaaa-0000-7000-8000-000000000001",
            "name": "Editor settings",
            "summary": "",
            "created_at": "2026-03-01T10:00:00.000000Z",
            "updated_at": "2026-03-01T10:02:00.000000Z",
            "account": {"uuid": "acc-1"},
            "chat_messages": [
                {
                    "uuid": "m-1",
                    "sender": "human",
                    "text": "I use tabs, width 4.",
                    "created_at": "2026-03-01T10:00:00.000000Z",
                    "content": [{"type": "text", "text": "I use tabs, width 4."}],
                    "attachments": [],
                    "files": [],
                },
                {
                    "uuid": "m-2",
                    "sender": "assistant",
                    "text": "",
                    "created_at": "2026-03-01T10:00:05.000000Z",
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "text", "text": "Got it."},
                        {"type": "tool_use", "name": "x", "input": {}, "id": "t"},
                    ],
                    "attachments": [],
                    "files": [],
                },
                {
                    "uuid": "m-3",
                    "sender": "human",
                    "text": "",
                    "created_at": "2026-03-01T10:01:00.000000Z",
                    "content": [],
                    "attachments": [],
                    "files": [],
                },
            ],
        }
    ]


def claude_projects() -> list[dict[str, Any]]:
    return [
        {
            "uuid": "p-1",
            "name": "Dotfiles",
            "description": "My shell setup",
            "is_private": True,
            "is_starter_project": False,
            "prompt_template": "Prefer POSIX sh.",
            "created_at": "2026-02-01T00:00:00Z",
            "updated_at": "2026-02-01T00:00:00Z",
            "creator": {"uuid": "acc-1", "full_name": "A. User"},
            "docs": [
                {
                    "uuid": "d-1",
                    "filename": "notes.md",
                    "content": "Use zsh on the laptop.",
                    "created_at": "2026-02-02T00:00:00Z",
                }
            ],
        },
        {
            "uuid": "p-0",
            "name": "How to use Claude",
            "is_starter_project": True,
            "prompt_template": "",
            "docs": [],
        },
    ]


def claude_memories() -> dict[str, Any]:
    return {
        "account_uuid": "acc-1",
        "conversations_memory": (
            "## Work\n- Works on the billing service.\n- Prefers short answers.\n"
        ),
        "project_memories": {"p-1": "The dotfiles live in ~/src/dotfiles."},
    }


def claude_legacy(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("conversations.json", json.dumps(claude_conversations()))
        z.writestr("projects.json", json.dumps(claude_projects()))
        z.writestr("users.json", json.dumps([{"uuid": "acc-1", "full_name": "A. User"}]))
        z.writestr("memories.json", json.dumps([claude_memories()]))
    return path


def claude_manifest(folder: Path) -> Path:
    """The 2026 layout: a manifest JSON beside per-category zips (projects split in two)."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = {
        "conversations-000.zip": {"conversations.json": claude_conversations()},
        "projects-000.zip": {"projects/p-1.json": claude_projects()[0]},
        "projects-001.zip": {"projects/p-0.json": claude_projects()[1]},
        "memories-000.zip": {"memories/acc-1.json": claude_memories()},
        "light_metadata-000.zip": {"users.json": [{"uuid": "acc-1"}]},
    }
    for name, files in parts.items():
        with zipfile.ZipFile(folder / name, "w") as z:
            for inner, value in files.items():
                z.writestr(inner, json.dumps(value))
    manifest = folder / "manifest.json"
    manifest.write_text(
        json.dumps(
            {"export_id": "e-1", "files": [{"category": n.split("-")[0], "name": n} for n in parts]}
        )
    )
    return manifest


def gemini_activity(path: Path) -> Path:
    records = [
        {
            "header": "Gemini Apps",
            "title": "Prompted What editor settings do I use?",
            "time": "2026-07-26T06:07:57.773Z",
            "products": ["Gemini Apps"],
            "safeHtmlItem": [{"html": "<p>You said you prefer <b>tabs</b>.</p>"}],
        },
        {
            "header": "Gemini Apps",
            "title": "Prompted And the width?",
            "time": "2026-07-26T06:09:00.000Z",
            "products": ["Gemini Apps"],
            "safeHtmlItem": [{"html": "<p>Four.</p>"}, {"html": "<p>Width 4.</p>"}],
        },
        {
            "header": "Gemini Apps",
            "title": "Gave feedback: good response",
            "time": "2026-07-26T06:10:00.000Z",
            "products": ["Gemini Apps"],
        },
        {
            "header": "Gemini Apps",
            "title": "Prompted Plan a trip to Porto",
            "time": "2026-07-27T09:00:00.000Z",
            "products": ["Gemini Apps"],
        },
    ]
    path.write_text(json.dumps(records[::-1]))  # newest first, as Takeout writes it
    return path


def claude_code_session(path: Path) -> Path:
    lines = [
        {"type": "queue-operation", "sessionId": "s-1"},
        {
            "type": "user",
            "uuid": "u-1",
            "parentUuid": None,
            "sessionId": "s-1",
            "timestamp": "2026-05-01T10:00:00Z",
            "cwd": "/home/u/proj",
            "message": {"role": "user", "content": "Run the tests with pytest -x please"},
        },
        {
            "type": "assistant",
            "uuid": "a-1",
            "parentUuid": "u-1",
            "sessionId": "s-1",
            "timestamp": "2026-05-01T10:00:05Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "All tests pass."},
                    {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u-2",
            "sessionId": "s-1",
            "timestamp": "2026-05-01T10:00:06Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
            },
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def codex_session(path: Path) -> Path:
    lines = [
        {
            "timestamp": "2026-05-02T10:00:00Z",
            "type": "session_meta",
            "payload": {"id": "01a2-codex", "cwd": "/home/u/proj"},
        },
        {
            "timestamp": "2026-05-02T10:00:01Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}
                ],
            },
        },
        {
            "timestamp": "2026-05-02T10:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "We use ruff for linting."}],
            },
        },
        {
            "timestamp": "2026-05-02T10:00:03Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Understood, ruff it is."}],
            },
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def gemini_cli_session(path: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "sessionId": "g-1",
                "projectHash": "h",
                "messages": [
                    {
                        "id": "1",
                        "timestamp": "2026-05-03T10:00:00Z",
                        "type": "user",
                        "content": "Deploy with make deploy.",
                    },
                    {
                        "id": "2",
                        "timestamp": "2026-05-03T10:00:01Z",
                        "type": "gemini",
                        "content": "Deploying.",
                    },
                ],
            }
        )
    )
    return path
