"""The routers a server imports only when first needed (engram.api.lazy): a first search
imports neither the other API routers nor the dashboard's screens; each is imported by the
first request under its prefix, routes exactly as when included directly (405s, path
parameters, url_path_for), and the OpenAPI document lists every route however few were used."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from starlette.routing import NoMatchFound

from engram.api.app import HOT
from engram.api.lazy import LazyRoutes, expanded
from engram.web import SCREENS

PROBE = textwrap.dedent(
    """
    import json, sys
    from fastapi.testclient import TestClient
    from engram import Engram
    from engram.servers import http_app
    from engram.store import open_store

    def loaded():
        return sorted(m for m in sys.modules
                      if m.startswith(("engram.api.routers.", "engram.web.")))

    app = http_app(Engram(open_store(sys.argv[1])))
    out = {"built": loaded()}
    with TestClient(app) as client:
        out["search"] = client.post("/api/v1/search", json={"query": "x"}).status_code
        out["after_search"] = loaded()
        out["facts"] = client.get("/api/v1/facts").status_code
        out["login"] = client.get("/ui/login").status_code
        out["after_facts_and_login"] = loaded()
        out["paths"] = sorted(client.get("/openapi.json").json()["paths"])
        out["after_openapi"] = loaded()
    print(json.dumps(out))
    """
)


def test_a_first_search_imports_no_other_router(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'engram.db'}"
    run = subprocess.run(
        [sys.executable, "-c", PROBE, url], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    api_routers = {n for n in out["built"] if n.startswith("engram.api.routers.")}
    # search and context at once; health is not under /api/v1; the hooks' fast route
    # (engram.api.capture_route) validates with the capture router's model
    assert api_routers == {f"engram.api.routers.{n}" for n in (*HOT, "health", "capture")}
    screens = {f"engram.web.{n}" for n in SCREENS}
    assert screens.isdisjoint(out["built"])
    assert out["search"] == 401  # answered (no key), and nothing else imported by it
    assert out["after_search"] == out["built"]
    assert (out["facts"], out["login"]) == (401, 200)
    assert "engram.api.routers.facts" in out["after_facts_and_login"]
    assert "engram.web.login" in out["after_facts_and_login"]  # all the screens at once
    assert "engram.api.routers.soul" not in out["after_facts_and_login"]
    # the document lists every route: all routers are imported to build it
    assert "engram.api.routers.soul" in out["after_openapi"]
    assert {"/api/v1/soul/blocks/{name}", "/api/v1/extract", "/api/v1/facts"} <= set(out["paths"])


def _lazy_app() -> tuple[FastAPI, list[int]]:
    built: list[int] = []

    def include(holder: APIRouter) -> None:
        built.append(1)
        router = APIRouter()

        @router.get("/items/{item_id}", name="item")
        def item(item_id: int) -> dict[str, int]:
            return {"id": item_id}

        holder.include_router(router, prefix="/v1")

    app = FastAPI()
    app.router.routes.append(LazyRoutes(["/v1/items"], include))
    return app, built


def test_lazy_routes_route_as_included_routes_do() -> None:
    app, built = _lazy_app()
    with TestClient(app) as client:
        assert client.get("/other").status_code == 404
        assert built == []  # a path outside its prefixes imports nothing
        assert client.get("/v1/items/7").json() == {"id": 7}
        assert client.post("/v1/items/7").status_code == 405
        assert client.get("/v1/items/x").status_code == 422
        assert client.get("/v1/items/7/more").status_code == 404
    assert built == [1]  # built once
    assert app.url_path_for("item", item_id=3) == "/v1/items/3"
    with pytest.raises(NoMatchFound):
        app.url_path_for("nothing")
    routes = expanded(app.router.routes)  # what the OpenAPI document is built from
    assert not any(isinstance(r, LazyRoutes) for r in routes)
    assert len(routes) == len(app.router.routes)  # the one router the lazy routes included
