"""LLM providers the user configures, spoken to over plain HTTP (httpx, no SDK):
any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, OpenRouter...) and
Anthropic's messages API. API keys are held as ``SecretStr`` and never logged."""

from __future__ import annotations

import logging
import re
from enum import StrEnum
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from engram.errors import EngramError
from engram.limits import JSON_NUMBER, InputModel

log = logging.getLogger(__name__)

ANTHROPIC_VERSION = "2023-06-01"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
PROVIDER_NAME_PATTERN = _NAME_RE.pattern
"""A provider's name: 1-64 lowercase letters, digits, '_', '.', '-'."""

ModelName = Annotated[str, Field(min_length=1, max_length=200)]
BaseUrl = Annotated[str, Field(max_length=2_000)]
_KEY_BOUNDS = Field(min_length=1, max_length=1_000)
ApiKeyText = Annotated[str, _KEY_BOUNDS]
"""An API key as a caller sends it (held as a ``SecretStr`` once validated)."""
Timeout = Annotated[float, Field(gt=0, le=600), JSON_NUMBER]
"""Seconds to wait for a provider."""


class ProviderError(EngramError):
    """A provider could not give an answer: HTTP error, timeout, or a reply of the wrong shape."""

    code = "provider_error"


class ProviderKind(StrEnum):
    OPENAI = "openai"
    """Any endpoint speaking OpenAI's chat completions (``{base_url}/chat/completions``)."""
    ANTHROPIC = "anthropic"
    """Anthropic's messages API (``{base_url}/v1/messages``)."""


DEFAULT_URLS = {
    ProviderKind.OPENAI: "https://api.openai.com/v1",
    ProviderKind.ANTHROPIC: "https://api.anthropic.com",
}


class ProviderConfig(BaseModel):
    """A configured provider. ``api_key`` is optional (local servers such as Ollama need none)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME_RE.pattern)
    kind: ProviderKind
    model: str = Field(min_length=1, max_length=200)
    base_url: str = ""
    api_key: SecretStr | None = None
    timeout: float = Field(default=60.0, gt=0, le=600)
    max_tokens: int = Field(default=4096, ge=1, le=200_000)

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_URLS[self.kind]).rstrip("/")


class ProviderSettings(InputModel):
    """What configures a provider besides its name: the body of ``PUT /api/v1/providers/{name}``
    and the arguments of the MCP tool ``set_llm_provider`` (one model, one set of limits)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ProviderKind = Field(
        default=ProviderKind.OPENAI,
        description="openai (any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM...) or "
        "anthropic.",
    )
    model: ModelName = Field(description="The model to ask.")
    base_url: BaseUrl = Field(
        default="",
        description="The endpoint, e.g. http://localhost:11434/v1 for Ollama (empty: the "
        "kind's public endpoint).",
    )
    api_key: Annotated[SecretStr, _KEY_BOUNDS] | None = Field(
        default=None, description="Stored encrypted, never shown again; none for local servers."
    )
    timeout: Timeout = Field(default=60.0, description="Seconds to wait.")

    def config(self, name: str) -> ProviderConfig:
        return ProviderConfig(name=name, **self.model_dump())


class ProviderInfo(BaseModel):
    """A configured provider as listed: never its key, only whether one is stored."""

    name: str
    kind: ProviderKind
    model: str
    url: str
    """The endpoint asked (the kind's public one when none was given)."""
    has_key: bool
    timeout: float

    @classmethod
    def of(cls, config: ProviderConfig) -> ProviderInfo:
        return cls(
            name=config.name,
            kind=config.kind,
            model=config.model,
            url=config.url,
            has_key=config.api_key is not None,
            timeout=config.timeout,
        )


class LLMClient(Protocol):
    """The one-method contract: a system and a user prompt in, the model's text out."""

    config: ProviderConfig

    def complete(self, system: str, user: str) -> str: ...


def _post(config: ProviderConfig, url: str, headers: dict[str, str], body: Any) -> Any:
    import httpx  # a base dependency; loaded only when a provider is asked

    log.info("asking %s (%s, model %s)", config.name, config.kind.value, config.model)
    try:
        response = httpx.post(url, headers=headers, json=body, timeout=config.timeout)
    except httpx.TimeoutException as exc:
        raise ProviderError(f"{config.name}: no answer within {config.timeout:g} s") from exc
    except httpx.HTTPError as exc:
        raise ProviderError(f"{config.name}: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise ProviderError(f"{config.name}: HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderError(f"{config.name}: the reply is not JSON") from exc


class OpenAICompatible:
    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    def complete(self, system: str, user: str) -> str:
        c = self.config
        headers = {"content-type": "application/json"}
        if c.api_key is not None:
            headers["authorization"] = "Bearer " + c.api_key.get_secret_value()
        body = {
            "model": c.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "max_tokens": c.max_tokens,
            "response_format": {"type": "json_object"},
        }
        data = _post(c, c.url + "/chat/completions", headers, body)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"{c.name}: the reply has no choices[0].message.content") from exc
        if not isinstance(content, str):
            raise ProviderError(f"{c.name}: the message content is not text")
        return content


class Anthropic:
    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    def complete(self, system: str, user: str) -> str:
        c = self.config
        headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if c.api_key is not None:
            headers["x-api-key"] = c.api_key.get_secret_value()
        body = {
            "model": c.model,
            "max_tokens": c.max_tokens,
            "temperature": 0,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        data = _post(c, c.url + "/v1/messages", headers, body)
        try:
            parts = [b["text"] for b in data["content"] if b.get("type") == "text"]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProviderError(f"{c.name}: the reply has no text content blocks") from exc
        if not parts or not all(isinstance(p, str) for p in parts):
            raise ProviderError(f"{c.name}: the reply has no text")
        return "".join(parts)


def client_for(config: ProviderConfig) -> LLMClient:
    if config.kind is ProviderKind.ANTHROPIC:
        return Anthropic(config)
    return OpenAICompatible(config)
