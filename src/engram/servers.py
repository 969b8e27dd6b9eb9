"""The composition root of the long-running processes: it joins edges, which never import
each other.

- ``engram serve``: one HTTP app over one :class:`Engram`, serving the REST API
  (:mod:`engram.api`, at ``/api/v1``) and MCP over Streamable HTTP (:mod:`engram.mcp.http`, at
  ``/mcp``, the same API keys), and the web dashboard (:mod:`engram.web`, at ``/ui``, signed in
  with a user's password), with embedding and maintenance in the background; with auth,
  Engram's OAuth authorization server (:mod:`engram.oauth`) signs remote MCP clients in to
  ``/mcp``.
- ``engram serve --workers N``: N such processes on one listening socket
  (:mod:`engram.api.prefork`), each with its own :class:`Engram` over the one store; the first
  also runs the background jobs.
- ``engram mcp``: MCP on stdio (:mod:`engram.mcp.stdio`).

The CLI calls these; frameworks load only when one runs (the imports are inside).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.config import ServerSettings, Settings
from engram.service import Engram

if TYPE_CHECKING:
    import socket

    from fastapi import FastAPI


def http_app(engram: Engram, settings: ServerSettings | None = None) -> FastAPI:
    """The app ``engram serve`` runs: REST at /api/v1, MCP at /mcp (API keys, and OAuth tokens
    of the authorization server mounted beside it), the dashboard at /ui."""
    from engram.api import create_app
    from engram.mcp.http import PATH
    from engram.mcp.http import mount as mount_mcp
    from engram.web import mount as mount_web

    settings = settings or ServerSettings()
    app = create_app(engram, settings)
    if not settings.auth:
        mount_mcp(app, engram, settings)
        mount_web(app, engram)
        return app
    from engram.oauth import mount as mount_oauth
    from engram.service.oauth import OAUTH_SCOPES

    base = settings.base_url
    provider = mount_oauth(app, engram, base, base + PATH)
    server = None if provider is None else base
    mount_mcp(
        app, engram, settings, oauth=provider, authorization_server=server, scopes=OAUTH_SCOPES
    )
    mount_web(app, engram)
    return app


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
    import threading

    import uvicorn

    from engram.api.server import uvicorn_options
    from engram.service.jobs import BackgroundJobs

    # the model and the vector index load while the app is built (both wait on I/O and numpy,
    # which release the GIL): the first semantic search finds them ready
    threading.Thread(target=_warm, args=(engram,), name="engram-warm", daemon=True).start()
    config = uvicorn.Config(
        http_app(engram, settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
        server_header=False,
        **uvicorn_options(),  # request-head limits: a long URL gets 414, not a reset
    )
    background = BackgroundJobs(engram, maintenance_every) if jobs else None
    if background is not None:
        background.start()
    try:
        uvicorn.Server(config).run(sockets=None if sock is None else [sock])
    finally:
        if background is not None:
            background.stop()


def _warm(engram: Engram) -> None:
    import logging

    try:
        engram.warm()
    except Exception:  # the first request loads whatever failed here, and reports it
        logging.getLogger("engram.api").exception("warming up failed")


def run_workers(settings: Settings, server: ServerSettings, *, maintenance_every: float) -> int:
    """``server.workers`` processes on one socket, each opening the store itself; the first
    runs the indexer and maintenance. The frameworks and the embedding model are loaded before
    the fork, so the workers share them and start at once. Returns the exit status."""
    from dataclasses import replace

    from engram.api.prefork import bind, serve_forked
    from engram.embeddings import LazyEmbedder, load_embedder

    for module in ("engram.api", "engram.mcp.http", "engram.web", "engram.oauth", "uvicorn"):
        __import__(module)
    embedder = load_embedder(settings.embedder, settings.model_cache, settings.embeddings_api_key)
    if isinstance(embedder, LazyEmbedder):
        embedder.inner()  # a local model, loaded once and shared by the workers
    sock = bind(server.host, server.port)
    server = replace(server, port=sock.getsockname()[1])

    def worker(index: int) -> int:
        with Engram.open(settings, embedder=embedder) as engram:
            run_http(
                engram, server, maintenance_every=maintenance_every, sock=sock, jobs=index == 0
            )
        return 0

    try:
        return serve_forked(server.workers, worker)
    finally:
        sock.close()


def run_stdio(
    engram: Engram, token: str | None, environment: str | None, project: str | None
) -> None:
    """Serve MCP on stdin/stdout until stdin closes (see :mod:`engram.mcp.stdio`)."""
    from engram.mcp.stdio import serve_stdio

    serve_stdio(engram, token, environment, project)
