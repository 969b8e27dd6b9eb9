"""How uvicorn serves the app: the HTTP parser buffers a request head up to
:data:`~engram.limits.MAX_REQUEST_HEAD_BYTES`, so a long URL or large headers reach
``engram.api.guard`` and get their 414 or 431. A head beyond even that is answered 431 by
:class:`H11Protocol` itself, and what the client still sends is read and dropped before the
connection closes, so the client reads the status instead of a connection reset.
"""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol as _H11Protocol

from engram.limits import MAX_REQUEST_HEAD_BYTES

_LINGER_SECONDS = 5.0
"""How long a refused connection keeps reading (and dropping) what the client sends."""

KEEP_ALIVE_SECONDS = 75
"""How long an idle keep-alive connection stays open. Longer than clients keep theirs (httpx,
and so the SDK and the hooks, 5 s; uvicorn's own default is also 5 s), so the client is the one
that closes an idle connection: were the server to close it as the client sends its next
request, that request would fail with a connection reset (nginx keeps 75 s, for the same
reason)."""


class H11Protocol(_H11Protocol):
    """uvicorn's h11 protocol, answering an unparseable or oversized request head with the one
    error body, then closing gently."""

    _lingering = False

    def data_received(self, data: bytes) -> None:
        if self._lingering:  # a refused request: read and drop the rest
            return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        pending = len(self.conn.trailing_data[0])
        status, code, message = (
            (431, "headers_too_large", f"the request head is over {MAX_REQUEST_HEAD_BYTES} bytes")
            if pending > MAX_REQUEST_HEAD_BYTES
            else (400, "bad_request", "the request is not valid HTTP/1.1")
        )
        body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=status, headers=headers),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self._lingering = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_SECONDS, self.transport.close)


def uvicorn_options() -> dict[str, Any]:
    """The uvicorn.Config arguments that apply the request-head limits and the keep-alive."""
    return {
        "http": H11Protocol,
        "h11_max_incomplete_event_size": MAX_REQUEST_HEAD_BYTES,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
    }
