"""The API docs at /docs with Swagger UI 5 served from this server (the assets the
``fastapi-offline`` package ships), so they work offline; the page runs under a strict
Content-Security-Policy (only this origin's scripts and styles)."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

PATH = "/docs"
ASSETS = Path(fastapi_offline.__file__).parent / "static"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} – API docs</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui" data-url="{openapi}"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>
"""

INIT = """// Starts Swagger UI with the spec the page names (no inline script: strict CSP).
"use strict";
window.ui = SwaggerUIBundle({
  url: document.getElementById("swagger-ui").getAttribute("data-url"),
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
"""

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}


def mount(app: FastAPI) -> None:
    """Serve /docs (the app must be created with ``docs_url=None``)."""
    app.mount(PATH + "/assets", StaticFiles(directory=ASSETS), name="swagger-ui")
    page = PAGE.format(title=app.title, openapi=app.openapi_url or "/openapi.json")

    @app.get(PATH, include_in_schema=False)
    def swagger() -> HTMLResponse:
        return HTMLResponse(page, headers=HEADERS)

    @app.get(PATH + "/init.js", include_in_schema=False)
    def init() -> Response:
        return Response(INIT, media_type="text/javascript", headers=HEADERS)
