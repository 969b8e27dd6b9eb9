"""The storage seam: a narrow, typed protocol over frozen value objects.

Two implementations follow it: SQLite (the embedded default, ``engram.store.sqlite``) and
PostgreSQL + pgvector. Dialect-specific SQL lives only inside them. Every write is atomic:
a :class:`Change` upserts a memory's new state *and* appends its version in the same
transaction, together with the keyword index entry.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from engram.accounts import AuditEntry
from engram.models import Environment, Layer, Memory, MemoryFilter, MemoryVersion
from engram.store.accounts import AccountStore, AuditStore
from engram.store.capture import CaptureStore
from engram.store.conversations import ConversationStore
from engram.store.handoffs import HandoffStore
from engram.store.idempotency import IdempotencyStore
from engram.store.imports import ImportLedger
from engram.store.oauth import OAuthStore
from engram.store.oauth_registry import ClientRegistry
from engram.store.profile import ProfileStore
from engram.store.providers import ProviderStore
from engram.store.reviews import ReviewStore
from engram.store.sign_ins import SignInFailureStore
from engram.store.soul import SoulStore
from engram.store.web_sessions import WebSessionStore

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Erasure:
    """What :meth:`Store.erase` removes for good, in one transaction (a conversation purge, an
    account purge). Every import-ledger entry that points at a removed id goes too, and so do
    review items about removed memories."""

    memory_ids: Sequence[str] = ()
    """Memories, with their versions, index entries and vectors."""
    conversation_ids: Sequence[str] = ()
    """Conversations, with their messages."""
    environment_ids: Sequence[str] = ()
    """Environments, with everything in them (as :meth:`Store.delete_environment`)."""
    user_id: str | None = None
    """An account: the user, their API keys, memberships, their own Soul layer with its
    history and snapshots, and their kept idempotent answers."""


class Access(NamedTuple):
    """What :meth:`Store.record_access` adds to one memory: ``reads`` more reads, the latest
    at ``at`` (its ``last_accessed_at`` becomes ``at`` unless a later read is stored)."""

    memory_id: str
    reads: int
    at: datetime


@dataclass(frozen=True, slots=True)
class Change:
    """One memory's new state and the version that records it."""

    memory: Memory
    version: MemoryVersion


class Hit(NamedTuple):
    """A candidate from one search stream: the memory id and that stream's raw score
    (BM25 for keyword, higher is better; cosine similarity for semantic). A keyword hit also
    says what matched, as the keyword index itself stems words: the query's content words
    found in the memory's own text (``matched``), those found only in its keyword-only context
    (``matched_context``), and its layer; callers tell how much of the query it covers without
    reading the memory."""

    memory_id: str
    score: float
    matched: frozenset[str] = frozenset()
    matched_context: frozenset[str] = frozenset()
    layer: Layer | None = None


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """One search of :meth:`Store.vector_search_many`: the nearest ``limit`` memories passing
    ``flt`` (as :meth:`Store.vector_search`), and the similarity of each of ``also`` that has
    a vector and is not among those hits (as :meth:`Store.vector_scores`): the keyword hits
    the semantic stream did not find."""

    flt: MemoryFilter
    limit: int
    also: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class VectorAnswer:
    hits: list[Hit]
    scores: dict[str, float]
    """The similarity of each of the query's ``also`` with a vector, not among ``hits``."""


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """A keyword search: ``query``'s words among the memories passing ``flt``, best ``limit``;
    ``also``: words searched too within what budget the query's own leave (see
    :meth:`Store.keyword_search`)."""

    query: str
    flt: MemoryFilter
    limit: int
    also: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Streams:
    """What :meth:`Store.search_streams` found: both streams of a hybrid search."""

    keyword: list[Hit]
    similarity: dict[str, float]
    """The similarity to the query vector of each keyword hit the nearest lists may lack (at
    least those absent from one of them) that has a vector of the model."""
    nearest: list[list[Hit]]
    """Each vector query's hits (their ``also`` is ignored)."""


class RankFields(NamedTuple):
    """The few columns ranking needs, read cheaply for many candidates at once."""

    memory_id: str
    layer: Layer
    importance: float
    confidence: float
    updated_at: datetime
    access_count: int
    author: str | None = None
    thread: str | None = None
    category: str = ""
    created_at: datetime | None = None


class MemoryText(NamedTuple):
    """A memory's text and the two fields a write's lifecycle decision reads about it, read
    cheaply for a whole environment (the lifecycle's candidate index is built from these)."""

    id: str
    content: str
    importance: float
    pinned: bool


@dataclass(frozen=True, slots=True)
class PendingEmbedding:
    """A memory whose vector is missing or stale for the current model."""

    memory_id: str
    text: str
    content_hash: str
    position: int = 0
    """An opaque, increasing cursor: pass the last one as ``after`` to continue a scan."""


@dataclass(frozen=True, slots=True)
class EmbeddingUpdate:
    memory_id: str
    content_hash: str
    vector: Vector


class Exporter(Protocol):
    """What copying a store needs beyond the rest of the protocol: the few stored values no
    service ever reads back (key digests, raw vectors) and the list of conversations."""

    def key_digests(self) -> dict[str, str]:
        """Every API key's id -> its stored HMAC digest."""
        ...

    def embeddings(self, model_id: str) -> Iterator[EmbeddingUpdate]:
        """Every vector stored for ``model_id``, with the content hash it was made from."""
        ...

    def conversation_ids(self) -> list[str]:
        """Every conversation, oldest first."""
        ...


class Store(Protocol):
    """Durable storage of environments, memories, versions, the keyword index and vectors."""

    @property
    def accounts(self) -> AccountStore:
        """Users, API keys and environment members."""
        ...

    @property
    def audit(self) -> AuditStore:
        """The append-only audit log."""
        ...

    @property
    def soul(self) -> SoulStore:
        """Soul blocks, their versions and snapshots."""
        ...

    @property
    def reviews(self) -> ReviewStore:
        """The lifecycle's review queue."""
        ...

    @property
    def profile(self) -> ProfileStore:
        """Each user's cross-project habits, held in no environment."""
        ...

    @property
    def imports(self) -> ImportLedger:
        """What each import brought into each environment (re-imports add nothing)."""
        ...

    @property
    def capture(self) -> CaptureStore:
        """Captured coding-agent sessions and their observations."""
        ...

    @property
    def handoffs(self) -> HandoffStore:
        """Handoffs between coding-agent sessions (claimed exactly once)."""
        ...

    @property
    def idempotency(self) -> IdempotencyStore:
        """Reserved ``Idempotency-Key`` requests and their answers."""
        ...

    @property
    def conversations(self) -> ConversationStore:
        """Conversations, their messages and how far extraction has read them."""
        ...

    @property
    def providers(self) -> ProviderStore:
        """Configured LLM providers (their API keys arrive encrypted)."""
        ...

    @property
    def oauth(self) -> OAuthStore:
        """The OAuth authorization server's clients, grants, codes and tokens (digests)."""
        ...

    @property
    def oauth_registry(self) -> ClientRegistry:
        """Dynamic client registration, bounded: unclaimed clients capped and cleaned up."""
        ...

    @property
    def web_sessions(self) -> WebSessionStore:
        """The dashboard's browser sessions (token digests)."""
        ...

    @property
    def sign_ins(self) -> SignInFailureStore:
        """Failed sign-ins in the counting window (time, name, address), shared by every
        process on the store."""
        ...

    @property
    def export(self) -> Exporter:
        """The stored values only a copy of the store reads (``engram.store.copy``)."""
        ...

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None: ...

    def run_exclusive(self, name: str) -> AbstractContextManager[bool]:
        """Hold the lock ``name`` across every process on this database for the block; yields
        False at once (holding nothing) when another holder has it. For work that must run
        once at a time (maintenance runs)."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction around the block: every write this thread makes through the store
        and its sub-stores inside it is committed when the block ends, and none is kept if it
        raises. Reads in the block see its writes; other threads and processes see none of
        them before the commit (their writes wait for it on SQLite; on PostgreSQL those to the
        rows it wrote). For work that must land whole or not at all (an archive restore); not
        re-entrant, and it holds the writer (SQLite) or a connection (PostgreSQL) throughout. The
        in-memory vector copy is read again from what is committed after the block."""
        ...

    def applied_migrations(self) -> list[str]:
        """Names of the migrations recorded as applied, in order."""
        ...

    # -- environments ------------------------------------------------------------------------
    def create_environment(self, env: Environment, audit: Sequence[AuditEntry] = ()) -> None:
        """Store a new environment and the audit entries, in one transaction."""
        ...

    def get_environment(self, env_id: str) -> Environment | None: ...

    def find_environment(self, owner: str, name: str) -> Environment | None: ...

    def list_environments(self, owner: str | None = None) -> list[Environment]: ...

    def delete_environment(self, env_id: str, audit: Sequence[AuditEntry] = ()) -> None:
        """Remove the environment and, for good, everything in it; append the audit entries in
        the same transaction."""
        ...

    # -- memories ----------------------------------------------------------------------------
    def write(self, changes: Sequence[Change], audit: Sequence[AuditEntry] = ()) -> None:
        """Upsert each memory and append its version and the audit entries, all in one
        transaction."""
        ...

    def memory_stamp(self) -> int:
        """A counter that every committed :meth:`write` call moves by one, whichever process on
        the store made it, and that a purge or erasure removing memories moves too: two equal
        readings mean no memory was written or removed in between (a cache of memories uses it
        to see writes by other processes)."""
        ...

    def environment_stamp(self) -> int | None:
        """A counter that every change to an environment or its members moves, whichever
        process or code path made it: two equal readings mean every environment and role is as
        it was. None where reading it costs what a lookup costs (a round trip): no cache."""
        ...

    def get(self, memory_ids: Sequence[str]) -> list[Memory]:
        """The memories that exist among ``memory_ids``, in the order asked."""
        ...

    def rank_fields(self, memory_ids: Sequence[str]) -> list[RankFields]:
        """Ranking columns of the memories that exist among ``memory_ids``."""
        ...

    def superseded_from(
        self, environment_id: str, threads: Sequence[str], message_ids: Sequence[str]
    ) -> list[Memory]:
        """The superseded facts of an environment's ``threads`` (the conversations they were
        extracted from) read from any of ``message_ids`` (named in their metadata's
        ``source_message_ids``), in no particular order: read by the (environment, thread)
        index, so the cost is the conversations' facts, not the environment's."""
        ...

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, order: str = "-updated_at"
    ) -> list[Memory]: ...

    def memory_texts(self, flt: MemoryFilter) -> list[MemoryText]:
        """Every memory matching ``flt``, oldest first, as its text, importance and pin only."""
        ...

    def count(self, flt: MemoryFilter) -> int: ...

    def versions(self, memory_id: str) -> list[MemoryVersion]: ...

    def record_access(self, accesses: Sequence[Access]) -> None:
        """Count reads: add each one's ``reads`` to ``access_count`` and move
        ``last_accessed_at`` to its ``at`` if that is later (no version; one transaction)."""
        ...

    def purge(self, memory_ids: Sequence[str], audit: Sequence[AuditEntry] = ()) -> int:
        """Delete rows, versions, index entries and vectors for good, and append the audit
        entries, in one transaction; return how many."""
        ...

    def erase(self, erasure: Erasure, audit: Sequence[AuditEntry] = ()) -> dict[str, int]:
        """Remove for good what ``erasure`` names, and append the audit entries, in one
        transaction; return how many rows of each kind went (memories, conversations,
        messages, environments, keys, ...)."""
        ...

    # -- search ------------------------------------------------------------------------------
    def keyword_search(
        self, query: str, flt: MemoryFilter, *, limit: int, also: Sequence[str] = ()
    ) -> list[Hit]:
        """Full-text candidates, best first, each with the query words it matched and its
        layer. ``query`` is plain user text, never raw syntax; its words are
        ``engram.text.content_words(query)``. ``also``: words matched too (and named in a
        hit's matched words) but kept, when a large store bounds a query's postings
        (``store.term_budget``), only within what the query's own words leave."""
        ...

    def vector_search(
        self, vector: Vector, model_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[Hit]:
        """Nearest memories by cosine similarity among those embedded with ``model_id``."""
        ...

    def vector_scores(
        self, vector: Vector, model_id: str, memory_ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity of ``vector`` to each listed memory that has a ``model_id`` vector."""
        ...

    def vector_search_many(
        self, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> list[VectorAnswer]:
        """Each query answered for one query vector, in order, exactly as ``vector_search``
        and then ``vector_scores`` of its ``also`` would answer it (PostgreSQL: one refresh of
        the in-process copy and one statement of exact cosines for the layers of an assembly)."""
        ...

    def search_streams(
        self, keyword: KeywordQuery, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> Streams:
        """``keyword_search`` of ``keyword``, ``vector_search`` of each of ``queries`` and the
        similarity of the keyword hits (PostgreSQL: the keyword statement
        and the vector statement at once, on two connections, the similarities in the first)."""
        ...

    def pending_embeddings(
        self, model_id: str, *, limit: int, after: int = 0
    ) -> list[PendingEmbedding]:
        """Live memories with no vector for ``model_id`` or a vector of older content, in
        storage order, starting after the cursor ``after``."""
        ...

    def put_embeddings(self, model_id: str, updates: Sequence[EmbeddingUpdate]) -> None: ...

    def prune_embeddings(self, keep_model_id: str) -> int:
        """Delete every vector not made by ``keep_model_id``; return how many."""
        ...

    def embedding_stats(self) -> dict[str, int]:
        """How many vectors are stored per model id."""
        ...
