"""The storage seam for configured LLM providers. The API key arrives here already encrypted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


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
