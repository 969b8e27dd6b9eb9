"""The API docs at /docs with Swagger UI 5 served from this server (the assets the
``fastapi-offline`` package ships), so they work offline and under the dashboard's
Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
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
<script src="/ui/static/docs.js"></script></body></html>
"""


def mount(app: FastAPI) -> None:
    """Serve /docs (the app must be created with ``docs_url=None``)."""
    app.mount(PATH + "/assets", StaticFiles(directory=ASSETS), name="swagger-ui")
    page = PAGE.format(title=app.title, openapi=app.openapi_url or "/openapi.json")

    @app.get(PATH, include_in_schema=False)
    def swagger() -> HTMLResponse:
        return HTMLResponse(page)
