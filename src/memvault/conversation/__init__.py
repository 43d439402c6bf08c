"""Seed 004's conversation memory: the message log, compaction, the embedding queue.

* :mod:`~memvault.conversation.store`: every turn appended as a message (SQLite file,
  PostgreSQL schema or in process, :func:`open_conversation_store`), read through views that
  honour :class:`MessageMetadata`; compaction marks, never deletes.
* :class:`ConversationSessionStore`: InitRunner's sessions (save, resume, trim, prune) on it.
* :mod:`~memvault.conversation.compaction`: context pressure, deferred tool-pair summaries,
  anchored summaries and the compaction probe.
* :mod:`~memvault.conversation.queue`: batched background embedding and start-up backfill.

PostgreSQL support is imported on first use (psycopg stays an optional extra).
"""

from __future__ import annotations

from memvault.conversation.config import (
    CompactionConfig,
    ConversationConfig,
    EmbeddingQueueConfig,
    ResponseCacheConfig,
)
from memvault.conversation.factory import open_conversation_store
from memvault.conversation.models import (
    ConversationInfo,
    ConversationStats,
    MessageMetadata,
    MessageView,
    StoredMessage,
    estimate_tokens,
)
from memvault.conversation.sessions import ConversationSessionStore
from memvault.conversation.store import (
    SUMMARY_NAME,
    InMemoryConversationStore,
    MessageHit,
    SQLConversationStore,
)

__all__ = [
    "SUMMARY_NAME",
    "CompactionConfig",
    "ConversationConfig",
    "ConversationInfo",
    "ConversationSessionStore",
    "ConversationStats",
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
