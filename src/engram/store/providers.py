"""The storage seam for configured LLM providers. The API key arrives here already encrypted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from engram.store.accounts import Audit


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
    def put_provider(self, record: ProviderRecord, audit: Audit = ()) -> None:
        """Insert or replace the provider of that name (and append the audit entries, in the
        same transaction)."""
        ...

    def get_provider(self, name: str) -> ProviderRecord | None: ...

    def list_providers(self) -> list[ProviderRecord]: ...

    def delete_provider(self, name: str, audit: Audit = ()) -> bool:
        """Delete the provider and append the audit entries in one transaction; False (and
        nothing written) if there is none of that name."""
        ...
