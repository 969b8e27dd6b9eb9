"""A minimal HTTP/1.1 POST over a socket: ``http.client`` imports the ``email`` package, which
costs the hook tens of milliseconds at start-up. HTTPS goes through ``http.client``."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ServerUnavailable(Exception):
    """The server did not take the request (down, timed out, 429, 5xx, bad answer)."""


def post_json(url: str, path: str, body: object, token: str, timeout: float) -> dict[str, Any]:
    """POST ``body`` as JSON; the decoded 2xx answer, else :class:`ServerUnavailable`."""
    parts = urlsplit(url)
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    target = parts.path.rstrip("/") + path
    headers = {"Content-Type": "application/json", "Connection": "close"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        if parts.scheme == "https":
            status, data = _https(
                parts.hostname or "", parts.port, target, payload, headers, timeout
            )
        else:
            status, data = _http(
                parts.hostname or "127.0.0.1", parts.port or 80, target, payload, headers, timeout
            )
    except (OSError, ValueError) as exc:
        raise ServerUnavailable(f"{type(exc).__name__}: {exc}") from exc
    if not 200 <= status < 300:
        raise ServerUnavailable(f"HTTP {status}: {data[:200]!r}")
    try:
        answer = json.loads(data or b"{}")
    except ValueError as exc:
        raise ServerUnavailable(f"not JSON: {data[:200]!r}") from exc
    return answer if isinstance(answer, dict) else {}


def _http(
    host: str, port: int, target: str, payload: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    head = [f"POST {target} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(payload)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload
    # an ASCII host is passed as bytes: a str would be IDNA-encoded first, which imports the
    # idna codec and unicodedata (milliseconds of start-up for a hook that runs once)
    address = host.encode("ascii") if host.isascii() else host
    # (socket accepts a bytes host; the stubs say str only)
    with socket.create_connection((address, port), timeout=timeout) as sock:  # type: ignore[arg-type]
        sock.sendall(request)
        chunks: list[bytes] = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    header, _, rest = raw.partition(b"\r\n\r\n")
    lines = header.split(b"\r\n")
    status_line = lines[0].split(b" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
        raise ValueError(f"bad status line {lines[0][:80]!r}")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        rest = _dechunk(rest)
    return int(status_line[1]), rest


def _dechunk(data: bytes) -> bytes:
    out: list[bytes] = []
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(data[:size])
        data = data[size + 2 :]
    return b"".join(out)


def _https(
    host: str,
    port: int | None,
    target: str,
    payload: bytes,
    headers: dict[str, str],
    timeout: float,
) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPSConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", target, payload, headers)
        response = conn.getresponse()
        return response.status, response.read()
    except http.client.HTTPException as exc:
        raise ValueError(str(exc)) from exc
    finally:
        conn.close()
