"""The one edge where errors become HTTP: every error response has the same JSON body,

    {"error": {"code": "not_found", "message": "memory 'mem_x' does not exist", "details": {}}}

Domain errors map to a status by class; request validation is 422 with the pydantic errors in
``details.errors``, and so is a body that cannot be decoded (not UTF-8, not JSON, nested too
deep); an unknown route is 404, a wrong method 405; the HTTP limits (``engram.api.guard``) are
413, 414 and 431; anything unexpected is a logged 500 with no internals in the body.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from engram.errors import (
    Conflict,
    EngramError,
    InvalidInput,
    MissingDependency,
    NotFound,
    PermissionDenied,
    Saturated,
    StorageError,
    Unauthenticated,
    validation_text,
)
from engram.limits import MAX_JSON_DEPTH

log = logging.getLogger("engram.api")

STATUS: dict[type[EngramError], int] = {
    InvalidInput: 422,
    Unauthenticated: 401,
    PermissionDenied: 403,
    NotFound: 404,
    Conflict: 409,
    MissingDependency: 501,
    StorageError: 503,
    Saturated: 429,
}
_HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    401: "unauthenticated",
    413: "payload_too_large",
    414: "uri_too_long",
    431: "headers_too_large",
}


class ErrorDetail(BaseModel):
    code: str = Field(description="Machine-readable: invalid_input, not_found, conflict, ...")
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (401, "Missing, invalid or revoked API key"),
        (403, "Your role or key scope does not allow this"),
        (404, "Not found, or not visible to you"),
        (409, "Conflicts with the current state"),
        (413, "The request body is over the size limit"),
        (414, "The URL is over the length limit"),
        (422, "Invalid input, or a body that is not UTF-8 JSON"),
        (429, "The server is saturated: retry after the Retry-After seconds"),
        (431, "The request headers are over the size limit"),
    )
}


def status_of(exc: EngramError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, details=details or {}))
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if status == 429:  # saturated: when to try again (the error's own hint, else 1 s)
        headers = {"Retry-After": str((details or {}).get("retry_after", 1))}
    return JSONResponse(jsonable_encoder(body.model_dump()), status_code=status, headers=headers)


def _validation_details(errors: Any) -> tuple[str, dict[str, Any]]:
    plain = [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "msg": validation_text(str(e.get("msg", ""))),
            "type": str(e.get("type", "")),
        }
        for e in errors
    ]
    message = "; ".join(_where_what(e, raw) for e, raw in zip(plain, errors, strict=True))
    return message or "invalid input", {"errors": plain}


def _where_what(error: dict[str, Any], raw: Any) -> str:
    """One error as 'where: what'. A body that is not JSON says so and where it broke (its
    location is the body and a character offset, which read like a field: 'body.16')."""
    if error["type"] == "json_invalid":
        at = error["loc"][1] if len(error["loc"]) > 1 else "?"
        why = (raw.get("ctx") or {}).get("error") if isinstance(raw, dict) else None
        return f"the request body is not valid JSON (at character {at}{f': {why}' if why else ''})"
    where, what = ".".join(error["loc"]) or "input", error["msg"]
    if error["type"] == "extra_forbidden" and error["loc"] == ["body", "environment"]:
        # search and context take it in the body; a memory's write, as every write route, in
        # the query
        what += "; name the environment in the query: ?environment=NAME"
    elif error["loc"] == ["body"] and error["type"] in ("model_attributes_type", "dict_type"):
        what += " (send a JSON object, with the header Content-Type: application/json)"
    return f"{where}: {what}"


async def _engram_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, EngramError)
    status = status_of(exc)
    if status >= 500:
        log.error("request failed: %s", exc.message, extra={"path": request.url.path})
    return error_response(status, exc.code, exc.message, jsonable_encoder(exc.details))


async def _request_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError | ValidationError)
    message, details = _validation_details(exc.errors())
    return error_response(422, InvalidInput.code, message, details)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:  # FastAPI's only 400: a body it could not decode
        return error_response(
            422,
            InvalidInput.code,
            "the request body could not be read as JSON: it must be UTF-8 and nested at most "
            f"{MAX_JSON_DEPTH} levels deep",
        )
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", extra={"path": request.url.path})
    return error_response(500, "internal_error", "internal server error")


def install(app: FastAPI) -> None:
    app.add_exception_handler(EngramError, _engram_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(ValidationError, _request_validation)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
