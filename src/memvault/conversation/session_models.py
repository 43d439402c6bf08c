"""Frozen data of conversation sessions: a saved session and the session settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from memvault.models import AwareDatetime, ChatMessage

__all__ = ["SessionConfig", "SessionRecord"]


class SessionRecord(BaseModel):
    """One saved conversation of an agent: its message history as of the last save.

    ``messages`` never holds system messages (they are stripped when saving, so a resumed
    conversation always runs under the agent's current system prompt). ``message_count`` is
    ``len(messages)``, kept as a field so listings can show it without counting.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    agent_id: str
    created_at: AwareDatetime
    updated_at: AwareDatetime
    messages: tuple[ChatMessage, ...] = ()
    message_count: int = Field(default=0, ge=0)


class SessionConfig(BaseModel):
    """How much conversation history is resumed and kept.

    ``max_resume_messages`` messages are loaded on resume, an active history is trimmed to
    twice that, and only the ``max_sessions`` most recent sessions of an agent are kept.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_resume_messages: int = Field(default=20, ge=1)
    max_sessions: int = Field(default=10, ge=1)
