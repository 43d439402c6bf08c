"""Open the conversation store for a memvault storage URL (the one place that knows every
driver, so the drivers and :mod:`memvault.conversation.store` never import each other back)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from memvault.conversation.store import InMemoryConversationStore, SQLConversationStore
from memvault.errors import MemoryConfigError

__all__ = ["open_conversation_store"]


def open_conversation_store(
    url: str, *, schema: str | None = None, clock: Callable[[], datetime] | None = None
) -> SQLConversationStore:
    """The conversation store for a memvault storage URL (the one the memories use).

    A path or ``sqlite:///x.db``: tables ``conversations`` and ``conversation_messages`` in that
    file; ``postgresql://...``: the same tables in the schema (extra ``memvault[postgres]``);
    ``memory://``: in process. Nothing is opened until the first call.

    Raises:
        MemoryConfigError: any other URL.
    """
    from memvault.backends.factory import parse_url

    kind, target = parse_url(url)
    if kind == "memory":
        return InMemoryConversationStore(clock=clock)
    if kind == "sqlite":
        from memvault.conversation.sqlite import SQLiteConversationStore

        return SQLiteConversationStore(Path(target).expanduser(), clock=clock)
    if kind == "postgresql":
        from memvault.conversation.postgres import PostgresConversationStore

        return PostgresConversationStore(target, schema=schema, clock=clock)
    msg = f"conversations cannot be stored in {url!r}: use a file path, sqlite://, postgresql:// or memory://"
    raise MemoryConfigError(msg)
