"""Learning from conversations: the conversation model, the LLM-free extractor, and optional
LLM extraction through user-configured providers."""

from engram.extraction.conversation import (
    Conversation,
    Message,
    NewConversation,
    NewMessage,
    Speaker,
    Transcript,
)
from engram.extraction.proposals import Extraction, Proposal
from engram.extraction.rules import Extractor, RuleExtractor

__all__ = [
    "Conversation",
    "Extraction",
    "Extractor",
    "Message",
    "NewConversation",
    "NewMessage",
    "Proposal",
    "RuleExtractor",
    "Speaker",
    "Transcript",
]
