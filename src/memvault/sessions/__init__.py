"""Conversation sessions: save an agent's message history after every turn, resume, prune.

``SessionManager`` is the entry point; it works over any :class:`SessionStore`
(:func:`open_session_store` opens the one for a memvault storage URL: SQLite file, PostgreSQL
or ``memory://``). ``PostgresSessionStore`` is imported on first use, so psycopg stays an
optional extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.conversation.session_factory import open_session_store
from memvault.conversation.session_manager import SessionManager, conversation_start
from memvault.conversation.session_models import SessionConfig, SessionRecord
from memvault.conversation.session_sqlite import SQLiteSessionStore
from memvault.conversation.session_store import (
    InMemorySessionStore,
    MessageLike,
    SessionStore,
    check_session_id,
)

if TYPE_CHECKING:
    from memvault.conversation.session_postgres import PostgresSessionStore

__all__ = [
    "InMemorySessionStore",
    "MessageLike",
    "PostgresSessionStore",
    "SQLiteSessionStore",
    "SessionConfig",
    "SessionManager",
    "SessionRecord",
    "SessionStore",
    "check_session_id",
    "conversation_start",
    "open_session_store",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresSessionStore":
        from memvault.conversation.session_postgres import PostgresSessionStore

        return PostgresSessionStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
