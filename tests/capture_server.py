"""A real uvicorn server over an :class:`Engram`, on a chosen or free loopback port, for the
capture tests (the hook client and the real agents post to it)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from engram import Engram
from engram.api import ServerSettings, create_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serve(
    engram: Engram,
    port: int | None = None,
    build: Callable[[Engram, ServerSettings], ASGIApp] = create_app,
) -> Iterator[str]:
    """Serve ``build(engram, settings)`` (default: the REST app) until the block ends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port or 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        build(engram, ServerSettings(port=port)), log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
