"""Learning from a conversation without calling an LLM from the tool."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.erasure import Erased
from engram.extraction.conversation import NewConversation
from engram.extraction.results import ExtractionResult
from engram.mcp.binding import Binding
from engram.mcp.tools._common import DESTRUCTIVE, WRITE, Environment, tool
from engram.requests.extraction import ConversationRef, ExtractRequest, Messages


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Extract memories from a conversation", WRITE)
    def extract_memories(
        messages: Annotated[
            Messages, Field(description="The turns, oldest first: {role, content}.")
        ],
        dry_run: Annotated[bool, Field(description="Propose only; store nothing.")] = False,
        environment: Environment = None,
        conversation: Annotated[
            NewConversation | None,
            Field(
                description="The conversation the turns belong to: {id: your own id for it, "
                "title}. Delivering the same id again stores only the turns not seen before."
            ),
        ] = None,
    ) -> ExtractionResult:
        """Propose facts, an episode and procedures from conversation turns and store them
        through the same dedup and contradiction rules as remember. Use dry_run to see the
        proposals first; name the conversation (conversation.id) to deliver it again later
        without storing its turns twice."""
        request = ExtractRequest(
            conversation=conversation or NewConversation(),
            messages=messages,
            dry_run=dry_run,
            environment=b.env(environment),
        )
        return b.engram.extraction.extract(
            request, b.current_actor(), request.environment, dry_run=request.dry_run
        )

    @tool(server, "Delete a stored conversation for good", DESTRUCTIVE)
    def delete_conversation(
        conversation_id: Annotated[
            ConversationRef, Field(description="A 'cnv_…' id or your own id")
        ],
        purge: Annotated[
            bool, Field(description="Also remove the memories extracted from it, for good.")
        ] = False,
    ) -> Erased:
        """Remove a conversation and its messages for good (not restorable), and with purge
        the memories extracted from it. Only when the user asks for it."""
        return b.engram.erasure.delete_conversation(conversation_id, b.current_actor(), purge=purge)
