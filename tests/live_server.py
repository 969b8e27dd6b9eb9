"""A real uvicorn server on a loopback port, in a thread, for the block of a ``with``: the live
API tests, the SDK tests and the capture tests (the hook client and the real agents post to it)
all start theirs here. :func:`start_serve` starts a real ``engram serve`` process instead."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from engram import Engram
from engram.api import ServerSettings, create_app
from engram.api.server import uvicorn_options


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def running(make_app: Callable[[int], ASGIApp], port: int | None = None) -> Iterator[str]:
    """Serve ``make_app(port)`` with uvicorn (the server's own request-head limits, lifespan on)
    on ``port`` or a free loopback port for the block; yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port or 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        make_app(port),
        log_config=None,
        access_log=False,
        lifespan="on",
        **uvicorn_options(),
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
        assert not thread.is_alive()


def serve(
    engram: Engram,
    port: int | None = None,
    build: Callable[[Engram, ServerSettings], ASGIApp] = create_app,
) -> AbstractContextManager[str]:
    """``build(engram, settings)`` (default: the REST app) served by :func:`running`; yields
    its URL."""
    return running(lambda p: build(engram, ServerSettings(port=p)), port)


def start_serve(
    env: dict[str, str], args: Sequence[str], log: Path, port: int
) -> subprocess.Popen[bytes]:
    """``engram serve ARGS`` as a process of its own (output appended to ``log``), once its
    ``/readyz`` on ``port`` answers 200."""
    import httpx

    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engram", "serve", "--log-level", "warning", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"the server exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "the server did not start"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.05)
