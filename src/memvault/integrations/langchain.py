"""LangChain on memvault (``langchain-core`` only): a retriever and a chat message history.

Install with ``pip install 'memvault[langchain]'``.

* :class:`MemvaultRetriever` is a ``BaseRetriever`` over :meth:`Memory.search`: one
  ``Document`` per memory, best first, its id, type, time, score, tags and metadata in
  ``Document.metadata``. Give it a sync :class:`~memvault.Memory` (``invoke``; ``ainvoke`` runs
  it in a worker thread) or an :class:`~memvault.AsyncMemory` (``ainvoke`` only).
* :class:`MemvaultChatMessageHistory` is a ``BaseChatMessageHistory`` over one memvault session
  (``agent_id`` + ``session_id``): ``RunnableWithMessageHistory`` and friends keep their
  conversations in memvault's session store, next to the memories. Plain text messages are
  ordinary chat messages there; the rest (AI messages with tool calls, tool messages) are kept
  whole as LangChain's own JSON, so the history reads back exactly as written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from memvault.errors import MemoryConfigError
from memvault.integrations._common import (
    SessionLog,
    bridge,
    decode_foreign,
    encode_foreign,
    require,
    session_store,
)
from memvault.memory import AsyncMemory, Memory
from memvault.models import ChatMessage, MemoryEntry
from memvault.sessions import SessionStore

require("langchain_core", "langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict, Field  # noqa: E402

__all__ = ["MemvaultChatMessageHistory", "MemvaultRetriever"]

_KIND = "langchain"


def _document(entry: MemoryEntry) -> Document:
    metadata: dict[str, Any] = dict(entry.metadata.extra)
    metadata.update(
        id=entry.id,
        category=entry.category.value,
        created_at=entry.created_at.isoformat(),
        relevance_score=entry.relevance_score,
        tags=list(entry.metadata.tags),
        label=entry.metadata.label,
    )
    return Document(page_content=entry.content, metadata=metadata, id=entry.id)


class MemvaultRetriever(BaseRetriever):
    """A LangChain retriever over one agent's memvault memories.

    Attributes:
        memory: a :class:`~memvault.Memory` or :class:`~memvault.AsyncMemory`.
        agent_id: whose memories are searched.
        k: how many documents at most.
        search_kwargs: more arguments of :meth:`Memory.search` (``categories``, ``filters``,
            ``min_relevance``, ``include_shared`` ...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory | AsyncMemory
    agent_id: str
    k: int = Field(default=4, ge=1, le=1000)
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if not isinstance(self.memory, Memory):
            msg = "this retriever holds an AsyncMemory: call ainvoke, or give it a Memory"
            raise MemoryConfigError(msg)
        hits = self.memory.search(query, agent_id=self.agent_id, limit=self.k, **self.search_kwargs)
        return [_document(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        memory = self.memory
        if isinstance(memory, AsyncMemory):
            hits = await memory.search(
                query, agent_id=self.agent_id, limit=self.k, **self.search_kwargs
            )
            return [_document(h) for h in hits]
        # The sync memory runs on its own event loop; a worker thread waits for it.
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync()
        )


def _to_chat(message: BaseMessage) -> ChatMessage:
    content = message.content
    if isinstance(content, str):
        plain = not message.additional_kwargs and not getattr(message, "tool_calls", None)
        if isinstance(message, HumanMessage) and plain:
            return ChatMessage(role="user", content=content)
        if isinstance(message, AIMessage) and plain:
            return ChatMessage(role="assistant", content=content)
        if isinstance(message, SystemMessage) and plain:
            return ChatMessage(role="system", content=content)
    return encode_foreign(_KIND, message_to_dict(message))


def _from_chat(message: ChatMessage) -> BaseMessage:
    foreign = decode_foreign(_KIND, message)
    if foreign is not None:
        return messages_from_dict([foreign])[0]
    if message.role == "user":
        return HumanMessage(content=message.content)
    if message.role == "system":
        return SystemMessage(content=message.content)
    # Assistant turns, and tool results another client saved (no call id to pair with).
    return AIMessage(content=message.content)


class MemvaultChatMessageHistory(BaseChatMessageHistory):
    """LangChain chat history kept in a memvault session (see the module docstring).

    Args:
        session_id: the session (1-200 printable characters, no ``/``).
        agent_id: the memvault agent it belongs to.
        store: a :class:`~memvault.sessions.SessionStore` or a memvault storage URL.

    Raises:
        MemoryValidationError: a malformed ``session_id`` or ``agent_id``.
    """

    def __init__(self, session_id: str, *, agent_id: str, store: SessionStore | str) -> None:
        self._log = SessionLog(session_store(store), agent_id, session_id)

    @property
    def session_id(self) -> str:
        """The memvault session id."""
        return self._log.session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The conversation, oldest first."""
        return [_from_chat(m) for m in bridge().run(self._log.read())]

    async def aget_messages(self) -> list[BaseMessage]:
        """The conversation, oldest first."""
        return [_from_chat(m) for m in await bridge().arun(self._log.read())]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` (saved before this returns)."""
        new = [_to_chat(m) for m in messages]
        if new:
            bridge().run(self._log.edit(lambda stored: stored.extend(new)))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` (saved before this returns)."""
        new = [_to_chat(m) for m in messages]
        if new:
            await bridge().arun(self._log.edit(lambda stored: stored.extend(new)))

    def clear(self) -> None:
        """Delete the session."""
        bridge().run(self._log.edit(lambda stored: stored.clear()))

    async def aclear(self) -> None:
        """Delete the session."""
        await bridge().arun(self._log.edit(lambda stored: stored.clear()))

    def close(self) -> None:
        """Close the session store (its connections live on the adapters' private loop)."""
        bridge().run(self._log.store.close())
