"""``Memory.conversations``: the conversation store, compaction and the embedding queue of a
memory, behind one object (async :class:`ConversationMemory`, sync :class:`SyncConversations`).

The store lives where the memories live (same SQLite file or PostgreSQL schema; in process for
``memory://``), opened on first use. With ``[conversation.embedding_queue] enabled = true`` the
queue starts on first use (or :meth:`ConversationMemory.start`, e.g. at server start-up) and
backfills the rows a previous process left without a vector; appends return before their
vectors exist. Compaction uses ``[conversation.compaction]`` and the memory's LLM (the
deterministic summariser without one).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from memvault.config.conversation import ConversationConfig
from memvault.conversation.compaction import CompactionReport, Compactor, ContextPressure
from memvault.conversation.models import (
    ConversationInfo,
    ConversationStats,
    MessageMetadata,
    MessageView,
    StoredMessage,
)
from memvault.conversation.queue import EmbeddingQueue, Progress, QueueStats
from memvault.conversation.session_store import MessageLike
from memvault.conversation.sessions import ConversationSessionStore
from memvault.conversation.store import MessageHit, SQLConversationStore
from memvault.errors import MemoryNotFoundError
from memvault.models import ChatMessage
from memvault.protocols import Embedder, LLMProvider

__all__ = [
    "ContextWindow",
    "ConversationMemory",
    "ConversationStatus",
    "SyncConversations",
    "open_conversation_memory",
]

T = TypeVar("T")


class ContextWindow(BaseModel):
    """A conversation's context window: what the model is sent, and how full it is.

    ``pressure`` measures the agent view against ``[conversation.compaction] token_budget``;
    the thresholds say where compaction acts (soft: tool pairs marked, hard: summaries
    applied before the next LLM call). The counts are of the whole conversation: messages in
    the agent view, messages compacted (replaced by a summary, still stored), messages waiting
    for a deferred summary, and summaries. ``messages`` is the agent view itself (empty when
    not asked for).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str
    session_id: str
    agent_id: str
    pressure: ContextPressure
    soft_threshold: float
    hard_threshold: float
    target_ratio: float
    in_view: int = Field(ge=0)
    compacted: int = Field(ge=0)
    pending_summary: int = Field(ge=0)
    summaries: int = Field(ge=0)
    messages: tuple[ChatMessage, ...] = ()


class ConversationStatus(BaseModel):
    """The conversation store's counts and its embedding queue (``None`` while not running).

    ``queue_enabled`` is ``[conversation.embedding_queue] enabled``; ``stats.unembedded`` is
    the backfill's outstanding work, whether or not the queue runs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    queue_enabled: bool
    stats: ConversationStats
    queue: QueueStats | None = None


class ConversationMemory:
    """The conversations of one memory (see the module docstring)."""

    def __init__(
        self,
        store: SQLConversationStore,
        *,
        config: ConversationConfig | None = None,
        embedder: Embedder | None = None,
        llm: LLMProvider | None = None,
        owns_store: bool = True,
    ) -> None:
        # owns_store=False: the store is shared (e.g. with a session store that closes it),
        # so close() stops the queue but leaves the store open.
        self._store = store
        self._config = config or ConversationConfig()
        self._embedder = embedder
        self._llm = llm
        self._compactor = Compactor(store, self._config.compaction, llm=llm)
        self._queue: EmbeddingQueue | None = None
        self._start_lock = asyncio.Lock()
        self._owns_store = owns_store

    @property
    def store(self) -> SQLConversationStore:
        """The conversation store."""
        return self._store

    @property
    def config(self) -> ConversationConfig:
        """The ``[conversation]`` settings."""
        return self._config

    @property
    def compactor(self) -> Compactor:
        """The compactor (thresholds of ``[conversation.compaction]``)."""
        return self._compactor

    @property
    def llm(self) -> LLMProvider | None:
        """The LLM that writes summaries and probe questions (``None``: the extractive one)."""
        return self._llm

    def sessions(self) -> ConversationSessionStore:
        """A :class:`~memvault.sessions.SessionStore` over these conversations (prune mode of
        the config): hand it to a :class:`~memvault.sessions.SessionManager`."""
        return ConversationSessionStore(self._store, prune=self._config.prune)

    async def start(self, *, progress: Progress | None = None) -> None:
        """Start the embedding queue and its start-up backfill, when the queue is enabled."""
        if not self._config.embedding_queue.enabled or self._embedder is None:
            return
        async with self._start_lock:
            if self._queue is None:
                queue = EmbeddingQueue(self._store, self._embedder, self._config.embedding_queue)
                await queue.start(progress=progress)
                self._queue = queue

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        agent_id: str,
        metadata: MessageMetadata | Sequence[MessageMetadata] | None = None,
    ) -> builtins.list[StoredMessage]:
        """Store the turn(s) at once; queue them for embedding when the queue is enabled."""
        await self.start()
        if self._queue is not None:
            return await self._queue.append(agent_id, session_id, messages, metadata=metadata)
        return await self._store.append(agent_id, session_id, messages, metadata=metadata)

    async def messages(
        self,
        session_id: str,
        *,
        agent_id: str,
        view: MessageView = "agent",
        limit: int | None = None,
    ) -> builtins.list[StoredMessage]:
        """The session's messages as ``view`` reads them."""
        return await self._store.messages(agent_id, session_id, view=view, limit=limit)

    async def history(
        self, session_id: str, *, agent_id: str, view: MessageView = "agent"
    ) -> builtins.list[ChatMessage]:
        """The session as chat messages (``agent`` view: what to send to the model)."""
        return await self._store.history(agent_id, session_id, view=view)

    async def context(self, session_id: str, *, agent_id: str) -> builtins.list[ChatMessage]:
        """Compaction's pre-call step (:meth:`compact`), then the agent view to send."""
        await self.compact(session_id, agent_id=agent_id)
        return await self._store.history(agent_id, session_id)

    async def compact(
        self, session_id: str, *, agent_id: str, extractive: bool = False
    ) -> CompactionReport:
        """Relieve the session's context pressure (soft: mark tool pairs; hard: summarise).

        ``extractive`` summarises with the deterministic extractor even when an LLM is set
        (cheaper, and what runs anyway when the model fails).
        """
        compactor = (
            Compactor(self._store, self._config.compaction) if extractive else self._compactor
        )
        report = await compactor.prepare(agent_id, session_id)
        if report.summaries and self._queue is not None:
            # Summaries are messages too: queued like any other, so search finds them densely.
            found = await self._store.messages(agent_id, session_id, view="all")
            wanted = set(report.summaries)
            self._queue.submit([m for m in found if m.message_id in wanted])
        return report

    async def pressure(self, session_id: str, *, agent_id: str) -> ContextPressure:
        """The session's context pressure against ``[conversation.compaction] token_budget``."""
        return await self._compactor.pressure(agent_id, session_id)

    async def window(
        self, session_id: str, *, agent_id: str, include_messages: bool = True
    ) -> ContextWindow:
        """The session's context window and compaction state (reads only; compacts nothing).

        Raises:
            MemoryNotFoundError: the agent has no conversation ``session_id``.
        """
        info = await self._store.conversation(agent_id, session_id)
        if info is None:
            msg = f"no conversation {session_id!r} for agent {agent_id!r}"
            raise MemoryNotFoundError(msg)
        rows = await self._store.messages(agent_id, session_id, view="all")
        view = await self._store.messages(agent_id, session_id, view="agent")
        cfg = self._config.compaction
        return ContextWindow(
            conversation_id=info.conversation_id,
            session_id=info.session_id,
            agent_id=info.agent_id,
            pressure=self._compactor.pressure_of(view),
            soft_threshold=cfg.soft_threshold,
            hard_threshold=cfg.hard_threshold,
            target_ratio=cfg.target_ratio,
            in_view=len(view),
            compacted=sum(1 for m in rows if m.compacted_at is not None),
            pending_summary=sum(1 for m in view if m.pending_summary),
            summaries=sum(1 for m in view if m.kind == "summary"),
            messages=tuple(m.chat() for m in view) if include_messages else (),
        )

    async def set_metadata(
        self,
        session_id: str,
        message_ids: Sequence[int],
        *,
        agent_id: str,
        agent_visible: bool | None = None,
        user_visible: bool | None = None,
        focus_pinned: bool | None = None,
    ) -> int:
        """Change visibility or pinning of messages; returns how many changed."""
        return await self._store.update_metadata(
            agent_id,
            session_id,
            message_ids,
            agent_visible=agent_visible,
            user_visible=user_visible,
            focus_pinned=focus_pinned,
        )

    async def search(
        self,
        text: str,
        *,
        agent_id: str,
        session_id: str | None = None,
        limit: int = 10,
        view: MessageView = "agent",
    ) -> builtins.list[MessageHit]:
        """Messages matching ``text``: lexically at once, densely once embedded."""
        return await self._store.search(
            agent_id, text, session_id=session_id, limit=limit, embedder=self._embedder, view=view
        )

    async def conversations(
        self, *, agent_id: str, limit: int | None = None, include_archived: bool = False
    ) -> builtins.list[ConversationInfo]:
        """The agent's conversations, latest first."""
        return await self._store.conversations(
            agent_id, limit=limit, include_archived=include_archived
        )

    async def backfill(self, *, progress: Progress | None = None) -> int:
        """Embed every stored message without a vector now; returns how many were stored.

        Works with the queue off too (it then uses a temporary queue).
        """
        if self._embedder is None:
            return 0
        if self._queue is not None:
            return await self._queue.backfill(progress=progress)
        queue = EmbeddingQueue(self._store, self._embedder, self._config.embedding_queue)
        try:
            return await queue.backfill(progress=progress)
        finally:
            await queue.close()

    async def flush(self) -> None:
        """Wait until the embedding queue is empty."""
        if self._queue is not None:
            await self._queue.flush()

    def queue_stats(self) -> QueueStats | None:
        """The embedding queue's depth and progress (``None`` while it is not running)."""
        return None if self._queue is None else self._queue.stats()

    async def stats(self) -> ConversationStats:
        """Counts of the conversation store."""
        return await self._store.stats()

    async def status(self) -> ConversationStatus:
        """The store's counts and the embedding queue's depth and backfill progress."""
        return ConversationStatus(
            queue_enabled=self._config.embedding_queue.enabled,
            stats=await self._store.stats(),
            queue=self.queue_stats(),
        )

    async def close(self) -> None:
        """Embed what is queued, stop the queue and close the store (when it owns it)."""
        if self._queue is not None:
            await self._queue.close()
            self._queue = None
        if self._owns_store:
            await self._store.close()


def open_conversation_memory(
    url: str | None,
    config: ConversationConfig,
    *,
    embedder: Embedder,
    llm: LLMProvider | None = None,
) -> ConversationMemory:
    """Seed 004's conversation store beside the memories at ``url`` (None: in process).

    The messages live in the same SQLite file or PostgreSQL schema as the memories; nothing is
    opened until first use.

    Raises:
        MemoryConfigError: the store cannot hold conversations (composite, mem0, qdrant).
    """
    from memvault.conversation.factory import open_conversation_store

    return ConversationMemory(
        open_conversation_store(url or "memory://"), config=config, embedder=embedder, llm=llm
    )


class SyncConversations:
    """The blocking facade of :class:`ConversationMemory` (``Memory.conversations``)."""

    def __init__(
        self, core: ConversationMemory, run: Callable[[Coroutine[Any, Any, Any]], Any]
    ) -> None:
        self._core = core
        self._run = run

    @property
    def core(self) -> ConversationMemory:
        """The async object this facade drives."""
        return self._core

    def append(
        self,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        agent_id: str,
        metadata: MessageMetadata | Sequence[MessageMetadata] | None = None,
    ) -> builtins.list[StoredMessage]:
        """See :meth:`ConversationMemory.append`."""
        result: builtins.list[StoredMessage] = self._run(
            self._core.append(session_id, messages, agent_id=agent_id, metadata=metadata)
        )
        return result

    def messages(
        self,
        session_id: str,
        *,
        agent_id: str,
        view: MessageView = "agent",
        limit: int | None = None,
    ) -> builtins.list[StoredMessage]:
        """See :meth:`ConversationMemory.messages`."""
        result: builtins.list[StoredMessage] = self._run(
            self._core.messages(session_id, agent_id=agent_id, view=view, limit=limit)
        )
        return result

    def history(
        self, session_id: str, *, agent_id: str, view: MessageView = "agent"
    ) -> builtins.list[ChatMessage]:
        """See :meth:`ConversationMemory.history`."""
        result: builtins.list[ChatMessage] = self._run(
            self._core.history(session_id, agent_id=agent_id, view=view)
        )
        return result

    def context(self, session_id: str, *, agent_id: str) -> builtins.list[ChatMessage]:
        """See :meth:`ConversationMemory.context`."""
        result: builtins.list[ChatMessage] = self._run(
            self._core.context(session_id, agent_id=agent_id)
        )
        return result

    def compact(self, session_id: str, *, agent_id: str) -> CompactionReport:
        """See :meth:`ConversationMemory.compact`."""
        result: CompactionReport = self._run(self._core.compact(session_id, agent_id=agent_id))
        return result

    def search(
        self,
        text: str,
        *,
        agent_id: str,
        session_id: str | None = None,
        limit: int = 10,
        view: MessageView = "agent",
    ) -> builtins.list[MessageHit]:
        """See :meth:`ConversationMemory.search`."""
        result: builtins.list[MessageHit] = self._run(
            self._core.search(
                text, agent_id=agent_id, session_id=session_id, limit=limit, view=view
            )
        )
        return result

    def backfill(self, *, progress: Progress | None = None) -> int:
        """See :meth:`ConversationMemory.backfill`."""
        result: int = self._run(self._core.backfill(progress=progress))
        return result

    def flush(self) -> None:
        """See :meth:`ConversationMemory.flush`."""
        self._run(self._core.flush())

    def queue_stats(self) -> QueueStats | None:
        """See :meth:`ConversationMemory.queue_stats`."""
        return self._core.queue_stats()

    def stats(self) -> ConversationStats:
        """See :meth:`ConversationMemory.stats`."""
        result: ConversationStats = self._run(self._core.stats())
        return result
