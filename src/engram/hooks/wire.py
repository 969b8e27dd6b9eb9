"""A minimal HTTP/1.1 POST over a socket: ``http.client`` imports the ``email`` package, and
``socket`` and ``urllib.parse`` import ``enum``, ``selectors`` and ``re``: together more CPU than
starting the interpreter, for one request. Plain HTTP goes over the ``_socket`` module the
``socket`` package wraps; HTTPS through ``http.client``."""

from __future__ import annotations

import _socket

from engram.capture.jsonio import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class ServerUnavailable(Exception):
    """The server did not take the request (down, timed out, 401, 408, 429, 5xx, bad answer):
    the same request may succeed later."""


class Refused(Exception):
    """The server refused the request for good (a 4xx other than 401, 408 and 429: an
    environment that does not exist, an event that is not valid): sending it again cannot
    succeed. The message is the status and the server's reason."""


_RETRIED = (401, 408, 429)
"""4xx answers that may change: a token fixed later, a timeout, a saturated server."""


def _reason(data: bytes) -> str:
    """The message of the server's error body, else the body's start."""
    try:
        error = loads(data).get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:500]
    except (ValueError, AttributeError):
        pass
    return data[:200].decode("utf-8", "replace")


def post_json(
    url: str, path: str, body: Callable[[], object], token: str, timeout: float
) -> dict[str, Any]:
    """POST ``body()`` as JSON; the decoded 2xx answer, else :class:`Refused` (for good) or
    :class:`ServerUnavailable` (for now).
    Over plain HTTP the body is built once the connection is open: a hook whose server is
    down does not read its spool only to spool again."""
    headers = {"Content-Type": "application/json", "Connection": "close"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        scheme, host, port, base = split_url(url)
        target = base + path
        if scheme == "https":
            status, data = _https(host, port, target, _encode(body), headers, timeout)
        else:
            status, data = _http(host or "127.0.0.1", port or 80, target, body, headers, timeout)
    except (OSError, ValueError) as exc:
        raise ServerUnavailable(f"{type(exc).__name__}: {exc}") from exc
    if 400 <= status < 500 and status not in _RETRIED:
        raise Refused(f"HTTP {status}: {_reason(data)}")
    if not 200 <= status < 300:
        raise ServerUnavailable(f"HTTP {status}: {data[:200]!r}")
    try:
        answer = loads(data or b"{}")
    except ValueError as exc:
        raise ServerUnavailable(f"not JSON: {data[:200]!r}") from exc
    return answer if isinstance(answer, dict) else {}


def split_url(url: str) -> tuple[str, str, int | None, str]:
    """(scheme, host, port or None, path without its trailing slash) of an ``http(s)://`` URL,
    as ``urllib.parse.urlsplit`` reads them; ValueError for anything else."""
    scheme, sep, rest = url.strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    for mark in "?#":
        rest = rest.split(mark, 1)[0]
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]  # userinfo is never sent
    if netloc.startswith("["):  # [IPv6]:port
        host, _, after = netloc[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ""
    else:
        host, _, port_text = netloc.partition(":")
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(f"bad port in {url!r}")
    port = int(port_text) if port_text else None
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"port out of range in {url!r}")
    return scheme, host.lower(), port, (slash + path).rstrip("/")


def _connect(host: str, port: int, timeout: float) -> _socket.socket:
    """A connected TCP socket (``socket.create_connection``, without the ``socket`` package)."""
    # an ASCII host is passed as bytes: a str would be IDNA-encoded first, which imports the
    # idna codec and unicodedata (milliseconds of start-up for a hook that runs once)
    address = host.encode("ascii") if host.isascii() else host
    error: OSError | None = None
    for family, kind, proto, _, sockaddr in _socket.getaddrinfo(
        address, port, 0, _socket.SOCK_STREAM
    ):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError(f"no address for {host}")


def _encode(body: Callable[[], object]) -> bytes:
    return dumps(body()).encode("utf-8")


def _http(
    host: str,
    port: int,
    target: str,
    body: Callable[[], object],
    headers: dict[str, str],
    timeout: float,
) -> tuple[int, bytes]:
    sock = _connect(host, port, timeout)
    try:
        payload = _encode(body)
        head = [f"POST {target} HTTP/1.1", f"Host: {host}:{port}"]
        head += [f"Content-Length: {len(payload)}", *(f"{k}: {v}" for k, v in headers.items())]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        chunks: list[bytes] = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
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
