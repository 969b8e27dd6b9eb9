"""Learning calls (``client.extraction`` and ``client.lifecycle``), described once without I/O
like those in ``_calls``."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from engram.erasure import Erased
from engram.extraction.conversation import Conversation, MessagePage, NewMessage
from engram.extraction.results import ConversationInput, ExtractionResult
from engram.lifecycle.feedback import FeedbackKind, FeedbackOutcome
from engram.lifecycle.report import MaintenanceReport, WriteOutcome
from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.models import Memory, NewMemory
from engram.sdk._calls import Call, _json, _params, seg


class ExtractionCalls:
    def extract(
        self,
        source: ConversationInput | Sequence[NewMessage] | str,
        environment: str | None = None,
        *,
        dry_run: bool = False,
    ) -> Call[ExtractionResult]:
        """A conversation, a list of messages, or a stored conversation's id (its messages
        not extracted yet; ``environment`` is then the conversation's own)."""
        if isinstance(source, str):
            path = f"/api/v1/conversations/{seg(source)}/extract"
            return Call("POST", path, ExtractionResult, {}, {"dry_run": dry_run})
        data = (
            source
            if isinstance(source, ConversationInput)
            else ConversationInput(messages=list(source))
        )
        body = {
            "conversation": _json(data.conversation),
            "messages": [_json(m) for m in data.messages],
            "dry_run": dry_run,
            "environment": environment,
        }
        return Call("POST", "/api/v1/extract", ExtractionResult, {}, body)

    def add_messages(
        self,
        conversation_id: str,
        messages: Sequence[NewMessage],
        environment: str | None = None,
        *,
        source: str = "api",
        title: str = "",
    ) -> Call[ExtractionResult]:
        body = {
            "messages": [_json(m) for m in messages],
            "environment": environment,
            "source": source,
            "title": title,
        }
        path = f"/api/v1/conversations/{seg(conversation_id)}/messages"
        return Call("POST", path, ExtractionResult, {}, body)

    def delete_conversation(self, conversation_id: str, *, purge: bool = False) -> Call[Erased]:
        """Remove a conversation and its messages for good (``purge``: and its memories)."""
        path = f"/api/v1/conversations/{seg(conversation_id)}"
        return Call("DELETE", path, Erased, {"purge": purge})

    def get_conversation(self, conversation_id: str) -> Call[Conversation]:
        return Call("GET", f"/api/v1/conversations/{seg(conversation_id)}", Conversation)

    def messages(
        self, conversation_id: str, *, after: int = 0, limit: int = 100
    ) -> Call[MessagePage]:
        params = {"after": after, "limit": limit}
        return Call(
            "GET", f"/api/v1/conversations/{seg(conversation_id)}/messages", MessagePage, params
        )


class LifecycleCalls:
    def remember(self, new: NewMemory, environment: str | None = None) -> Call[WriteOutcome]:
        body = new.model_dump(mode="json", exclude_none=True)
        params = _params(environment=environment)
        return Call("POST", "/api/v1/memories/remember", WriteOutcome, params, body)

    def feedback(
        self, memory_id: str, kind: FeedbackKind | str, note: str = ""
    ) -> Call[FeedbackOutcome]:
        body = {"kind": FeedbackKind(kind).value, "note": note}
        return Call(
            "POST", f"/api/v1/memories/{seg(memory_id)}/feedback", FeedbackOutcome, {}, body
        )

    def undo(self, memory_id: str) -> Call[builtins.list[Memory]]:
        return Call("POST", f"/api/v1/memories/{seg(memory_id)}/undo", builtins.list[Memory])

    def maintain(
        self, environment: str | None = None, *, dry_run: bool = False
    ) -> Call[MaintenanceReport]:
        body = {"environment": environment, "dry_run": dry_run}
        return Call("POST", "/api/v1/maintenance", MaintenanceReport, {}, body)

    def reviews(
        self,
        environment: str | None = None,
        *,
        status: ReviewStatus | None = ReviewStatus.OPEN,
        limit: int = 100,
    ) -> Call[builtins.list[ReviewItem]]:
        """``status=None``: every status."""
        which = "all" if status is None else ReviewStatus(status).value
        params = _params(environment=environment, status=which, limit=limit)
        return Call("GET", "/api/v1/reviews", builtins.list[ReviewItem], params)

    def resolve_review(self, review_id: str, *, accept: bool, note: str = "") -> Call[ReviewItem]:
        """Accept (the newer fact supersedes the older) or dismiss (both stay)."""
        which = "accept" if accept else "dismiss"
        path = f"/api/v1/reviews/{seg(review_id)}/{which}"
        return Call("POST", path, ReviewItem, {}, {"note": note})
