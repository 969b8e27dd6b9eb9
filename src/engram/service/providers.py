"""Configured LLM providers: kept in the database with their API keys encrypted (the key file
lives outside it), and turned into extractors on demand. Adding and removing one needs the
admin scope (providers serve the whole server) and is audited with the change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from engram.accounts import AuditEntry, Scope
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import InvalidInput, NotFound
from engram.extraction.keys import KEY_FILE, KeyBox
from engram.extraction.llm import LLMExtractor
from engram.extraction.providers import (
    LLMClient,
    ProviderConfig,
    ProviderInfo,
    ProviderKind,
    ProviderSettings,
    client_for,
)
from engram.service.audit import AuditLog
from engram.service.environments import require_scope
from engram.store import Store
from engram.store.providers import ProviderRecord, ProviderStore


class ProviderService:
    """Managing providers (``add``, ``remove``, ``describe``) needs the admin scope; ``keys``
    is None for an Engram without a data directory, which then refuses providers with a key."""

    def __init__(
        self, store: ProviderStore, keys: KeyBox | None, clock: Clock, audit: AuditLog
    ) -> None:
        self._store = store
        self._keys = keys
        self._clock = clock
        self._audit = audit

    def add(self, config: ProviderConfig, actor: Actor) -> ProviderConfig:
        """Store (or replace) a provider; its API key is encrypted before it reaches the store."""
        require_scope(actor, Scope.ADMIN)
        secret = None
        if config.api_key is not None:
            if self._keys is None:
                raise InvalidInput(
                    "this Engram has no data directory to keep provider keys in", field="api_key"
                )
            secret = self._keys.encrypt(config.api_key.get_secret_value(), config.name)
        self._store.put_provider(
            ProviderRecord(
                name=config.name,
                kind=config.kind.value,
                base_url=config.base_url,
                model=config.model,
                encrypted_key=secret,
                timeout=config.timeout,
                created_at=self._clock(),
            ),
            [self._entry(actor, "provider.add", config.name, kind=config.kind.value)],
        )
        return config

    def _entry(self, actor: Actor, action: str, name: str, **details: Any) -> AuditEntry:
        return self._audit.entry(actor, action, targets=[f"provider:{name}"], **details)

    def get(self, name: str) -> ProviderConfig:
        record = self._record(name)
        key = None
        if record.encrypted_key is not None and self._keys is not None:
            key = SecretStr(self._keys.decrypt(record.encrypted_key, record.name))
        return _config(record, key)

    def _info(self, name: str) -> ProviderInfo:
        """A provider as listed, its key never decrypted: a key that no longer decrypts (its
        key file lost) does not stop it from being listed or removed."""
        record = self._record(name)
        info = ProviderInfo.of(_config(record, None))
        return info.model_copy(update={"has_key": record.encrypted_key is not None})

    def _record(self, name: str) -> ProviderRecord:
        record = self._store.get_provider(name)
        if record is None:
            raise NotFound(f"LLM provider {name!r} is not configured", provider=name)
        return record

    def names(self) -> list[str]:
        return [r.name for r in self._store.list_providers()]

    def describe(self, actor: Actor) -> list[ProviderInfo]:
        """Every configured provider, without its key (admin scope)."""
        require_scope(actor, Scope.ADMIN)
        return [self._info(name) for name in self.names()]

    def set(self, name: str, settings: ProviderSettings, actor: Actor) -> ProviderInfo:
        """Configure (or replace) the provider ``name`` (admin scope); audited."""
        require_scope(actor, Scope.ADMIN)
        try:
            config = settings.config(name)
        except ValidationError as exc:
            raise InvalidInput(
                "a provider name is 1-64 lowercase letters, digits, '_', '.', '-'", field="name"
            ) from exc
        return ProviderInfo.of(self.add(config, actor))

    def remove(self, name: str, actor: Actor) -> ProviderInfo:
        """Forget a provider and its key (admin scope); audited. Returns what it was."""
        require_scope(actor, Scope.ADMIN)
        removed = self._info(name)
        if not self._store.delete_provider(name, [self._entry(actor, "provider.remove", name)]):
            raise NotFound(f"LLM provider {name!r} is not configured", provider=name)
        return removed

    def client(self, name: str) -> LLMClient:
        return client_for(self.get(name))

    def extractor(self, name: str) -> LLMExtractor:
        return LLMExtractor(self.client(name))


def open_providers(store: Store, home: Path, clock: Clock) -> ProviderService:
    """The providers of ``store``, with the key file in the data directory ``home`` (what
    ``Engram.open`` gives as ``Engram.providers``)."""
    keys = KeyBox(Path(home) / KEY_FILE)
    return ProviderService(store.providers, keys, clock, AuditLog(store, clock))


def _config(record: ProviderRecord, key: SecretStr | None) -> ProviderConfig:
    return ProviderConfig(
        name=record.name,
        kind=ProviderKind(record.kind),
        model=record.model,
        base_url=record.base_url,
        api_key=key,
        timeout=record.timeout,
    )
