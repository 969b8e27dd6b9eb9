"""The composition of the services over one store: what every edge holds."""

from __future__ import annotations

import secrets
from pathlib import Path

from engram.actors import Actor
from engram.capture.handoffs import HandoffConfig
from engram.clock import Clock, system_clock
from engram.config import Settings
from engram.embeddings import load_embedder
from engram.embeddings.protocol import Embedder
from engram.extraction.keys import KEY_FILE, KeyBox
from engram.lifecycle.config import LifecycleConfig
from engram.models import Environment, MemoryFilter
from engram.private_files import prepare_home
from engram.scrub import Scrubber
from engram.scrub.store import ScrubbingStore
from engram.service.accesses import AccessRecorder
from engram.service.accounts import AccountService, load_secret
from engram.service.archive import ArchiveService
from engram.service.audit import AuditLog
from engram.service.capture import CaptureService
from engram.service.context import ContextService, SoulTier
from engram.service.environments import EnvironmentService
from engram.service.erasure import ErasureService
from engram.service.exporting import ExportService
from engram.service.extraction import ExtractionService
from engram.service.handoffs import HandoffService
from engram.service.import_jobs import ImportJobs
from engram.service.indexer import Indexer
from engram.service.lifecycle import LifecycleService
from engram.service.memories import MemoryService
from engram.service.oauth import OAuthService
from engram.service.portability import ImportService
from engram.service.profile import ProfileService
from engram.service.providers import ProviderService
from engram.service.search import SearchService
from engram.service.sign_ins import SignInService
from engram.service.soul import SoulService
from engram.service.vault import VaultService
from engram.service.web_sessions import WebSessionService
from engram.store import Store, open_store
from engram.tokens import count_tokens


class Engram:
    """One memory system: environments and memories over one store.

    Build it with :meth:`open` at an entry point, or directly with a store in tests.
    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock = system_clock,
        embedder: Embedder | None = None,
        secret: bytes | None = None,
        lifecycle: LifecycleConfig | None = None,
        scrubber: Scrubber | None = None,
        home: Path | None = None,
        imports_dir: Path | None = None,
        handoffs: HandoffConfig | None = None,
    ) -> None:
        # the one way to the store: every write below is scrubbed of secrets (engram.scrub)
        self.scrubber = scrubber or Scrubber()
        self.store: Store = (
            store if isinstance(store, ScrubbingStore) else ScrubbingStore(store, self.scrubber)
        )
        store = self.store
        self.clock = clock
        # None means keyword-only: no vectors are computed or searched
        self.embedder = embedder
        self.audit = AuditLog(store, clock)
        # the key-hashing secret; without one (tests), keys live only as long as this object
        self.accounts = AccountService(
            store, clock, self.audit, secret if secret is not None else secrets.token_bytes(32)
        )
        # password sign-ins, limited by the failures in the store (every process counts them)
        self.sign_ins = SignInService(store, clock, self.accounts)
        # Engram as the OAuth authorization server of /mcp (remote MCP clients sign in)
        self.oauth = OAuthService(store, clock, self.audit, self.accounts, self.sign_ins)
        # the dashboard's browser sessions (token digests in the store)
        self.web_sessions = WebSessionService(store, clock, self.accounts)
        self.environments = EnvironmentService(store, clock, self.audit)
        self.memories = MemoryService(store, clock, self.environments, self.scrubber)
        # reads counted a moment later, off the request's path, merged into one write
        self.accesses = AccessRecorder(store)
        self.search = SearchService(
            store, clock, self.environments, embedder, accesses=self.accesses
        )
        # embeds new memories; the server runs it in the background (start_indexer)
        self.indexer = Indexer(store, embedder) if embedder is not None else None
        self.soul = SoulService(store, clock, self.environments, self.scrubber)
        self.context = ContextService(
            store, clock, self.environments, self.search, soul=self._soul_block
        )
        # dedup, contradiction, decay and compaction; no LLM (see engram.lifecycle)
        self.lifecycle = LifecycleService(
            store, clock, self.environments, self.memories, embedder, lifecycle
        )
        # where one session's work stands, for the next (any agent); claimed exactly once
        self.handoffs = HandoffService(store, clock, self.environments, handoffs)
        # coding-agent sessions captured by the hooks (engram-hook), summarised without an LLM
        # the user's habits across projects, held at the user level (engram profile)
        self.profile = ProfileService(store, clock)
        self.capture = CaptureService(
            store,
            clock,
            self.environments,
            self.memories,
            soul=self._soul_text,
            recall=self._recall_for_prompt,
            remember=self.lifecycle.remember,
            profile=self.profile.digest,
            learn=self.profile.learn,
            handoffs=self.handoffs,
        )
        # learning from conversations; stores what it learns through the lifecycle
        self.extraction = ExtractionService(
            self.lifecycle,
            self.environments,
            self.memories,
            store.conversations,
            clock,
            scrubber=self.scrubber,
        )
        # imports of other products' exports, through the lifecycle and extraction above
        self.imports = ImportService(
            store, clock, self.environments, self.lifecycle, self.extraction, self.scrubber
        )
        # REST import jobs: uploads kept under imports_dir (a temporary folder when None)
        if imports_dir is None and home is not None:
            imports_dir = Path(home) / "imports"
        self.import_jobs = ImportJobs(self.imports, clock, imports_dir)
        # deletion that means it: conversations and accounts, for good
        self.erasure = ErasureService(
            store,
            self.environments,
            self.audit,
            self.extraction.get_conversation,
            self.import_jobs.forget_user,
        )
        # the Markdown vault: a file per memory, synced both ways
        self.vault = VaultService(store, self.environments, self.memories, self.lifecycle)
        conversations = store.conversations
        self.exports = ExportService(store, self.environments, conversations, self.soul)
        self.archive = ArchiveService(store, clock, conversations)
        # LLM providers; their API keys are encrypted with a key file in the data directory
        keys = None if home is None else KeyBox(Path(home) / KEY_FILE)
        self.providers = ProviderService(store.providers, keys, clock, self.audit)

    @classmethod
    def open(
        cls, settings: Settings, *, clock: Clock = system_clock, embedder: Embedder | None = None
    ) -> Engram:
        """The system the settings describe; ``embedder``: one already loaded (the server's
        workers share theirs), else the settings' own."""
        prepare_home(settings.home)  # 0700, every file in it 0600 (older homes too)
        return cls(
            open_store(settings.database_url),
            clock=clock,
            secret=load_secret(settings.home),
            embedder=embedder
            or load_embedder(settings.embedder, settings.model_cache, settings.embeddings_api_key),
            scrubber=Scrubber(settings.scrub),
            home=settings.home,
            handoffs=settings.handoffs,
        )

    def _soul_block(
        self, actor: Actor, environment: str | Environment | None, max_tokens: int
    ) -> SoulTier:
        rendered = self.soul.render(actor, environment, max_tokens)
        notes = []
        if rendered.truncated:
            notes.append("truncated: " + ", ".join(rendered.truncated))
        if rendered.dropped:
            notes.append("dropped: " + ", ".join(rendered.dropped))
        return SoulTier(rendered.text, rendered.tokens, "; ".join(notes))

    def _soul_text(self, actor: Actor, environment: str | None, max_tokens: int) -> str:
        return self.soul.render(actor, environment, max_tokens).text

    def _recall_for_prompt(
        self, actor: Actor, environment: str, query: str
    ) -> list[tuple[str, str, float]]:
        found = self.search.search(query, actor, environment=environment, limit=8)
        out = []
        for item in found.items:
            b = item.breakdown
            relevance = (
                b.semantic_similarity
                if b.semantic_similarity is not None
                else (b.keyword_norm or 0.0)
            )
            out.append((item.memory.id, item.memory.content, relevance))
        return out

    def warm(self) -> None:
        """Load now what the first search would: the embedding model, the store's vector index
        and the tokenizer (a server calls this beside its start-up, so that its first semantic
        search is as fast as any other)."""
        count_tokens("warm up")
        if self.embedder is None:
            return
        vector = self.embedder.embed_batch(["warm up"])[0]
        self.store.vector_search(vector, self.embedder.model_id, MemoryFilter(), limit=1)

    def index_pending(self, max_items: int | None = None) -> int:
        """Embed memories that have no vector for the current model yet; return how many."""
        return self.indexer.run_once(max_items) if self.indexer is not None else 0

    def start_indexer(self) -> None:
        if self.indexer is not None:
            self.indexer.start()

    def close(self) -> None:
        self.capture.stop()
        if self.indexer is not None:
            self.indexer.stop()
        self.accesses.close()
        self.store.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
