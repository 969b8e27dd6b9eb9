"""A local model server speaking the four agents' model APIs (Anthropic Messages, OpenAI
Responses, Gemini generateContent, OpenAI chat completions), scripted: the first turn that
offers tools gets one tool call (run ``COMMAND``), the turn carrying its result gets a final
text. Every request body is kept, so a test can read what the agent sent the model."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = (
    "I read the notes and wrote them to summary.txt. We decided to keep the notes file in the "
    "repository. Should the token be rotated? Next step: rotate the token and add a test."
)


class FakeModel:
    def __init__(self, command: str) -> None:
        self.command = command
        self.requests: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> str:
        """Every request body received, joined (what the agent told the model)."""
        return "\n".join(body for _, body in self.requests)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                body = b'{"data": [], "models": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                fake.requests.append((self.path, raw))
                try:
                    body = json.loads(raw or "{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith("/messages"):
                    self._claude(body)
                elif path.endswith("/responses"):
                    self._codex(body)
                elif ":streamGenerateContent" in path or ":generateContent" in path:
                    self._gemini(body, stream=":streamGenerateContent" in path)
                elif path.endswith("/chat/completions"):
                    self._openai_chat(body)
                else:
                    self._json({"error": {"message": f"no route {path}"}}, 404)

            # -- helpers ---------------------------------------------------------------------
            def _json(self, data: Any, code: int = 200) -> None:
                out = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def _sse(self, events: list[tuple[str | None, Any]]) -> None:
                chunks = []
                for name, data in events:
                    text = data if isinstance(data, str) else json.dumps(data)
                    chunks.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
                out = "".join(chunks).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            # -- Anthropic Messages ----------------------------------------------------------
            def _claude(self, body: dict[str, Any]) -> None:
                has_result = any(
                    isinstance(m.get("content"), list)
                    and any(b.get("type") == "tool_result" for b in m["content"])
                    for m in body.get("messages", [])
                )
                tools = {t.get("name") for t in body.get("tools", [])}
                call = "Bash" in tools and not has_result
                if call:
                    block = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {}}
                    delta = {
                        "type": "input_json_delta",
                        "partial_json": json.dumps({"command": fake.command}),
                    }
                    stop = "tool_use"
                else:
                    block = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": FINAL_TEXT}
                    stop = "end_turn"
                usage = {"input_tokens": 10, "output_tokens": 5}
                message = {
                    "id": "msg_01",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "claude"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                }
                if not body.get("stream"):
                    content = (
                        [{**block, "input": {"command": fake.command}}]
                        if call
                        else [{"type": "text", "text": FINAL_TEXT}]
                    )
                    self._json({**message, "content": content, "stop_reason": stop})
                    return
                self._sse(
                    [
                        ("message_start", {"type": "message_start", "message": message}),
                        (
                            "content_block_start",
                            {"type": "content_block_start", "index": 0, "content_block": block},
                        ),
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": 0, "delta": delta},
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                        (
                            "message_delta",
                            {
                                "type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": 5},
                            },
                        ),
                        ("message_stop", {"type": "message_stop"}),
                    ]
                )

            # -- OpenAI Responses (Codex) ----------------------------------------------------
            def _codex(self, body: dict[str, Any]) -> None:
                items = body.get("input", [])
                has_result = any(
                    isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
                )
                if not has_result and body.get("tools"):
                    item: dict[str, Any] = {
                        "type": "function_call",
                        "id": "fc_01",
                        "call_id": "call_01",
                        "name": "exec_command",
                        "arguments": json.dumps({"cmd": fake.command}),
                    }
                    deltas: list[tuple[str | None, Any]] = []
                else:
                    item = {
                        "type": "message",
                        "id": "msg_01",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
                    }
                    deltas = [
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": "msg_01",
                                "output_index": 0,
                                "content_index": 0,
                                "delta": FINAL_TEXT,
                            },
                        )
                    ]
                usage = {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 5,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                }
                self._sse(
                    [
                        (
                            "response.created",
                            {"type": "response.created", "response": {"id": "resp_01"}},
                        ),
                        (
                            "response.output_item.added",
                            {"type": "response.output_item.added", "output_index": 0, "item": item},
                        ),
                        *deltas,
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": 0, "item": item},
                        ),
                        (
                            "response.completed",
                            {
                                "type": "response.completed",
                                "response": {"id": "resp_01", "usage": usage},
                            },
                        ),
                    ]
                )

            # -- Gemini ----------------------------------------------------------------------
            def _gemini(self, body: dict[str, Any], *, stream: bool) -> None:
                contents = body.get("contents", [])
                has_result = any(
                    "functionResponse" in p for c in contents for p in c.get("parts", [])
                )
                usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
                if not stream:  # the routing classifier asks for JSON
                    text = json.dumps({"complexity_reasoning": "simple", "complexity_score": 10})
                    self._json(
                        {
                            "candidates": [
                                {
                                    "content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": "STOP",
                                    "index": 0,
                                }
                            ],
                            "usageMetadata": usage,
                        }
                    )
                    return
                tools = json.dumps(body.get("tools", []))
                if not has_result and "run_shell_command" in tools:
                    part: dict[str, Any] = {
                        "functionCall": {
                            "name": "run_shell_command",
                            "args": {"command": fake.command},
                        }
                    }
                else:
                    part = {"text": FINAL_TEXT}
                chunk = {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": usage,
                }
                self._sse([(None, chunk)])

            # -- OpenAI chat completions (OpenCode) ------------------------------------------
            def _openai_chat(self, body: dict[str, Any]) -> None:
                messages = body.get("messages", [])
                has_result = any(m.get("role") == "tool" for m in messages)
                tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
                base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0}
                base["model"] = body.get("model", "fake-model")
                if "bash" in tools and not has_result:
                    args = json.dumps({"command": fake.command, "description": "Show the notes"})
                    delta: dict[str, Any] = {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_01",
                                "type": "function",
                                "function": {"name": "bash", "arguments": args},
                            }
                        ],
                    }
                    finish = "tool_calls"
                else:
                    text = FINAL_TEXT if body.get("tools") else "Notes session"
                    delta = {"role": "assistant", "content": text}
                    finish = "stop"
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                self._sse(
                    [
                        (None, {**base, "choices": [{"index": 0, "delta": delta}]}),
                        (
                            None,
                            {
                                **base,
                                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                                "usage": usage,
                            },
                        ),
                        (None, "[DONE]"),
                    ]
                )

        return Handler
