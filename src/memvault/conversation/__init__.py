"""Seed 004's conversation memory: the message log, compaction, the embedding queue.

* :mod:`~memvault.conversation.store`: every turn appended as a message (SQLite file,
  PostgreSQL schema or in process, :func:`open_conversation_store`), read through views that
  honour :class:`MessageMetadata`; compaction marks, never deletes.
* :class:`ConversationSessionStore`: InitRunner's sessions (save, resume, trim, prune) on it.
* :mod:`~memvault.conversation.compaction`: context pressure, deferred tool-pair summaries,
  anchored summaries and the compaction probe.
* :mod:`~memvault.conversation.queue`: batched background embedding and start-up backfill.

The stores, compaction and queue are imported on first use: :mod:`memvault.config` imports
the pure settings of this package (``memvault.config.conversation``), so importing the package
must not pull in storage (which imports the config back). PostgreSQL support is imported on
first use too (psycopg stays an optional extra).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memvault.config.conversation import (
    CompactionConfig,
    ConversationConfig,
    EmbeddingQueueConfig,
    ResponseCacheConfig,
)
from memvault.conversation.models import (
    ConversationInfo,
    ConversationPage,
    ConversationStats,
    MessageMetadata,
    MessageView,
    StoredMessage,
    estimate_tokens,
)

if TYPE_CHECKING:
    from memvault.conversation.compaction import Compactor
    from memvault.conversation.factory import open_conversation_store
    from memvault.conversation.memory import ContextWindow, ConversationMemory, ConversationStatus
    from memvault.conversation.queue import EmbeddingQueue
    from memvault.conversation.sessions import ConversationSessionStore
    from memvault.conversation.store import (
        SUMMARY_NAME,
        InMemoryConversationStore,
        MessageHit,
        SQLConversationStore,
    )

_LAZY = {
    "Compactor": "memvault.conversation.compaction",
    "ContextWindow": "memvault.conversation.memory",
    "ConversationMemory": "memvault.conversation.memory",
    "ConversationStatus": "memvault.conversation.memory",
    "ConversationSessionStore": "memvault.conversation.sessions",
    "EmbeddingQueue": "memvault.conversation.queue",
    "InMemoryConversationStore": "memvault.conversation.store",
    "MessageHit": "memvault.conversation.store",
    "SQLConversationStore": "memvault.conversation.store",
    "SUMMARY_NAME": "memvault.conversation.store",
    "open_conversation_store": "memvault.conversation.factory",
}

__all__ = [
    "SUMMARY_NAME",
    "CompactionConfig",
    "Compactor",
    "ContextWindow",
    "ConversationConfig",
    "ConversationInfo",
    "ConversationMemory",
    "ConversationPage",
    "ConversationSessionStore",
    "ConversationStats",
    "ConversationStatus",
    "EmbeddingQueue",
    "EmbeddingQueueConfig",
    "InMemoryConversationStore",
    "MessageHit",
    "MessageMetadata",
    "MessageView",
    "ResponseCacheConfig",
    "SQLConversationStore",
    "StoredMessage",
    "estimate_tokens",
    "open_conversation_store",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)
