"""The composition root of the long-running processes: it joins edges, which never import
each other.

- ``engram serve``: one HTTP app over one :class:`Engram`, serving the REST API
  (:mod:`engram.api`, at ``/api/v1``) and MCP over Streamable HTTP (:mod:`engram.mcp.http`, at
  ``/mcp``, the same API keys), and the web dashboard (:mod:`engram.web`, at ``/ui``, signed in
  with a user's password), with embedding and maintenance in the background; with auth,
  Engram's OAuth authorization server (:mod:`engram.oauth`) signs remote MCP clients in to
  ``/mcp``. The REST API and the dashboard answer as soon as they are built; MCP and OAuth are
  built on a thread once the server is up and the model loaded (:func:`served_app`).
- ``engram serve --workers N``: N such processes on one port (:mod:`engram.api.prefork`; on
  Linux each listens on a socket of its own and the kernel spreads the connections), each
  with its own :class:`Engram` over the one store; the first also runs the background jobs.
- ``engram mcp``: MCP on stdio (:mod:`engram.mcp.stdio`).

The CLI calls these; frameworks load only when one runs (the imports are inside).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

from engram.config import ServerSettings, Settings
from engram.service import Engram

if TYPE_CHECKING:
    import socket

    from fastapi import FastAPI
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import ASGIApp, Receive, Scope, Send


def http_app(engram: Engram, settings: ServerSettings | None = None) -> FastAPI:
    """The app ``engram serve`` runs: REST at /api/v1, MCP at /mcp (API keys, and OAuth tokens
    of the authorization server mounted beside it), the dashboard at /ui."""
    from engram.mcp.http import run_in_lifespan

    settings = settings or ServerSettings()
    app = _local_app(engram, settings)
    run_in_lifespan(app, _attach_remote(app, engram, settings))
    return app


def _local_app(engram: Engram, settings: ServerSettings) -> FastAPI:
    """The REST API and the dashboard, their routers imported when first needed."""
    from engram.api import create_app
    from engram.api.lazy import LazyRoutes
    from engram.web import mount as mount_web

    app = create_app(engram, settings)
    mount_web(app, engram, defer=LazyRoutes)
    return app


def _attach_remote(
    app: FastAPI, engram: Engram, settings: ServerSettings
) -> StreamableHTTPSessionManager:
    """MCP at /mcp and, with auth, the OAuth authorization server beside it (the MCP SDK is
    most of what the app imports and builds); returns the MCP sessions to run."""
    from engram.mcp.http import PATH, attach

    if not settings.auth:
        return attach(app, engram, settings)
    from engram.oauth import mount as mount_oauth
    from engram.service.oauth import OAUTH_SCOPES

    base = settings.base_url
    provider = mount_oauth(app, engram, base, base + PATH)
    server = None if provider is None else base
    return attach(
        app, engram, settings, oauth=provider, authorization_server=server, scopes=OAUTH_SCOPES
    )


DEFER_REMOTE_S = 2.0
"""Seconds after the model and the vector index are loaded before MCP and OAuth are built
unless a request for them comes first: the first searches do not share the CPU with it."""


def served_app(
    engram: Engram,
    settings: ServerSettings,
    after: threading.Event,
    defer: float = DEFER_REMOTE_S,
    started: Callable[[], None] | None = None,
) -> ASGIApp:
    """:func:`http_app` as a server runs it: the REST API and the dashboard answer as soon as
    they are built; MCP and OAuth (the MCP SDK is a third of the start-up) are built on a
    thread once the server is up and ``after`` is set (the embedding model and the vector index
    loaded), as soon as a request for them comes or ``defer`` seconds later, so that the first
    searches do not share the CPU with their build. A request for them waits until they are
    mounted (see :class:`Remote`). ``started``: called on that thread once they are built."""
    import anyio.to_thread

    app = _local_app(engram, settings)
    remote = Remote(app)
    outer = app.router.lifespan_context

    def build() -> StreamableHTTPSessionManager | None:
        from starlette.routing import NoMatchFound

        while not after.wait(0.1):
            if remote.stopping.is_set():  # stopped before it was built
                return None
        remote.wanted.wait(defer)
        if remote.stopping.is_set():
            return None
        sessions = _attach_remote(app, engram, settings)
        # every route's handler now, rather than on the first request each router gets
        with suppress(NoMatchFound):
            app.url_path_for("\0")
        if started is not None:
            started()
        return sessions

    async def serve_sessions() -> None:
        try:
            sessions = await anyio.to_thread.run_sync(build)
        except Exception:
            logging.getLogger("engram.api").exception("MCP and OAuth failed to start")
            remote.ready(failed=True)
            return
        if sessions is None:
            return
        async with sessions.run():
            remote.ready()
            await remote.stopped()

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        remote.start()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve_sessions)
            try:
                ctx: AbstractAsyncContextManager[Any] = outer(a)
                async with ctx as state:
                    yield state
            finally:
                remote.stop()

    app.router.lifespan_context = lifespan
    return remote


class Remote:
    """The served app, holding back what is still being built: a request for a path outside
    :data:`AT_ONCE` waits until MCP and OAuth are mounted (built at once when one is asked
    for, else :data:`DEFER_REMOTE_S` after the model loaded), or gets 503 if they failed to
    build (the log says why)."""

    AT_ONCE = ("/api/", "/healthz", "/readyz", "/metrics", "/ui")

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.stopping = threading.Event()  # the lifespan is ending
        self.wanted = threading.Event()  # a request for what is still being built came
        self._built: asyncio.Event | None = None  # set once the lifespan starts building
        self._stop = asyncio.Event()
        self._failed = False

    def start(self) -> None:
        self._built = asyncio.Event()
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.wanted.set()  # the build stops waiting
        self._stop.set()

    async def stopped(self) -> None:
        await self._stop.wait()

    def ready(self, *, failed: bool = False) -> None:
        self._failed = failed
        if self._built is not None:
            self._built.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        built = self._built
        if (
            built is not None
            and scope["type"] in ("http", "websocket")
            and not str(scope.get("path", "")).startswith(self.AT_ONCE)
        ):
            if not built.is_set():
                self.wanted.set()
                await built.wait()
            if self._failed:
                from engram.api.errors import error_response

                problem = "MCP and OAuth failed to start (the server's log says why)"
                await error_response(503, "not_ready", problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def configure_logging(level: str) -> None:
    """JSON lines on stderr (the server's log format)."""
    from engram.api.observability import configure_logging as configure

    configure(level)


def run_http(
    engram: Engram,
    settings: ServerSettings,
    *,
    maintenance_every: float,
    sock: socket.socket | None = None,
    jobs: bool = True,
) -> None:
    """Serve until SIGINT/SIGTERM (on ``sock`` when given, else the settings' address), with
    the background jobs unless ``jobs`` is false (``maintenance_every`` seconds between
    sweeps; 0: never)."""
    import uvicorn

    from engram.api.server import uvicorn_options
    from engram.blas import limit_blas_threads
    from engram.collector import settle
    from engram.service.jobs import BackgroundJobs

    limit_blas_threads(1)  # requests run side by side: one BLAS thread each (engram.blas)

    # the model and the vector index load while the app is built (both wait on I/O and numpy,
    # which release the GIL): the first semantic search finds them ready. What start-up built
    # is frozen out of the garbage collector's passes once warm, and again once MCP and OAuth
    # are built (engram.collector)
    warmed = threading.Event()
    threading.Thread(
        target=_warm, args=(engram, warmed, settle), name="engram-warm", daemon=True
    ).start()
    config = uvicorn.Config(
        served_app(engram, settings, warmed, started=settle),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
        server_header=False,
        **uvicorn_options(),  # head limits (a long URL gets 414, not a reset) and keep-alive
    )
    background = BackgroundJobs(engram, maintenance_every) if jobs else None
    if background is not None:
        background.start()
    try:
        uvicorn.Server(config).run(sockets=None if sock is None else [sock])
    finally:
        if background is not None:
            background.stop()


def _warm(engram: Engram, done: threading.Event, then: Callable[[], None] | None = None) -> None:
    """Warm ``engram`` up, then call ``then`` (whether or not warming succeeded)."""
    try:
        engram.warm()
    except Exception:  # the first request loads whatever failed here, and reports it
        logging.getLogger("engram.api").exception("warming up failed")
    finally:
        if then is not None:
            then()
        done.set()


def run_workers(settings: Settings, server: ServerSettings, *, maintenance_every: float) -> int:
    """``server.workers`` processes on one socket, each opening the store itself; the first
    runs the indexer and maintenance. The frameworks and the embedding model are loaded before
    the fork, so the workers share them and start at once. Returns the exit status."""
    from dataclasses import replace

    from engram.api.prefork import Listener, serve_forked
    from engram.embeddings import LazyEmbedder, load_embedder

    for module in ("engram.api", "engram.mcp.http", "engram.web", "engram.oauth", "uvicorn"):
        __import__(module)
    embedder = load_embedder(settings.embedder, settings.model_cache, settings.embeddings_api_key)
    if isinstance(embedder, LazyEmbedder):
        embedder.inner()  # a local model, loaded once and shared by the workers
    listener = Listener(server.host, server.port)
    server = replace(server, port=listener.port)

    def worker(index: int) -> int:
        sock = listener.socket()
        with Engram.open(settings, embedder=embedder) as engram:
            run_http(
                engram, server, maintenance_every=maintenance_every, sock=sock, jobs=index == 0
            )
        return 0

    try:
        return serve_forked(server.workers, worker)
    finally:
        listener.close()


def run_stdio(
    engram: Engram, token: str | None, environment: str | None, project: str | None
) -> None:
    """Serve MCP on stdin/stdout until stdin closes (see :mod:`engram.mcp.stdio`)."""
    from engram.mcp.stdio import serve_stdio

    serve_stdio(engram, token, environment, project)
