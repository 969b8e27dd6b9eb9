"""Importing other products' exports (ChatGPT, Claude, Gemini, CSV, memory lists, agent
transcripts): read and detect (:mod:`engram.portability`), preview, then commit through the
same paths as live data — conversations through :class:`ExtractionService` (messages stored
idempotently, memories extracted and passed to the lifecycle), memories through
:meth:`LifecycleService.remember_many` in batches (dedup and contradiction against what is
stored).

Each item's stable key goes into the import ledger (:class:`engram.store.imports.ImportLedger`)
once stored, so importing the same export again adds nothing and an interrupted import resumes
where it stopped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from engram.accounts import Role
from engram.actors import Actor
from engram.capture.bounds import cut
from engram.clock import Clock
from engram.errors import InvalidInput, NotFound
from engram.extraction.conversation import NewConversation
from engram.extraction.results import ConversationInput, ExtractionResult
from engram.limits import MAX_MESSAGES
from engram.models import Environment
from engram.portability.bundle import Bundle, ImportedConversation, ImportedMemory, stable_key
from engram.portability.detect import is_archive, read_bundle
from engram.portability.reading import DEFAULT_LIMITS, Limits, read_input
from engram.portability.report import (
    Duplicates,
    ImportPreview,
    ImportReport,
    SkippedItem,
    SourceCounts,
)
from engram.scrub import Redactions, Scrubber, scrub_value
from engram.service.environments import EnvironmentService, is_bare
from engram.service.lifecycle import LifecycleService
from engram.store import Store
from engram.store.conversations import ConversationStore

Progress = Callable[[int, int], None]
"""Called with (items done, items in all) as an import goes."""

_SAMPLE = 5
_BATCH = 200
"""Memories stored in one lifecycle batch (one transaction) before their keys are recorded."""
_SKIPPED_SHOWN = 50
_TITLE_CHARS = 120
"""A conversation's title at most (the importers make one from the first prompt when the
export has none)."""
_SAMPLE_CHARS = 100
_CONVERSATION_KEY = "conversation:"


class Extraction(Protocol):
    """What an import needs of :class:`engram.service.extraction.ExtractionService` (named by
    its shape: that module and :mod:`engram.service.engram` import each other)."""

    @property
    def conversations(self) -> ConversationStore: ...

    def extract(
        self,
        conversation_or_messages: ConversationInput,
        actor: Actor,
        environment: str | None = None,
    ) -> ExtractionResult: ...


@dataclass
class _Tally:
    counts: Counter[str] = field(default_factory=Counter)
    created_envs: list[str] = field(default_factory=list)
    redactions: Counter[str] = field(default_factory=Counter)
    """Secrets the scrubber removed before anything was stored, by kind."""


class ImportService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        lifecycle: LifecycleService,
        extraction: Extraction,
        scrubber: Scrubber,
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self._lifecycle = lifecycle
        self._extraction = extraction
        self._scrubber = scrubber

    # -- reading -------------------------------------------------------------------------------
    def read(
        self,
        path: Path,
        *,
        csv_map: Mapping[str, str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> Bundle:
        """Open ``path`` (file, zip or folder) and read every export in it, detected by
        content. An Engram archive is refused here: restore it with the archive import."""
        entries = read_input(path, limits)
        if is_archive(entries):
            raise InvalidInput(f"{path}: an Engram archive; restore it with the archive import")
        return read_bundle(entries, csv_map)

    def target(self, environment: str | None, actor: Actor) -> Environment:
        """The environment an import into ``environment`` writes to, if the actor may."""
        return self._envs.resolve(environment, actor, Role.WRITER)

    # -- preview -------------------------------------------------------------------------------
    def preview(
        self, bundle: Bundle, actor: Actor, environment: str | None = None, *, file: str = ""
    ) -> ImportPreview:
        """What committing ``bundle`` would store, and how much of it is already stored; its
        sample is the export's own text, so it is scrubbed as what is stored would be."""
        # the project's environment is created by the import, not by its preview
        project = self._envs.project_to_create(environment, actor)
        target = None if project else self._envs.resolve(environment, actor, Role.WRITER)
        envs = self._known_envs(bundle, actor, target)
        dup = Counter[str]()
        for env_name, convs in _by_env(bundle.conversations).items():
            env = envs.get(env_name)
            if env is None:
                continue
            keys = [_CONVERSATION_KEY + c.key for c in convs]
            done = self._store.imports.seen(env.id, keys)
            for conv in convs:
                stored = self._stored_messages(env, conv, actor)
                if _CONVERSATION_KEY + conv.key in done and stored >= len(conv.messages):
                    dup["conversations"] += 1  # a continued one is not: its new turns are
                dup["messages"] += min(stored, len(conv.messages))
        for env_name, mems in _by_env(bundle.memories).items():
            env = envs.get(env_name)
            if env is not None:
                dup["memories"] += len(self._store.imports.seen(env.id, [m.key for m in mems]))
        shown = ImportPreview(
            file=file,
            environment=project or (target.name if target else ""),
            formats=bundle.formats,
            sources=_sources(bundle),
            duplicates=Duplicates(**dup),
            # every environment the import would create: the project's, Claude's projects,
            # those a CSV's environment column names
            new_environments=sorted(
                {n or project or "" for n, env in envs.items() if env is None} - {""}
            ),
            sample=self._sample(bundle),
            skipped=[  # the file as the caller named it, never where a server keeps it
                SkippedItem(file=file or s.file, entry=s.entry, reason=s.reason)
                for s in bundle.skipped[:_SKIPPED_SHOWN]
            ],
            skipped_total=len(bundle.skipped),
        )
        return scrub_value(self._scrubber, shown)[0]

    def _sample(self, bundle: Bundle) -> list[str]:
        out = []
        for c in bundle.conversations[:_SAMPLE]:
            title = self._shown(c.title, _TITLE_CHARS) or c.key
            first = self._shown(c.messages[0].content, _SAMPLE_CHARS)
            out.append(f"conversation {title!r} ({len(c.messages)} messages): {first}")
        for m in bundle.memories[:_SAMPLE]:
            memory = m.memory
            text = self._shown(memory.content, _SAMPLE_CHARS)
            out.append(f"{memory.layer.value} ({memory.category}): {text}")
        return out

    def _stored_messages(self, env: Environment, conv: ImportedConversation, actor: Actor) -> int:
        # imported conversation ids are the importer's own (caller ids are scoped per user)
        stored = self._extraction.conversations.find_conversation(
            actor.user_id, conversation_id(env, conv)
        )
        if stored is None:
            return 0
        return self._extraction.conversations.count_messages(stored.id)

    def _known_envs(
        self, bundle: Bundle, actor: Actor, target: Environment | None
    ) -> dict[str | None, Environment | None]:
        out: dict[str | None, Environment | None] = {None: target}
        names = {e.name for e in bundle.environments}
        names |= {c.environment for c in bundle.conversations if c.environment}
        names |= {m.environment for m in bundle.memories if m.environment}
        for name in sorted(n for n in names if n):
            if not is_bare(name):  # owner/name or an id: that one, which must exist
                out[name] = self._envs.resolve(name, actor, Role.WRITER)
                continue
            try:  # the actor's own (created when missing), never one shared by that name
                out[name] = self._envs.resolve(name, actor, Role.WRITER, shared=False)
            except NotFound:
                out[name] = None
        return out

    # -- commit --------------------------------------------------------------------------------
    def commit(
        self,
        bundle: Bundle,
        actor: Actor,
        environment: str | None = None,
        *,
        file: str = "",
        progress: Progress | None = None,
    ) -> ImportReport:
        """Store what ``bundle`` holds. Items an earlier import brought are skipped; the rest
        go through the lifecycle (memories) and extraction (conversations)."""
        target = self._envs.resolve(environment, actor, Role.WRITER)
        tally = _Tally()
        envs = self._ensure_envs(bundle, actor, target, tally)
        total = len(bundle.memories) + bundle.message_count
        done = 0

        def step(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None:
                progress(done, total)

        step(0)
        for env_name, mems in _by_env(bundle.memories).items():
            env = envs[env_name]
            seen = self._store.imports.seen(env.id, [m.key for m in mems])
            for start in range(0, len(mems), _BATCH):
                batch: list[ImportedMemory] = []
                for item in mems[start : start + _BATCH]:
                    if item.key in seen:
                        tally.counts["already_imported"] += 1
                    else:
                        batch.append(item)
                        seen[item.key] = ""
                if batch:  # one lifecycle batch (one transaction), then its keys in the ledger
                    items = [m.memory for m in batch]
                    outcomes = self._lifecycle.remember_many(items, actor, env.id)
                    for outcome in outcomes:
                        tally.counts[f"memories_{outcome.action.value}"] += 1
                        tally.redactions.update(outcome.redactions)
                    self._store.imports.record(
                        env.id, [(m.key, o.memory.id) for m, o in zip(batch, outcomes, strict=True)]
                    )
                step(len(mems[start : start + _BATCH]))
        for env_name, convs in _by_env(bundle.conversations).items():
            env = envs[env_name]
            seen = self._store.imports.seen(env.id, [_CONVERSATION_KEY + c.key for c in convs])
            for conv in convs:
                again = _CONVERSATION_KEY + conv.key in seen
                # an export is cumulative: a conversation imported before may have been
                # continued (or another branch shown) since; its stored messages are skipped by
                # their ids, new ones added and read by extraction
                if self._conversation(conv, env, actor, tally, again=again) or not again:
                    tally.counts["conversations"] += 1
                else:
                    tally.counts["already_imported"] += 1
                step(len(conv.messages))
        counts = tally.counts
        return ImportReport(
            file=file,
            environment=target.name,
            formats=bundle.formats,
            conversations=counts["conversations"],
            messages_added=counts["messages_added"],
            memories_created=counts["memories_created"],
            memories_merged=counts["memories_merged"],
            memories_superseded=counts["memories_superseded"],
            memories_outdated=counts["memories_outdated"],
            memories_queued=counts["memories_queued"],
            already_imported=counts["already_imported"],
            environments_created=tally.created_envs,
            skipped_total=len(bundle.skipped),
            redactions=dict(sorted(tally.redactions.items())),
        )

    def _conversation(
        self,
        conv: ImportedConversation,
        env: Environment,
        actor: Actor,
        tally: _Tally,
        *,
        again: bool,
    ) -> bool:
        """Deliver ``conv`` through extraction; whether it added a message. The secrets of
        its title count once: when it is first imported."""
        title, found = self._scrubbed_line(conv.title, _TITLE_CHARS)
        if not again:
            tally.redactions.update(found.as_dict())
        new = NewConversation(
            id=conversation_id(env, conv),
            source=conv.source,
            title=title,
            started_at=conv.started_at,
            metadata={**conv.metadata, "import": {"format": conv.source, "key": conv.key}},
        )
        added = 0
        for start in range(0, len(conv.messages), MAX_MESSAGES):
            chunk = conv.messages[start : start + MAX_MESSAGES]
            result = self._extraction.extract(
                ConversationInput(conversation=new, messages=chunk), actor, env.id
            )
            added += result.messages_added
            tally.redactions.update(result.redactions)
            for outcome in result.outcomes:
                tally.counts[f"memories_{outcome.action}"] += 1
        tally.counts["messages_added"] += added
        # recorded last: an import stopped part-way re-reads this conversation (its messages
        # are deduplicated by their ids, and extraction resumes after what it already read)
        self._store.imports.record(env.id, [(_CONVERSATION_KEY + conv.key, new.id or "")])
        return added > 0

    def _shown(self, text: str, limit: int) -> str:
        """``text`` on one line, scrubbed, then cut to ``limit`` characters (never inside a
        redaction marker): cut first, a secret split by the cut would no longer match its
        pattern and its first part would be kept."""
        return self._scrubbed_line(text, limit)[0]

    def _scrubbed_line(self, text: str, limit: int) -> tuple[str, Redactions]:
        """:meth:`_shown`, with what the scrubber removed."""
        clean, found = self._scrubber.scrub(" ".join(text.split()))
        return cut(clean, limit, "…"), found

    def _ensure_envs(
        self, bundle: Bundle, actor: Actor, target: Environment, tally: _Tally
    ) -> dict[str | None, Environment]:
        known = self._known_envs(bundle, actor, target)
        descriptions = {e.name: e.description for e in bundle.environments}
        out: dict[str | None, Environment] = {}
        for name, env in known.items():
            if env is None:
                assert name is not None
                env = self._envs.create(name, actor, descriptions.get(name, ""))
                tally.created_envs.append(env.name)
            out[name] = env
        return out


def conversation_id(env: Environment, conv: ImportedConversation) -> str:
    """The stored id of an imported conversation: its source, its environment (hashed, so the
    same export imported into two environments makes two conversations) and its key."""
    return f"{conv.source}:{stable_key(env.id)[:8]}:{conv.key}"


_Item = TypeVar("_Item", ImportedConversation, ImportedMemory)


def _by_env(items: list[_Item]) -> dict[str | None, list[_Item]]:
    out: dict[str | None, list[_Item]] = {}
    for item in items:
        out.setdefault(item.environment, []).append(item)
    return out


def _sources(bundle: Bundle) -> list[SourceCounts]:
    counts: dict[str, Counter[str]] = {f: Counter() for f in bundle.formats}
    for c in bundle.conversations:
        counts.setdefault(c.source, Counter()).update(
            {"conversations": 1, "messages": len(c.messages)}
        )
    for m in bundle.memories:
        counts.setdefault(m.source or "import", Counter())["memories"] += 1
    if bundle.environments:  # only Claude's projects become environments
        counts.setdefault("claude", Counter())["environments"] += len(bundle.environments)
    return [SourceCounts(format=f, **c) for f, c in counts.items()]
