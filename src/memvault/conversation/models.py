"""Frozen data of the conversation store: messages, their metadata, conversations."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.models import AwareDatetime, ChatMessage

__all__ = [
    "ConversationInfo",
    "ConversationPage",
    "ConversationStats",
    "MessageKind",
    "MessageMetadata",
    "MessageView",
    "StoredMessage",
    "estimate_tokens",
]

MessageKind = Literal["message", "summary"]
"""``message``: a turn as it happened; ``summary``: an anchored summary that replaced turns."""

MessageView = Literal["agent", "user", "all"]
"""Who reads: ``agent`` (what goes to the model), ``user`` (what a UI shows), ``all`` (audit)."""


def estimate_tokens(text: str) -> int:
    """A tokenizer-free token estimate: about four characters per token, at least one.

    Context pressure only needs to be comparable between messages and against a budget, not
    exact for one model; this is the usual rule of thumb for English text and BPE tokenizers.
    """
    return max(1, (len(text) + 3) // 4)


class MessageMetadata(BaseModel):
    """Who may see a message, and whether compaction must leave it alone.

    ``agent_visible``: sent to the model (False for, e.g., a UI notice). ``user_visible``: shown
    to the user (False for, e.g., an injected summary or a tool result). ``focus_pinned``: never
    compacted and always kept in the agent's view.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_visible: bool = True
    user_visible: bool = True
    focus_pinned: bool = False


class StoredMessage(BaseModel):
    """One message of a conversation, as stored.

    ``message_id`` grows with every append in the store (so it orders messages across
    conversations); ``position`` is the message's place in its conversation (1, 2, ...).
    ``compacted_at`` is set when a summary (``summary_id``) replaced the message in the agent's
    view; the message itself is never deleted by compaction. ``pending_summary`` marks a tool
    call/result message the soft threshold chose for a deferred summary. ``embedded`` tells
    whether its vector exists yet (the embedding queue fills it in after the write returned).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    message_id: int
    conversation_id: str
    position: int
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    name: str | None = None
    kind: MessageKind = "message"
    metadata: MessageMetadata = Field(default_factory=MessageMetadata)
    created_at: AwareDatetime
    compacted_at: AwareDatetime | None = None
    summary_id: int | None = None
    pending_summary: bool = False
    tokens: int = Field(ge=0)
    embedded: bool = False

    def chat(self) -> ChatMessage:
        """The message as a :class:`ChatMessage` (role, content, name)."""
        return ChatMessage(role=self.role, content=self.content, name=self.name)

    def visible_to(self, view: MessageView) -> bool:
        """Whether ``view`` reads this message (compaction aside)."""
        if view == "agent":
            return self.metadata.agent_visible
        if view == "user":
            return self.metadata.user_visible
        return True


class ConversationInfo(BaseModel):
    """One conversation: the message log of one agent session.

    ``seq`` orders an agent's conversations by their last append (the latest is the highest).
    ``archived_at`` is set when pruning archived it (``prune = "archive"``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str
    agent_id: str
    session_id: str
    seq: int
    created_at: AwareDatetime
    updated_at: AwareDatetime
    archived_at: AwareDatetime | None = None
    message_count: int = Field(default=0, ge=0)


class ConversationStats(BaseModel):
    """Counts of a conversation store (``memvault stats``, ``/metrics``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversations: int = 0
    messages: int = 0
    compacted: int = 0
    summaries: int = 0
    unembedded: int = 0


class ConversationPage(BaseModel):
    """Messages of one conversation, in conversation order, as one view reads them.

    After an append: the messages stored (with their ids; ``total`` the conversation's agent
    view). After a read: one page of ``view``; ``offset + len(messages) < total`` means more.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str
    session_id: str
    agent_id: str
    view: MessageView
    total: int = Field(ge=0)
    offset: int = Field(default=0, ge=0)
    messages: tuple[StoredMessage, ...] = ()
