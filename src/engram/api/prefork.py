"""Several server processes on one listening socket: ``engram serve --workers N``.

The parent binds the socket, then forks ``N`` workers that each accept connections on it (the
kernel spreads them) and run their own app over their own connections to the store; the
parent only supervises (a worker dies with it, even when it is killed). SIGINT or SIGTERM is
passed to every worker, which finishes its in-flight requests and exits; the parent then exits
with the first non-zero status. A worker that dies on its own is started again (at most
:data:`MAX_RESTARTS` times a minute, then the whole server stops).

Forking after the imports (and whatever the caller loaded before :func:`serve_forked`) lets
every worker start without importing again; nothing that holds a thread or an open database
may exist in the parent at the fork.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from types import FrameType

log = logging.getLogger("engram.api")

MAX_RESTARTS = 5
"""Unexpected worker exits tolerated per minute before the server gives up."""
_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """Have the kernel kill this worker when the parent dies (a SIGKILLed server leaves no
    worker holding its port); Linux only, elsewhere a no-op."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


BALANCED = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
"""Whether each worker listens on a socket of its own (``SO_REUSEPORT``: the kernel spreads
new connections over the workers' sockets). On one shared socket, every worker is woken by a
new connection and the first to run accepts all that are waiting (asyncio accepts up to its
backlog at once): 16 clients connecting together all reached one worker, which then did the
work of both while the other idled. Elsewhere (macOS and the BSDs do not spread connections
over such sockets) the workers share one."""


def bind(host: str, port: int, *, reuse_port: bool = False, listen: bool = True) -> socket.socket:
    """A listening socket of the workers (``port`` 0: a free one); with ``reuse_port``, one of
    several on the port (``SO_REUSEPORT``); without ``listen``, one that only holds the port.

    Made with the protocol named (``IPPROTO_TCP``, as uvicorn's own sockets are): asyncio
    turns Nagle's algorithm off (``TCP_NODELAY``) only on a connection whose socket says it is
    TCP, and an accepted connection inherits the listener's protocol number. With Nagle on, an
    answer written in two parts (head, then body) waited for the client's delayed ACK: about
    40 ms on every request of a worker."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
        if listen:
            sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class Listener:
    """Where the workers accept connections: the parent makes it before the fork, and each
    worker takes :meth:`socket` once forked (its own listening socket on the port where
    :data:`BALANCED`, else the one the parent made)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        # the parent's socket holds the port (a free one for port 0) and, where the workers
        # listen on their own, accepts nothing: only listening sockets receive connections
        self._held = bind(host, port, reuse_port=BALANCED, listen=not BALANCED)
        self.port: int = self._held.getsockname()[1]

    def socket(self) -> socket.socket:
        """The listening socket of the worker that calls it."""
        if not BALANCED:
            return self._held
        return bind(self.host, self.port, reuse_port=True)

    def close(self) -> None:
        self._held.close()


def serve_forked(workers: int, run: Callable[[int], int]) -> int:
    """Fork ``workers`` processes running ``run(index)`` (its return is the worker's exit
    status) and supervise them until a signal stops them; returns the exit status."""
    children: dict[int, int] = {}  # pid -> worker index
    stopping = False
    restarts: list[float] = []
    status = 0

    parent = os.getpid()

    def start(index: int) -> None:
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                _die_with(parent)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = run(index)
            except BaseException:
                log.exception("worker failed", extra={"worker": index})
            finally:
                os._exit(code)
        children[pid] = index

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    for index in range(workers):
        start(index)
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while children:
            try:
                pid, raw = os.wait()
            except ChildProcessError:
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries os.wait
                continue
            if pid not in children:
                continue
            index = children.pop(pid)
            code = os.waitstatus_to_exitcode(raw)
            if stopping:
                status = status or max(code, 0)
                continue
            now = time.monotonic()
            restarts[:] = [t for t in restarts if now - t < 60] + [now]
            log.error("worker exited; starting it again", extra={"worker": index, "code": code})
            if len(restarts) > MAX_RESTARTS:
                log.error("workers keep exiting: stopping the server")
                status = code or 1
                stop(signal.SIGTERM, None)
                continue
            start(index)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status
