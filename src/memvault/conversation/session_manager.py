"""Save, resume, trim and prune an agent's conversation sessions.

Typical REPL loop::

    manager = SessionManager(open_session_store(url), agent_id="dev-1")
    resumed = await manager.resume() if want_resume else None
    session_id, history = resumed or (manager.new_session_id(), [])
    while True:
        history = manager.trim([*history, user_message, *agent_reply])
        await manager.save_turn(session_id, history)   # never raises on storage failure
    await manager.end_session(session_id, history)     # on REPL exit: after_session trigger

Saving is best-effort by design: losing one turn's history is far better than crashing an
interactive agent because the disk is full or the database is down. So is the consolidation
that ``end_session`` triggers under ``consolidation_interval: after_session``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any

from memvault.consolidation.triggers import consolidate_on
from memvault.conversation.session_models import SessionConfig
from memvault.conversation.session_store import (
    MessageLike,
    SessionStore,
    check_agent_id,
    check_messages,
    check_session_id,
)
from memvault.errors import MemoryError
from memvault.models import ChatMessage, ConsolidationInterval

__all__ = ["SessionManager", "conversation_start"]

logger = logging.getLogger(__name__)


def conversation_start(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` from the first user message on.

    A history that opens with an assistant reply (or a tool result) answers a request that is
    no longer there; chat APIs reject or misread it, so such leading messages are dropped.
    """
    for i, message in enumerate(messages):
        if message.role == "user":
            return list(messages[i:])
    return []


class SessionManager:
    """An agent's sessions in ``store``, under the limits of ``config``.

    ``memory`` (an :class:`~memvault.AsyncMemory`, optional) is what :meth:`end_session`
    consolidates when its ``options.consolidation_interval`` is ``after_session``.
    """

    def __init__(
        self,
        store: SessionStore,
        agent_id: str,
        config: SessionConfig | None = None,
        *,
        memory: Any | None = None,
    ) -> None:
        self._store = store
        self._agent_id = check_agent_id(agent_id)
        self._config = config or SessionConfig()
        self._memory = memory

    @property
    def store(self) -> SessionStore:
        """The store the sessions live in."""
        return self._store

    @property
    def agent_id(self) -> str:
        """The agent whose sessions this manager handles."""
        return self._agent_id

    @property
    def config(self) -> SessionConfig:
        """The resume, trim and prune limits."""
        return self._config

    @staticmethod
    def new_session_id() -> str:
        """A fresh random session id: 12 lowercase hex digits (48 random bits)."""
        return secrets.token_hex(6)

    async def save_turn(self, session_id: str, messages: Sequence[MessageLike]) -> bool:
        """Save the conversation's history after a turn; ``True`` if it was saved.

        ``messages`` are :class:`ChatMessage` objects or OpenAI-style ``{"role": ...,
        "content": ...}`` dicts (``name`` allowed), mixed freely; ``session_id`` is any 1-200
        printable characters without ``/`` (:meth:`new_session_id` makes one).

        System messages are stripped first: they are the agent's prompt, not the conversation,
        and a resumed session must run under the agent's current prompt rather than a stale
        copy. After the save, sessions beyond ``config.max_sessions`` are pruned, oldest first.

        Never raises for a storage failure: that is logged as a warning (``session.save.failed``)
        and ``False`` is returned, so the agent goes on. A failed prune after a successful save
        is logged too (``session.prune.failed``) and does not change the result. A history with
        nothing but system messages is not saved (``True``: nothing was lost).

        Raises:
            MemoryValidationError: ``session_id`` is not a session id, or an item of
                ``messages`` is not a chat message (programming errors, not storage; one line).
        """
        sid = check_session_id(session_id)
        kept = [m for m in check_messages(messages) if m.role != "system"]
        if not kept:
            # Nothing to resume from; saving it would only hide the agent's previous session.
            return True
        try:
            await self._store.save(self._agent_id, sid, kept)
        except Exception as exc:
            # Deliberately broad: the guarantee is "never raises", whatever the store is
            # (a third-party store may raise anything). Unexpected errors get a traceback.
            self._warn("session.save.failed", sid, exc)
            return False
        try:
            await self._store.prune(self._agent_id, self._config.max_sessions)
        except Exception as exc:
            self._warn("session.prune.failed", sid, exc)
        return True

    async def end_session(
        self, session_id: str, messages: Sequence[MessageLike] | None = None
    ) -> Any | None:
        """The session is over (the REPL exits): save its last history, fire ``after_session``.

        ``messages``, when given, are saved first as by :meth:`save_turn`. Then, if the manager
        has a ``memory`` whose ``consolidation_interval`` is ``after_session``, the agent's
        memories are consolidated; the :class:`~memvault.consolidation.ConsolidationResult` is
        returned (None when nothing ran). Never raises for a storage or consolidation failure:
        both are logged, as for saves.

        Raises:
            MemoryValidationError: ``session_id`` or an item of ``messages`` is invalid.
        """
        sid = check_session_id(session_id)
        if messages is not None:
            await self.save_turn(sid, messages)
        if self._memory is None:
            return None
        return await consolidate_on(
            self._memory, ConsolidationInterval.AFTER_SESSION, agent_id=self._agent_id
        )

    def _warn(self, event: str, session_id: str, exc: Exception) -> None:
        logger.warning(
            "%s: agent %r session %s: %s",
            event,
            self._agent_id,
            session_id,
            exc,
            exc_info=not isinstance(exc, MemoryError),
            extra={"event": event, "agent_id": self._agent_id, "session_id": session_id},
        )

    async def resume(self, agent_id: str | None = None) -> tuple[str, list[ChatMessage]] | None:
        """The latest session of the agent: ``(session_id, messages)``, or ``None`` if none.

        Only the last ``config.max_resume_messages`` messages are returned (to stay within
        the model's context window), minus any leading assistant or tool messages, so the
        history starts with a user message. ``agent_id`` defaults to this manager's agent.

        Raises:
            MemoryRetrievalError: the store could not be read (resuming was asked for
                explicitly, so the caller decides whether to start afresh).
            MemoryConnectionError: the store cannot be opened.
        """
        agent = self._agent_id if agent_id is None else check_agent_id(agent_id)
        record = await self._store.latest(agent)
        if record is None:
            return None
        window = record.messages[-self._config.max_resume_messages :]
        return record.session_id, conversation_start(window)

    def trim(self, messages: Sequence[MessageLike]) -> list[ChatMessage]:
        """An active history cut to its last ``2 * config.max_resume_messages`` messages.

        The cut keeps the most recent messages and then drops leading assistant/tool messages,
        so the history still starts with a user message. System messages at the very start
        (the agent's prompt, if the caller keeps it in the history) are kept and not counted.
        """
        items = check_messages(messages)
        head = 0
        while head < len(items) and items[head].role == "system":
            head += 1
        limit = 2 * self._config.max_resume_messages
        return [*items[:head], *conversation_start(items[head:][-limit:])]

    async def prune(self) -> int:
        """Delete the agent's sessions beyond ``config.max_sessions``, oldest first.

        Returns how many were deleted.

        Raises:
            MemoryStoreError: the store could not be written.
        """
        return await self._store.prune(self._agent_id, self._config.max_sessions)
