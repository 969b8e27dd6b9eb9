"""/api/v1/extract and /api/v1/conversations: learning from conversations.

Both paths are idempotent on re-delivery: messages are keyed by their ``external_id`` (or a hash
of role, author, time and content), and what was extracted once is never extracted again.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import Field, StrictBool

from engram.api.deps import ActorDep, EngramDep
from engram.erasure import Erased
from engram.extraction.conversation import Conversation, MessagePage, SourceName
from engram.extraction.results import ExtractionResult
from engram.limits import MAX_POSITION, MAX_TITLE_CHARS, InputModel
from engram.requests.extraction import CONVERSATION_REF_PATTERN, ExtractRequest, Messages
from engram.requests.fields import EnvironmentRef

REDELIVERY = (
    "Re-delivery is idempotent: a message is keyed by its external_id, else by a hash of role, "
    "author, time and content. A message with neither id nor time may be said again (a second "
    "'ok'): the delivered messages that repeat the conversation's last stored ones after "
    "messages it holds (the whole conversation again; a system prompt and the last turns with a "
    "new one), or else the first delivered messages it already holds (a system prompt with each "
    "turn, a retry), are the re-delivery, and every message after them is stored."
)

router = APIRouter(tags=["extraction"])

ConversationPath = Annotated[
    str,
    Path(
        pattern=CONVERSATION_REF_PATTERN,
        description="A 'cnv_…' id, or the caller's own id for the conversation",
    ),
]


class MessagesIn(InputModel):
    messages: Messages
    environment: EnvironmentRef | None = Field(
        default=None, description="Where a new conversation goes (default: yours)"
    )
    source: SourceName = "api"
    title: str = Field(default="", max_length=MAX_TITLE_CHARS)


class ReextractIn(InputModel):
    dry_run: StrictBool = False


@router.post(
    "/extract",
    summary="Store a conversation and the memories proposed from it",
    description=REDELIVERY,
)
def extract(body: ExtractRequest, engram: EngramDep, actor: ActorDep) -> ExtractionResult:
    return engram.extraction.extract(body, actor, body.environment, dry_run=body.dry_run)


@router.delete(
    "/conversations/{conversation_id}",
    summary="Delete a conversation and its messages for good (purge: and what was extracted)",
)
def delete_conversation(
    conversation_id: ConversationPath,
    engram: EngramDep,
    actor: ActorDep,
    purge: Annotated[
        bool, Query(description="Also remove the memories extracted from it, for good")
    ] = False,
) -> Erased:
    return engram.erasure.delete_conversation(conversation_id, actor, purge=purge)


@router.get("/conversations/{conversation_id}", summary="A stored conversation")
def get_conversation(
    conversation_id: ConversationPath, engram: EngramDep, actor: ActorDep
) -> Conversation:
    return engram.extraction.get_conversation(conversation_id, actor)


@router.get(
    "/conversations/{conversation_id}/messages",
    summary="A page of a stored conversation's messages, in order",
)
def list_messages(
    conversation_id: ConversationPath,
    engram: EngramDep,
    actor: ActorDep,
    after: Annotated[
        int,
        Query(
            ge=0,
            le=MAX_POSITION,
            description="Only messages after this position (a page's next_after).",
        ),
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> MessagePage:
    return engram.extraction.messages(conversation_id, actor, after=after, limit=limit)


@router.post(
    "/conversations/{conversation_id}/messages",
    summary="Append messages; extract every few assistant messages",
    description=REDELIVERY,
)
def add_messages(
    conversation_id: ConversationPath, body: MessagesIn, engram: EngramDep, actor: ActorDep
) -> ExtractionResult:
    return engram.extraction.add_messages(
        conversation_id,
        body.messages,
        actor,
        body.environment,
        source=body.source,
        title=body.title,
    )


@router.post(
    "/conversations/{conversation_id}/extract",
    summary="Extract from a stored conversation's messages not read yet",
)
def extract_stored(
    conversation_id: ConversationPath, body: ReextractIn, engram: EngramDep, actor: ActorDep
) -> ExtractionResult:
    return engram.extraction.extract(conversation_id, actor, dry_run=body.dry_run)
