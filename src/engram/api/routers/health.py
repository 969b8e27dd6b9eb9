"""Liveness, readiness and metrics: outside /api/v1 and without authentication."""

from __future__ import annotations

import os

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from engram.api.deps import EngramDep
from engram.api.errors import ErrorBody, error_response
from engram.api.schemas import Health
from engram.errors import EngramError

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is up")
def healthz() -> Health:
    return Health(status="ok", pid=os.getpid())


@router.get(
    "/readyz",
    summary="The store answers",
    responses={503: {"model": ErrorBody, "description": "The store is not usable"}},
    response_model=Health,
)
def readyz(engram: EngramDep) -> Response | Health:
    try:
        engram.store.applied_migrations()
    except EngramError as exc:
        return error_response(503, "not_ready", exc.message)
    return Health(status="ready", pid=os.getpid())


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}},
)
def metrics(request: Request) -> Response:
    data = generate_latest(request.app.state.metrics.registry)
    return Response(data, media_type=CONTENT_TYPE_LATEST)
