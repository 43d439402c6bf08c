"""InitRunner's sessions on top of the conversation store (``session_storage = "messages"``).

:class:`ConversationSessionStore` is a :class:`~memvault.sessions.SessionStore`: a session is the
agent view of its conversation. ``save`` appends what is new instead of rewriting a snapshot
(:meth:`SQLConversationStore.replace_history`), so resume, trim and the ``SessionManager`` work
unchanged while every turn stays in the log. ``prune`` deletes or archives by the configured
mode (see :class:`~memvault.config.conversation.ConversationConfig`); ``delete`` and ``clear``
are explicit requests and delete.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from memvault.conversation.models import ConversationInfo
from memvault.conversation.session_models import SessionRecord
from memvault.conversation.session_store import MessageLike, check_agent_id
from memvault.conversation.store import SQLConversationStore
from memvault.errors import MemoryValidationError

__all__ = ["ConversationSessionStore"]


class ConversationSessionStore:
    """The :class:`~memvault.sessions.SessionStore` protocol over a conversation store."""

    def __init__(self, conversations: SQLConversationStore, *, prune: str = "delete") -> None:
        if prune not in ("delete", "archive"):
            msg = f"prune mode must be 'delete' or 'archive', got {prune!r}"
            raise MemoryValidationError(msg)
        self._conversations = conversations
        self._prune = prune

    @property
    def conversations(self) -> SQLConversationStore:
        """The conversation store the sessions live in."""
        return self._conversations

    @property
    def location(self) -> str:
        """Where the conversations live."""
        return self._conversations.location

    async def _record(self, info: ConversationInfo) -> SessionRecord:
        messages = await self._conversations.history(info.agent_id, info.session_id)
        return SessionRecord(
            session_id=info.session_id,
            agent_id=info.agent_id,
            created_at=info.created_at,
            updated_at=info.updated_at,
            messages=tuple(messages),
            message_count=len(messages),
        )

    async def save(
        self, agent_id: str, session_id: str, messages: Sequence[MessageLike]
    ) -> SessionRecord:
        """Append what ``messages`` adds to the stored conversation; it becomes the latest."""
        await self._conversations.replace_history(agent_id, session_id, messages)
        info = await self._conversations.conversation(agent_id, session_id)
        assert info is not None  # replace_history created it
        return await self._record(info)

    async def latest(self, agent_id: str) -> SessionRecord | None:
        """The agent's most recently saved session, or ``None`` if it has none."""
        info = await self._conversations.latest(agent_id)
        return None if info is None else await self._record(info)

    async def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        """One session of the agent, or ``None`` (also when it belongs to another agent)."""
        info = await self._conversations.conversation(agent_id, session_id)
        return None if info is None else await self._record(info)

    async def list(
        self, agent_id: str, *, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first (at most ``limit``)."""
        found = await self._conversations.conversations(check_agent_id(agent_id), limit=limit)
        return [await self._record(info) for info in found]

    async def delete(self, agent_id: str, session_id: str) -> bool:
        """Delete one session and its messages; ``False`` if the agent has no such session."""
        return await self._conversations.delete(agent_id, session_id)

    async def clear(self, agent_id: str) -> int:
        """Delete every session of the agent; returns how many were deleted."""
        return await self._conversations.clear(agent_id)

    async def prune(self, agent_id: str, keep: int) -> int:
        """All but the ``keep`` latest sessions: deleted or archived (the configured mode)."""
        return await self._conversations.prune(agent_id, keep, mode=self._prune)

    async def close(self) -> None:
        """Close the conversation store."""
        await self._conversations.close()
