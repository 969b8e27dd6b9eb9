"""LLM providers: the models extraction may ask. They serve the whole server, so every tool here
needs a key with the admin scope; an API key is stored encrypted and never shown again."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.extraction.providers import (
    PROVIDER_NAME_PATTERN,
    ApiKeyText,
    BaseUrl,
    ModelName,
    ProviderInfo,
    ProviderKind,
    ProviderSettings,
    Timeout,
)
from engram.mcp.binding import Binding
from engram.mcp.tools._common import DESTRUCTIVE, READ, UPDATE, tool

Name = Annotated[
    str, Field(pattern=PROVIDER_NAME_PATTERN, description="The provider's name, e.g. 'ollama'.")
]
_FIELDS = ProviderSettings.model_fields


class Providers(BaseModel):
    providers: list[ProviderInfo]


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "List LLM providers", READ)
    def list_llm_providers() -> Providers:
        """The configured LLM providers (never their keys; admin scope)."""
        return Providers(providers=b.engram.providers.describe(b.current_actor()))

    @tool(server, "Set an LLM provider", UPDATE)
    def set_llm_provider(
        name: Name,
        model: Annotated[ModelName, Field(description=_FIELDS["model"].description)],
        kind: Annotated[
            ProviderKind, Field(description=_FIELDS["kind"].description)
        ] = ProviderKind.OPENAI,
        base_url: Annotated[BaseUrl, Field(description=_FIELDS["base_url"].description)] = "",
        api_key: Annotated[
            ApiKeyText | None, Field(description=_FIELDS["api_key"].description)
        ] = None,
        timeout: Annotated[Timeout, Field(description=_FIELDS["timeout"].description)] = 60.0,
    ) -> ProviderInfo:
        """Configure (or replace) an LLM provider for extraction (admin scope; audited)."""
        settings = ProviderSettings.model_validate(
            {
                "kind": kind,
                "model": model,
                "base_url": base_url,
                "api_key": api_key,
                "timeout": timeout,
            }
        )
        return b.engram.providers.set(name, settings, b.current_actor())

    @tool(server, "Remove an LLM provider", DESTRUCTIVE)
    def remove_llm_provider(name: Name) -> ProviderInfo:
        """Forget an LLM provider and its stored key (admin scope; audited; not restorable:
        set it again to bring it back)."""
        return b.engram.providers.remove(name, b.current_actor())
