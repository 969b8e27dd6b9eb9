"""Learning from conversations: store messages, extract proposals, pass them to the lifecycle.

Every stored message also becomes a searchable memory of its own (``extraction.turns``), so
what was said can be found even when no rule kept it; extracted memories carry the time of the
messages they came from and absolute dates beside relative ones (``extraction.dates``).

``extract`` reads a whole conversation (or a stored one's messages not yet extracted);
``add_messages`` appends to a growing conversation and extracts every N assistant messages over
the last M messages. Both are idempotent on re-delivery: messages are deduplicated by their
external id or content hash, and a compare-and-set on the conversation's extraction state makes
sure the same messages are never extracted twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from engram.accounts import Role
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound
from engram.extraction.conversation import (
    Conversation,
    ExtractionState,
    Message,
    MessagePage,
    NewConversation,
    NewMessage,
    Speaker,
    Transcript,
)
from engram.extraction.dates import annotate
from engram.extraction.proposals import Extraction, Proposal
from engram.extraction.results import ConversationInput, ExtractionResult, ProposalOutcome
from engram.extraction.rules import Extractor, RuleExtractor
from engram.extraction.turns import message_memories
from engram.ids import new_id
from engram.lifecycle.report import WriteOutcome
from engram.limits import MAX_MESSAGES
from engram.models import Layer, Memory, NewMemory
from engram.scrub import Redactions, Scrubber, scrub_value
from engram.service.environments import EnvironmentService
from engram.service.lifecycle import EPISODE_CATEGORY, LifecycleService
from engram.service.memories import MemoryService
from engram.store.conversations import ConversationStore

MAX_MESSAGE_PAGE = 500
MESSAGE_BATCH = 500


@dataclass(frozen=True)
class ExtractionConfig:
    """Incremental cadence: extract after every ``every`` new assistant messages, reading the
    last ``window`` messages."""

    every: int = 5
    window: int = 20

    def __post_init__(self) -> None:
        if self.every < 1 or self.window < 1:
            raise InvalidInput("extraction cadence and window must be at least 1")


class ExtractionService:
    def __init__(
        self,
        lifecycle: LifecycleService,
        environments: EnvironmentService,
        memories: MemoryService,
        conversations: ConversationStore,
        clock: Clock,
        *,
        extractor: Extractor | None = None,
        config: ExtractionConfig | None = None,
        scrubber: Scrubber | None = None,
    ) -> None:
        self._lifecycle = lifecycle
        self._environments = environments
        self._memories = memories  # delivered messages, kept searchable as given
        self._scrubber = scrubber or Scrubber()
        self.conversations = conversations
        self._clock = clock
        self.extractor: Extractor = extractor or RuleExtractor()
        self.config = config or ExtractionConfig()

    # -- conversations -----------------------------------------------------------------------
    def _lookup(self, conversation_id: str, actor: Actor) -> Conversation | None:
        """The actor's conversation under their own id ``conversation_id``, else the one with
        that Engram id in an environment they can see; None otherwise. Caller ids are scoped
        per user, so one user's ids neither block nor reveal another's."""
        conv = self.conversations.find_conversation(actor.user_id, conversation_id)
        if conv is None:
            conv = self.conversations.get_conversation(conversation_id)
        if conv is None or self._environments.visible(conv.environment_id, actor) is None:
            return None
        return conv

    def get_conversation(
        self, conversation_id: str, actor: Actor, need: Role = Role.READER
    ) -> Conversation:
        """A conversation by the actor's own id for it or by its Engram id; ``need`` is the
        role (and so the key scope) of the caller's action."""
        conv = self._lookup(conversation_id, actor)
        if conv is None:
            raise NotFound(
                f"conversation {conversation_id!r} does not exist", conversation=conversation_id
            )
        self._environments.resolve(conv.environment_id, actor, need)
        return conv

    def messages(
        self, conversation_id: str, actor: Actor, *, after: int = 0, limit: int = 100
    ) -> MessagePage:
        """A page of a stored conversation's messages, those after position ``after``."""
        if not 1 <= limit <= MAX_MESSAGE_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_MESSAGE_PAGE}, got {limit}")
        if after < 0:
            raise InvalidInput(f"after must not be negative, got {after}")
        conv = self.get_conversation(conversation_id, actor)
        items = self.conversations.messages(conv.id, after=after, limit=limit + 1)
        more = len(items) > limit
        items = items[:limit]
        return MessagePage(items=items, next_after=items[-1].position if more else None)

    def start(
        self, new: NewConversation, actor: Actor, environment: str | None = None
    ) -> Conversation:
        """Create a conversation, or return the existing one the actor knows by ``new.id``
        (adding to a conversation stores messages: it needs write access)."""
        return self._start(new, actor, environment)[0]

    def _start(
        self, new: NewConversation, actor: Actor, environment: str | None
    ) -> tuple[Conversation, bool]:
        """:meth:`start`, and whether it created the conversation."""
        if new.id is not None and self._lookup(new.id, actor) is not None:
            conv = self.get_conversation(new.id, actor, Role.WRITER)
            return self._in(conv, environment, actor), False
        env = self._environments.resolve(environment, actor, Role.WRITER)
        conv = Conversation(
            id=new_id("cnv_"),
            owner=actor.user_id,
            external_id=new.id,
            environment_id=env.id,
            source=new.source,
            title=new.title,
            started_at=new.started_at,
            created_at=self._clock(),
            metadata=new.metadata,
        )
        if not self.conversations.create_conversation(conv):  # created concurrently
            existing = self.get_conversation(new.id or conv.id, actor, Role.WRITER)
            return self._in(existing, environment, actor), False
        return conv, True

    def _in(self, conv: Conversation, environment: str | None, actor: Actor) -> Conversation:
        """``conv``, if it is in the environment the caller names (none named: wherever it
        is). A conversation id is the caller's across environments: an app that reuses
        'session-1' in each of its tenants' environments must not add one tenant's messages to
        another's conversation."""
        if environment is None:
            return conv
        env = self._environments.resolve(environment, actor, Role.WRITER)
        if env.id != conv.environment_id:
            held = self._environments.resolve(conv.environment_id, actor)
            raise Conflict(
                f"conversation {conv.external_id or conv.id!r} is in environment "
                f"{held.name!r}, not {env.name!r}: nothing added. A conversation id names one "
                "of your conversations in any environment; give this one another id (e.g. "
                f"'{env.name}:{conv.external_id or conv.id}'), or leave the environment out",
                conversation_id=conv.external_id or conv.id,
                environment=held.name,
            )
        return conv

    def _scrubbed(
        self, messages: Sequence[NewMessage]
    ) -> tuple[list[NewMessage], list[Redactions]]:
        """Each message scrubbed, with what was removed from it."""
        pairs = [scrub_value(self._scrubber, m) for m in messages]
        return [m for m, _ in pairs], [found for _, found in pairs]

    def _append(
        self,
        conv: Conversation,
        messages: Sequence[NewMessage],
        found: Sequence[Redactions],
        actor: Actor,
    ) -> tuple[list[Message], Redactions]:
        """Store the messages not stored yet, and each of them as a searchable memory; what
        the scrubber removed from those (``found``: per message): a message delivered again
        is not stored again, nor its secrets counted again."""
        if len(messages) > MAX_MESSAGES:
            raise InvalidInput(f"at most {MAX_MESSAGES} messages per call, got {len(messages)}")
        ids = [new_id("msg_") for _ in messages]
        added = self.conversations.append_messages(conv.id, messages, ids)
        index = {msg_id: i for i, msg_id in enumerate(ids)}
        removed = Redactions.merge(found[index[m.id]] for m in added)
        if added:
            first = added[0].position
            before = (
                self.conversations.messages(conv.id, after=first - 2, limit=1) if first > 1 else []
            )
            news = message_memories(conv, added, before[0] if before else None, now=self._clock())
            for start in range(0, len(news), MESSAGE_BATCH):
                self._memories.add_many(
                    news[start : start + MESSAGE_BATCH], actor, conv.environment_id
                )
        return added, removed

    # -- extraction --------------------------------------------------------------------------
    def extract(
        self,
        conversation_or_messages: ConversationInput | Sequence[NewMessage] | str,
        actor: Actor,
        environment: str | None = None,
        *,
        dry_run: bool = False,
        extractor: Extractor | None = None,
    ) -> ExtractionResult:
        """Propose memories from a conversation and (unless ``dry_run``) store them.

        Given a conversation or messages, they are stored first (idempotently); given a stored
        conversation's id, its messages not extracted yet are read. A dry run stores nothing.
        """
        source = conversation_or_messages
        if isinstance(source, str):
            conv = self.get_conversation(source, actor, Role.READER if dry_run else Role.WRITER)
            state = self.conversations.extraction_state(conv.id)
            messages = self.conversations.messages(conv.id)
            return self._run(conv, state, messages, actor, dry_run, extractor=extractor)
        data = (
            source
            if isinstance(source, ConversationInput)
            else ConversationInput(messages=list(source))
        )
        if not data.messages:
            raise InvalidInput("a conversation to extract from needs at least one message")
        # scrubbed first: the extractor (maybe a remote LLM) never reads a secret
        new, found = scrub_value(self._scrubber, data.conversation)
        clean, per_message = self._scrubbed(data.messages)
        data = data.model_copy(update={"conversation": new, "messages": clean})
        if dry_run:
            redactions = {"redactions": Redactions.merge([found, *per_message]).as_dict()}
            conv = self._transient(data, actor, environment)
            messages = [
                Message(
                    id=m.external_id or f"{conv.id}#{i}",
                    conversation_id=conv.id,
                    position=i,
                    role=m.role,
                    author=m.author,
                    content=m.content,
                    created_at=m.created_at,
                    external_id=m.external_id,
                )
                for i, m in enumerate(data.messages, start=1)
            ]
            return self._run(
                conv, ExtractionState(), messages, actor, dry_run=True, extractor=extractor
            ).model_copy(update=redactions)
        conv, created = self._start(data.conversation, actor, environment)
        added, removed = self._append(conv, data.messages, per_message, actor)
        state = self.conversations.extraction_state(conv.id)
        messages = self.conversations.messages(conv.id)
        result = self._run(conv, state, messages, actor, False, extractor=extractor)
        # the conversation's own fields are stored once: when it is created
        redactions = {"redactions": ((found if created else Redactions()) + removed).as_dict()}
        return result.model_copy(update={"messages_added": len(added), **redactions})

    def add_messages(
        self,
        conversation_id: str,
        messages: Sequence[NewMessage],
        actor: Actor,
        environment: str | None = None,
        *,
        source: str = "api",
        title: str = "",
        extractor: Extractor | None = None,
    ) -> ExtractionResult:
        """Append messages (starting the conversation if it is new); once ``config.every``
        assistant messages have arrived since the last extraction, extract from the new
        messages with the last ``config.window`` messages as context."""
        new, found = scrub_value(
            self._scrubber, NewConversation(id=conversation_id, source=source, title=title)
        )
        clean, per_message = self._scrubbed(messages)
        conv, created = self._start(new, actor, environment)
        added, removed = self._append(conv, clean, per_message, actor)
        redactions = {"redactions": ((found if created else Redactions()) + removed).as_dict()}
        state = self.conversations.extraction_state(conv.id)
        assistant = self.conversations.count_messages(conv.id, Speaker.ASSISTANT.value)
        name = getattr(self.extractor, "name", "rules")
        if assistant - state.assistant_messages < self.config.every:
            return ExtractionResult(
                conversation_id=conv.id,
                dry_run=False,
                extractor=str(name),
                messages_added=len(added),
                **redactions,
            )
        window = self.conversations.last_messages(conv.id, self.config.window)
        result = self._run(
            conv, state, window, actor, False, assistant=assistant, extractor=extractor
        )
        return result.model_copy(update={"messages_added": len(added), **redactions})

    def _transient(
        self, data: ConversationInput, actor: Actor, environment: str | None
    ) -> Conversation:
        env = self._environments.resolve(environment, actor)
        new = data.conversation
        return Conversation(
            id=new.id or "dry-run",
            environment_id=env.id,
            source=new.source,
            title=new.title,
            started_at=new.started_at,
            created_at=self._clock(),
            metadata=new.metadata,
        )

    def _run(
        self,
        conv: Conversation,
        state: ExtractionState,
        window: list[Message],
        actor: Actor,
        dry_run: bool,
        *,
        assistant: int | None = None,
        extractor: Extractor | None = None,
    ) -> ExtractionResult:
        """Extract from the messages after ``state.position`` (``window`` gives context), and
        unless a dry run, claim them (compare-and-set) and store what was proposed."""
        fresh = [m for m in window if m.position > state.position]
        if not fresh:
            return ExtractionResult(conversation_id=conv.id, dry_run=dry_run, extractor="none")
        start = min(m.position for m in fresh)
        last = max(m.position for m in fresh)
        context = [m for m in window if m.position >= start - self.config.window]
        first = bool(context) and context[0].position == 1
        summary_from, continued = (0, None) if first else self._part(conv, context, start, last)
        extraction = (extractor or self.extractor).run(
            Transcript(conversation=conv, messages=context, summary_from=summary_from)
        )
        said = {m.id: m.created_at for m in context if m.created_at is not None}
        # dated here, so a dry run and the result show the text that is stored
        proposals = [_dated(p, said) for p in _from_fresh(extraction, {m.id for m in fresh})]
        result = ExtractionResult(
            conversation_id=None if dry_run else conv.id,
            dry_run=dry_run,
            extractor=extraction.extractor,
            fallback_reason=extraction.fallback_reason,
            proposals=proposals,
        )
        if dry_run:
            return result
        if assistant is None:
            assistant = self.conversations.count_messages(conv.id, Speaker.ASSISTANT.value)
        new_state = ExtractionState(
            position=max(m.position for m in fresh), assistant_messages=assistant
        )
        if not self.conversations.advance_extraction(conv.id, state, new_state):
            # another delivery extracted these messages first
            return result.model_copy(update={"proposals": []})
        try:
            if extraction.whole:  # its episode summarises the messages it was told to
                part = _Part(max(summary_from, context[0].position), last, first, continued)
            elif continued is not None:  # an LLM's prompt was cut (its newest part kept) while
                # going on with a part: still that part's summary, in place of the earlier one
                part = _Part(summary_from, last, False, continued)
            else:  # cut, read from the first message: a fuller summary is not replaced
                part = _Part(start, last, False, None)
            outcomes, via = self._store(proposals, conv, actor, context, part=part)
        except BaseException:
            self.conversations.advance_extraction(conv.id, new_state, state)
            raise
        return result.model_copy(update={"outcomes": outcomes, "stored_via": via})

    def _store(
        self,
        proposals: list[Proposal],
        conv: Conversation,
        actor: Actor,
        messages: Sequence[Message] = (),
        *,
        part: _Part | None = None,
    ) -> tuple[list[ProposalOutcome], str | None]:
        """Store the proposals through the lifecycle; ``part``: the messages the episode
        summarises, kept in its metadata, and the earlier summaries it replaces."""
        if not proposals:
            return [], None
        said = {m.id: m.created_at for m in messages if m.created_at is not None}
        news = [_timed(p.to_new_memory(conv.id), p, said) for p in proposals]
        if part is not None:
            span = {"from_position": part.start, "to_position": part.end}
            news = [
                n.model_copy(update={"metadata": {**n.metadata, **span}})
                if n.layer is Layer.EPISODE and n.category == EPISODE_CATEGORY
                else n
                for n in news
            ]
        decisions = self._lifecycle.remember_many(news, actor, conv.environment_id)
        replaces = [] if part is None else part.replaces
        if replaces is None or replaces:
            for d in decisions:
                if d.memory.layer is Layer.EPISODE and d.memory.category == EPISODE_CATEGORY:
                    self._lifecycle.replace_episodes(d.memory, actor, replaces)
        return [_outcome(i, d) for i, d in enumerate(decisions)], "lifecycle.remember"

    def _part(
        self, conv: Conversation, context: Sequence[Message], start: int, last: int
    ) -> tuple[int, Memory | None]:
        """Where the episode of a run that does not read from the first message starts, and
        the earlier summary it replaces: a conversation's summaries cover parts of at most
        ``config.window`` messages, one after the other. The part the latest summary covers
        goes on while it stays that short (its summary replaced by one of the longer part);
        else a new part starts at the first new message."""
        latest = max(
            (
                (int(m.metadata["to_position"]), int(m.metadata["from_position"]), m)
                for m in self._lifecycle.episodes_of(conv.environment_id, conv.id)
                if isinstance(m.metadata.get("from_position"), int)
                and isinstance(m.metadata.get("to_position"), int)
            ),
            default=None,
            key=lambda t: (t[0], t[1]),
        )
        if latest is not None:
            end, begin, summary = latest
            held = bool(context) and context[0].position <= begin
            if held and end < start and last - begin < self.config.window:
                return begin, summary
        return start, None


@dataclass(frozen=True)
class _Part:
    """The messages (by position) a run's episode summarises, and what it replaces: every
    earlier summary (``first``: it read from the first message) or the one of the part it
    continues."""

    start: int
    end: int
    first: bool
    continues: Memory | None

    @property
    def replaces(self) -> list[Memory] | None:
        """The summaries its episode replaces (None: every earlier one)."""
        if self.first:
            return None
        return [] if self.continues is None else [self.continues]


def _said_at(proposal: Proposal, said: dict[str, datetime]) -> datetime | None:
    """When a proposal's messages were said: the latest of their times (None: not known)."""
    times = [said[i] for i in proposal.source_message_ids if i in said]
    return max(times) if times else None


def _dated(proposal: Proposal, said: dict[str, datetime]) -> Proposal:
    """A proposal whose relative dates get the absolute date beside them, as of when its
    messages were said."""
    at = _said_at(proposal, said)
    if at is None:
        return proposal
    return proposal.model_copy(update={"content": annotate(proposal.content, at)})


def _timed(new: NewMemory, proposal: Proposal, said: dict[str, datetime]) -> NewMemory:
    """A proposal's memory made when its messages were said (its text is dated already)."""
    at = _said_at(proposal, said)
    return new if at is None else new.model_copy(update={"created_at": at})


def _from_fresh(extraction: Extraction, fresh_ids: set[str]) -> list[Proposal]:
    """Facts and procedures read from the new messages only (the rest is context that an
    earlier run already read); the episode summarises the whole window."""
    return [
        p
        for p in extraction.proposals
        if p.layer is Layer.EPISODE
        or not p.source_message_ids
        or any(i in fresh_ids for i in p.source_message_ids)
    ]


def _outcome(index: int, decision: WriteOutcome) -> ProposalOutcome:
    """What the lifecycle did with proposal ``index``: the memory that now holds it, and the
    one it was merged into or superseded."""
    return ProposalOutcome(
        proposal=index,
        action=decision.action.value,
        memory_id=decision.memory.id,
        related_id=decision.absorbed_into or decision.superseded or decision.memory.superseded_by,
    )
