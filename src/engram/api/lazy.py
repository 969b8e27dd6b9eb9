"""Routers imported when first needed: a server answers its first search without importing
(and building the handlers of) the eighteen routers that search does not use.

:class:`LazyRoutes` stands in the application's routes where a router would be included. It
claims no request outside its path prefixes; the first request under one of them imports the
router's module and includes it, exactly as ``include_router`` would have, and from then on it
routes to those routes (matching, 405s and ``url_path_for`` included). A server loads every
router in the background once it has answered (``engram.servers``: ``url_path_for`` reaches
every route), and the OpenAPI document is built from the loaded routes (:func:`expanded`), so
what a client sees does not depend on which requests came first.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fastapi import APIRouter
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send

_MATCHED = "engram.lazy_route"
"""The scope key that carries the route a :class:`LazyRoutes` matched to its ``handle``."""


class LazyRoutes(BaseRoute):
    """The routes ``include`` adds to a router, built on first use; every one of them has a
    path under one of ``paths``."""

    def __init__(self, paths: Sequence[str], include: Callable[[APIRouter], None]) -> None:
        self.paths = tuple(paths)
        self._include = include
        self._routes: list[BaseRoute] | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(
        cls, module: str, paths: Sequence[str], include: Callable[[APIRouter, APIRouter], None]
    ) -> LazyRoutes:
        """The routes of ``module``'s ``router``, as ``include(holder, router)`` adds them."""
        return cls(paths, lambda holder: include(holder, importlib.import_module(module).router))

    @property
    def routes(self) -> list[BaseRoute]:
        """The routes (importing and building them the first time)."""
        if self._routes is None:
            with self._lock:
                if self._routes is None:
                    holder = APIRouter()
                    self._include(holder)
                    self._routes = list(holder.routes)
        return self._routes

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] not in ("http", "websocket") or not get_route_path(scope).startswith(
            self.paths
        ):
            return Match.NONE, {}
        partial: tuple[BaseRoute, Scope] | None = None
        for route in self.routes:
            match, child = route.matches(scope)
            if match is Match.FULL:
                return Match.FULL, {**child, _MATCHED: route}
            if match is Match.PARTIAL and partial is None:
                partial = (route, child)
        if partial is not None:
            return Match.PARTIAL, {**partial[1], _MATCHED: partial[0]}
        return Match.NONE, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        route: BaseRoute = scope.pop(_MATCHED)
        await route.handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        for route in self.routes:
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                pass
        raise NoMatchFound(name, path_params)


def expanded(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """``routes`` with every :class:`LazyRoutes` replaced by its (loaded) routes, in place."""
    out: list[BaseRoute] = []
    for route in routes:
        out.extend(route.routes if isinstance(route, LazyRoutes) else [route])
    return out
