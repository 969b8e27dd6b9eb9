"""The choke point: a :class:`Store` that scrubs every value on its way in.

:class:`engram.Engram` wraps its store in a :class:`ScrubbingStore` before it builds any
service, so every service (and every edge, hook or importer that goes through them, or through
``engram.store``) writes through here. Each write method of the store and of its sub-stores
(audit log, Soul, review queue, conversations, and the audit entries of accounts, providers,
environments and purges) scrubs what it is given, then hands it to the real store. Reads pass
straight through.

The memory services also scrub their inputs first (so dedup, embeddings and the returned
memory never see a secret, and the result can say what was removed); this layer then finds
nothing more. It is the guarantee, not the only scrub: a path that forgets the early scrub still
stores nothing secret, and the count it finds is added to the memory and its audit entry. The
one change not walked again is a new memory's first change that :mod:`engram.scrub.sealed` built
from input this store's scrubber scrubbed (a plain add, a created fact).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from engram.accounts import ApiKey, AuditEntry, AuditQuery, Member, User
from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.models import Environment, Memory, MemoryFilter, MemoryVersion
from engram.scrub.capture import ScrubbingCaptureStore
from engram.scrub.handoffs import ScrubbingHandoffStore
from engram.scrub.scrubber import NONE, Redactions, Scrubber
from engram.scrub.sealed import is_sealed
from engram.scrub.values import scrub_value
from engram.soul.model import SoulBlock, SoulBlockVersion, SoulSnapshot
from engram.store.accounts import AccountStore, AuditStore
from engram.store.capture import CaptureStore
from engram.store.conversations import ConversationStore
from engram.store.handoffs import HandoffStore
from engram.store.idempotency import IdempotencyStore
from engram.store.imports import ImportLedger
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord, OAuthStore, TokenRecord
from engram.store.oauth_registry import ClientRegistry
from engram.store.profile import ProfileEntry, ProfileStore
from engram.store.protocol import (
    Access,
    Change,
    EmbeddingUpdate,
    Erasure,
    Exporter,
    Hit,
    KeywordQuery,
    MemoryText,
    PendingEmbedding,
    RankFields,
    Store,
    Streams,
    Vector,
    VectorAnswer,
    VectorQuery,
)
from engram.store.providers import ProviderRecord, ProviderStore
from engram.store.reviews import ReviewStore
from engram.store.sign_ins import SignInFailureStore
from engram.store.soul import SoulStore
from engram.store.web_sessions import WebSessionStore

if TYPE_CHECKING:
    from engram.extraction.conversation import (
        Conversation,
        ExtractionState,
        Message,
        NewMessage,
    )

REDACTIONS = "redactions"
"""The audit detail (kind → count) of a write that removed secrets."""


def with_redactions(entry: AuditEntry, found: Redactions) -> AuditEntry:
    """``entry`` with the count of each kind of secret removed added to its details."""
    if not found:
        return entry
    have = Redactions(entry.details.get(REDACTIONS) or {})
    details = {**entry.details, REDACTIONS: (have + found).as_dict()}
    return entry.model_copy(update={"details": details})


class _Audited:
    def __init__(self, scrubber: Scrubber) -> None:
        self._scrubber = scrubber

    def _entries(self, entries: Sequence[AuditEntry]) -> list[AuditEntry]:
        return [scrub_value(self._scrubber, e)[0] for e in entries]


class ScrubbingStore(_Audited):
    """A store whose writes are scrubbed; ``inner`` is the real store."""

    def __init__(self, inner: Store, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self.inner = inner
        self.scrubber = scrubber
        self._accounts = _Accounts(inner.accounts, scrubber)
        self._audit = _Audit(inner.audit, scrubber)
        self._soul = _Soul(inner.soul, scrubber)
        self._reviews = _Reviews(inner.reviews, scrubber)
        self._profile = _Profile(inner.profile, scrubber)
        self._conversations = _Conversations(inner.conversations, scrubber)
        self._providers = _Providers(inner.providers, scrubber)
        self._oauth = _OAuth(inner.oauth, scrubber)
        self._capture = ScrubbingCaptureStore(inner.capture, scrubber)
        self._handoffs = ScrubbingHandoffStore(inner.handoffs, scrubber)

    # -- sub-stores --------------------------------------------------------------------------
    @property
    def accounts(self) -> AccountStore:
        return self._accounts

    @property
    def audit(self) -> AuditStore:
        return self._audit

    @property
    def soul(self) -> SoulStore:
        return self._soul

    @property
    def reviews(self) -> ReviewStore:
        return self._reviews

    @property
    def profile(self) -> ProfileStore:
        return self._profile

    @property
    def idempotency(self) -> IdempotencyStore:
        """Kept answers of idempotent requests: responses, built from stored (scrubbed) data."""
        return self.inner.idempotency

    @property
    def capture(self) -> CaptureStore:
        return self._capture

    @property
    def handoffs(self) -> HandoffStore:
        return self._handoffs

    @property
    def imports(self) -> ImportLedger:
        """The import ledger: item keys and the ids they became, no text."""
        return self.inner.imports

    @property
    def conversations(self) -> ConversationStore:
        return self._conversations

    @property
    def providers(self) -> ProviderStore:
        """LLM providers, their audit entries scrubbed: the API keys are stored on purpose,
        encrypted."""
        return self._providers

    @property
    def oauth(self) -> OAuthStore:
        """OAuth clients, grants and token digests as they are (no free text but a client's
        registration); the audit entries are scrubbed."""
        return self._oauth

    @property
    def oauth_registry(self) -> ClientRegistry:
        """Client registrations kept as sent (ids, redirect URIs, a client's own name)."""
        return self.inner.oauth_registry

    @property
    def web_sessions(self) -> WebSessionStore:
        """Browser sessions: token digests, user and environment ids, times; no text."""
        return self.inner.web_sessions

    @property
    def sign_ins(self) -> SignInFailureStore:
        """Failed sign-ins: a time, a user name as typed and an address; no password."""
        return self.inner.sign_ins

    @property
    def export(self) -> Exporter:
        """Reads only (what a copy of the store needs)."""
        return self.inner.export

    # -- writes ------------------------------------------------------------------------------
    def memory_stamp(self) -> int:
        return self.inner.memory_stamp()

    def environment_stamp(self) -> int | None:
        return self.inner.environment_stamp()

    def write(self, changes: Sequence[Change], audit: Sequence[AuditEntry] = ()) -> None:
        clean: list[Change] = []
        found: dict[str, Redactions] = {}
        for c in changes:
            if is_sealed(c, self.scrubber):  # built from input this scrubber scrubbed
                if c.memory.redactions:
                    found[c.memory.id] = found.get(c.memory.id, NONE) + Redactions(
                        c.memory.redactions
                    )
                clean.append(c)
                continue
            memory, red = scrub_value(self.scrubber, c.memory)
            if red:
                memory = memory.model_copy(
                    update={REDACTIONS: (Redactions(memory.redactions) + red).as_dict()}
                )
            snapshot = memory
            if c.version.snapshot is not c.memory:  # a copied history: its own snapshot
                snapshot = scrub_value(self.scrubber, c.version.snapshot)[0]
            reason = self.scrubber.scrub(c.version.reason)[0]
            version = c.version
            if snapshot is not version.snapshot or reason != version.reason:
                version = version.model_copy(update={"snapshot": snapshot, "reason": reason})
            if memory.redactions:
                found[memory.id] = found.get(memory.id, Redactions()) + Redactions(
                    memory.redactions
                )
            same = memory is c.memory and version is c.version
            clean.append(c if same else Change(memory, version))
        entries = [
            with_redactions(e, Redactions.merge(found[t] for t in e.targets if t in found))
            for e in self._entries(audit)
        ]
        self.inner.write(clean, entries)

    def create_environment(self, env: Environment, audit: Sequence[AuditEntry] = ()) -> None:
        self.inner.create_environment(scrub_value(self.scrubber, env)[0], self._entries(audit))

    def delete_environment(self, env_id: str, audit: Sequence[AuditEntry] = ()) -> None:
        self.inner.delete_environment(env_id, self._entries(audit))

    def purge(self, memory_ids: Sequence[str], audit: Sequence[AuditEntry] = ()) -> int:
        return self.inner.purge(memory_ids, self._entries(audit))

    def erase(self, erasure: Erasure, audit: Sequence[AuditEntry] = ()) -> dict[str, int]:
        return self.inner.erase(erasure, self._entries(audit))

    # -- everything else passes through ------------------------------------------------------
    def close(self) -> None:
        self.inner.close()

    def run_exclusive(self, name: str) -> AbstractContextManager[bool]:
        return self.inner.run_exclusive(name)

    def atomic(self) -> AbstractContextManager[None]:
        return self.inner.atomic()

    def applied_migrations(self) -> list[str]:
        return self.inner.applied_migrations()

    def get_environment(self, env_id: str) -> Environment | None:
        return self.inner.get_environment(env_id)

    def find_environment(self, owner: str, name: str) -> Environment | None:
        return self.inner.find_environment(owner, name)

    def list_environments(self, owner: str | None = None) -> list[Environment]:
        return self.inner.list_environments(owner)

    def get(self, memory_ids: Sequence[str]) -> list[Memory]:
        return self.inner.get(memory_ids)

    def rank_fields(self, memory_ids: Sequence[str]) -> list[RankFields]:
        return self.inner.rank_fields(memory_ids)

    def superseded_from(
        self, environment_id: str, threads: Sequence[str], message_ids: Sequence[str]
    ) -> list[Memory]:
        return self.inner.superseded_from(environment_id, threads, message_ids)

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, order: str = "-updated_at"
    ) -> list[Memory]:
        return self.inner.list_memories(flt, limit=limit, offset=offset, order=order)

    def memory_texts(self, flt: MemoryFilter) -> list[MemoryText]:
        return self.inner.memory_texts(flt)

    def count(self, flt: MemoryFilter) -> int:
        return self.inner.count(flt)

    def versions(self, memory_id: str) -> list[MemoryVersion]:
        return self.inner.versions(memory_id)

    def record_access(self, accesses: Sequence[Access]) -> None:
        self.inner.record_access(accesses)

    def keyword_search(
        self, query: str, flt: MemoryFilter, *, limit: int, also: Sequence[str] = ()
    ) -> list[Hit]:
        return self.inner.keyword_search(query, flt, limit=limit, also=also)

    def vector_search(
        self, vector: Vector, model_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[Hit]:
        return self.inner.vector_search(vector, model_id, flt, limit=limit)

    def vector_scores(
        self, vector: Vector, model_id: str, memory_ids: Sequence[str]
    ) -> dict[str, float]:
        return self.inner.vector_scores(vector, model_id, memory_ids)

    def vector_search_many(
        self, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> list[VectorAnswer]:
        return self.inner.vector_search_many(vector, model_id, queries)

    def search_streams(
        self, keyword: KeywordQuery, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> Streams:
        return self.inner.search_streams(keyword, vector, model_id, queries)

    def pending_embeddings(
        self, model_id: str, *, limit: int, after: int = 0
    ) -> list[PendingEmbedding]:
        return self.inner.pending_embeddings(model_id, limit=limit, after=after)

    def put_embeddings(self, model_id: str, updates: Sequence[EmbeddingUpdate]) -> None:
        self.inner.put_embeddings(model_id, updates)

    def prune_embeddings(self, keep_model_id: str) -> int:
        return self.inner.prune_embeddings(keep_model_id)

    def embedding_stats(self) -> dict[str, int]:
        return self.inner.embedding_stats()


class _Audit(_Audited):
    def __init__(self, inner: AuditStore, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self._inner = inner

    def append(self, entries: Sequence[AuditEntry]) -> None:
        self._inner.append(self._entries(entries))

    def query(self, q: AuditQuery) -> list[AuditEntry]:
        return self._inner.query(q)


class _Accounts(_Audited):
    """Users, keys and members are names and digests; their audit entries are scrubbed."""

    def __init__(self, inner: AccountStore, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self._inner = inner

    def create_user(
        self, user: User, password_hash: str | None, audit: Sequence[AuditEntry] = ()
    ) -> None:
        self._inner.create_user(user, password_hash, self._entries(audit))

    def get_user(self, user_id: str) -> User | None:
        return self._inner.get_user(user_id)

    def find_user(self, name: str) -> User | None:
        return self._inner.find_user(name)

    def list_users(self) -> list[User]:
        return self._inner.list_users()

    def set_password_hash(
        self, user_id: str, password_hash: str, audit: Sequence[AuditEntry] = ()
    ) -> None:
        self._inner.set_password_hash(user_id, password_hash, self._entries(audit))

    def password_hash(self, user_id: str) -> str | None:
        return self._inner.password_hash(user_id)

    def create_key(
        self,
        key: ApiKey,
        digest: str,
        audit: Sequence[AuditEntry] = (),
        *,
        replaces: str | None = None,
    ) -> None:
        self._inner.create_key(key, digest, self._entries(audit), replaces=replaces)

    def key_by_digest(self, digest: str) -> ApiKey | None:
        return self._inner.key_by_digest(digest)

    def get_key(self, key_id: str) -> ApiKey | None:
        return self._inner.get_key(key_id)

    def list_keys(self, user_id: str | None = None) -> list[ApiKey]:
        return self._inner.list_keys(user_id)

    def revoke_key(self, key_id: str, at: datetime, audit: Sequence[AuditEntry] = ()) -> None:
        self._inner.revoke_key(key_id, at, self._entries(audit))

    def touch_key(self, key_id: str, at: datetime) -> None:
        self._inner.touch_key(key_id, at)

    def put_member(self, member: Member, audit: Sequence[AuditEntry] = ()) -> None:
        self._inner.put_member(member, self._entries(audit))

    def remove_member(
        self, environment_id: str, user_id: str, audit: Sequence[AuditEntry] = ()
    ) -> None:
        self._inner.remove_member(environment_id, user_id, self._entries(audit))

    def get_member(self, environment_id: str, user_id: str) -> Member | None:
        return self._inner.get_member(environment_id, user_id)

    def list_members(self, environment_id: str) -> list[Member]:
        return self._inner.list_members(environment_id)

    def memberships(self, user_id: str) -> list[Member]:
        return self._inner.memberships(user_id)


class _Soul(_Audited):
    def __init__(self, inner: SoulStore, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self._inner = inner

    def blocks(self, owner: str, environment_ids: Sequence[str | None]) -> list[SoulBlock]:
        return self._inner.blocks(owner, environment_ids)

    def versions(self, owner: str, environment_id: str | None, name: str) -> list[SoulBlockVersion]:
        return self._inner.versions(owner, environment_id, name)

    def write(
        self,
        owner: str,
        changes: Sequence[SoulBlockVersion],
        snapshot: SoulSnapshot | None = None,
        audit: Sequence[AuditEntry] = (),
    ) -> None:
        clean = [scrub_value(self._scrubber, c)[0] for c in changes]
        snap = None if snapshot is None else scrub_value(self._scrubber, snapshot)[0]
        self._inner.write(owner, clean, snap, self._entries(audit))

    def snapshots(self, owner: str, environment_id: str | None) -> list[SoulSnapshot]:
        return self._inner.snapshots(owner, environment_id)

    def get_snapshot(self, owner: str, snapshot_id: str) -> SoulSnapshot | None:
        return self._inner.get_snapshot(owner, snapshot_id)


class _Reviews(_Audited):
    def __init__(self, inner: ReviewStore, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self._inner = inner

    def put_review(self, item: ReviewItem, audit: Sequence[AuditEntry] = ()) -> None:
        self._inner.put_review(scrub_value(self._scrubber, item)[0], self._entries(audit))

    def get_review(self, review_id: str) -> ReviewItem | None:
        return self._inner.get_review(review_id)

    def list_reviews(
        self,
        environment_ids: Sequence[str],
        statuses: Sequence[ReviewStatus] = (ReviewStatus.OPEN,),
        *,
        limit: int = 100,
    ) -> list[ReviewItem]:
        return self._inner.list_reviews(environment_ids, statuses, limit=limit)


class _Profile:
    """A habit's text is scrubbed (its key is derived from the scrubbed text by the service)."""

    def __init__(self, inner: ProfileStore, scrubber: Scrubber) -> None:
        self._inner = inner
        self._scrubber = scrubber

    def put_entry(self, entry: ProfileEntry) -> None:
        text, _ = self._scrubber.scrub(entry.text)
        key, _ = self._scrubber.scrub(entry.key)
        self._inner.put_entry(replace(entry, text=text, key=key))

    def get_entry(self, entry_id: str) -> ProfileEntry | None:
        return self._inner.get_entry(entry_id)

    def find_entry(self, user_id: str, key: str) -> ProfileEntry | None:
        return self._inner.find_entry(user_id, key)

    def list_entries(self, user_id: str) -> list[ProfileEntry]:
        return self._inner.list_entries(user_id)

    def delete_entry(self, entry_id: str) -> bool:
        return self._inner.delete_entry(entry_id)

    def set_learning(self, user_id: str, enabled: bool) -> None:
        self._inner.set_learning(user_id, enabled)

    def learning(self, user_id: str) -> bool:
        return self._inner.learning(user_id)


class _Providers(_Audited):
    """The record passes as it is (its API key arrives encrypted); the audit entries are
    scrubbed."""

    def __init__(self, inner: ProviderStore, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self._inner = inner

    def put_provider(self, record: ProviderRecord, audit: Sequence[AuditEntry] = ()) -> None:
        self._inner.put_provider(record, self._entries(audit))

    def get_provider(self, name: str) -> ProviderRecord | None:
        return self._inner.get_provider(name)

    def list_providers(self) -> list[ProviderRecord]:
        return self._inner.list_providers()

    def delete_provider(self, name: str, audit: Sequence[AuditEntry] = ()) -> bool:
        return self._inner.delete_provider(name, self._entries(audit))


class _OAuth(_Audited):
    def __init__(self, inner: OAuthStore, scrubber: Scrubber) -> None:
        super().__init__(scrubber)
        self._inner = inner

    def put_client(self, client: ClientRecord) -> None:
        self._inner.put_client(client)

    def get_client(self, client_id: str) -> ClientRecord | None:
        return self._inner.get_client(client_id)

    def create_grant(
        self, grant: GrantRecord, code: CodeRecord, audit: Sequence[AuditEntry] = ()
    ) -> None:
        self._inner.create_grant(grant, code, self._entries(audit))

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        return self._inner.get_grant(grant_id)

    def list_grants(self, user_id: str | None = None) -> list[GrantRecord]:
        return self._inner.list_grants(user_id)

    def revoke_grant(self, grant_id: str, at: datetime, audit: Sequence[AuditEntry] = ()) -> bool:
        return self._inner.revoke_grant(grant_id, at, self._entries(audit))

    def get_code(self, digest: str) -> CodeRecord | None:
        return self._inner.get_code(digest)

    def redeem_code(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        return self._inner.redeem_code(digest, at, tokens)

    def get_token(self, digest: str) -> TokenRecord | None:
        return self._inner.get_token(digest)

    def rotate_refresh(self, digest: str, at: datetime, tokens: Sequence[TokenRecord]) -> bool:
        return self._inner.rotate_refresh(digest, at, tokens)


class _Conversations:
    def __init__(self, inner: ConversationStore, scrubber: Scrubber) -> None:
        self._inner = inner
        self._scrubber = scrubber

    def create_conversation(self, conversation: Conversation) -> bool:
        return self._inner.create_conversation(scrub_value(self._scrubber, conversation)[0])

    def find_conversation(self, owner: str, external_id: str) -> Conversation | None:
        return self._inner.find_conversation(owner, external_id)

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        return self._inner.get_conversation(conversation_id)

    def owned_conversations(self, owner: str) -> list[str]:
        return self._inner.owned_conversations(owner)

    def append_messages(
        self, conversation_id: str, messages: Sequence[NewMessage], new_ids: Sequence[str]
    ) -> list[Message]:
        clean = [scrub_value(self._scrubber, m)[0] for m in messages]
        return self._inner.append_messages(conversation_id, clean, new_ids)

    def messages(
        self, conversation_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[Message]:
        return self._inner.messages(conversation_id, after=after, limit=limit)

    def last_messages(self, conversation_id: str, count: int) -> list[Message]:
        return self._inner.last_messages(conversation_id, count)

    def count_messages(self, conversation_id: str, role: str | None = None) -> int:
        return self._inner.count_messages(conversation_id, role)

    def extraction_state(self, conversation_id: str) -> ExtractionState:
        return self._inner.extraction_state(conversation_id)

    def advance_extraction(
        self, conversation_id: str, expected: ExtractionState, new: ExtractionState
    ) -> bool:
        return self._inner.advance_extraction(conversation_id, expected, new)
