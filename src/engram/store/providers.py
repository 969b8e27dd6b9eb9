"""The storage seam for configured LLM providers. The API key arrives here already encrypted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, cast

from engram.errors import MissingDependency
from engram.store.protocol import Store


@dataclass(frozen=True, slots=True)
class ProviderRecord:
    name: str
    kind: str
    base_url: str
    model: str
    encrypted_key: bytes | None
    timeout: float
    created_at: datetime


class ProviderStore(Protocol):
    def put_provider(self, record: ProviderRecord) -> None:
        """Insert or replace the provider of that name."""
        ...

    def get_provider(self, name: str) -> ProviderRecord | None: ...

    def list_providers(self) -> list[ProviderRecord]: ...

    def delete_provider(self, name: str) -> bool: ...


def provider_store_for(store: Store) -> ProviderStore:
    found = getattr(store, "providers", None)  # both backends carry their own
    if found is not None:
        return cast(ProviderStore, found)
    raise MissingDependency(f"LLM providers are not supported on {type(store).__name__}")
