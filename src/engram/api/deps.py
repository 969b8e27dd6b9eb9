"""FastAPI dependencies, as ``Annotated`` aliases the routers declare (and tests may override):
``EngramDep`` is the service, ``ActorDep`` the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from engram.actors import LOCAL_USER, Actor
from engram.config import ServerSettings
from engram.errors import Unauthenticated
from engram.service import Engram

_bearer = HTTPBearer(
    auto_error=False, description="An Engram API key: 'Authorization: Bearer egm_…'"
)


def get_engram(request: Request) -> Engram:
    engram: Engram = request.app.state.engram
    return engram


def get_settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


EngramDep = Annotated[Engram, Depends(get_engram)]
SettingsDep = Annotated[ServerSettings, Depends(get_settings)]


def get_actor(
    engram: EngramDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Actor:
    if not settings.auth:
        return Actor(LOCAL_USER, "api")
    if credentials is None:
        raise Unauthenticated("missing API key: send 'Authorization: Bearer egm_…'")
    return engram.accounts.authenticate(credentials.credentials, "api")


ActorDep = Annotated[Actor, Depends(get_actor)]
