"""/api/v1/providers: the LLM providers extraction may use. They serve the whole server, so
every call needs the admin scope; an API key is stored encrypted and never shown again."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from engram.api.deps import ActorDep, EngramDep
from engram.extraction.providers import PROVIDER_NAME_PATTERN, ProviderInfo, ProviderSettings

router = APIRouter(tags=["providers"])

Name = Annotated[str, Path(pattern=PROVIDER_NAME_PATTERN, description="The provider's name")]


@router.get("", summary="The configured LLM providers, never their keys (admin scope)")
def list_(engram: EngramDep, actor: ActorDep) -> list[ProviderInfo]:
    return engram.providers.describe(actor)


@router.put("/{name}", summary="Configure or replace an LLM provider (admin scope; audited)")
def put(name: Name, body: ProviderSettings, engram: EngramDep, actor: ActorDep) -> ProviderInfo:
    return engram.providers.set(name, body, actor)


@router.delete("/{name}", summary="Forget an LLM provider and its key (admin scope; audited)")
def delete(name: Name, engram: EngramDep, actor: ActorDep) -> ProviderInfo:
    return engram.providers.remove(name, actor)
