"""Open the session store for a memvault storage URL.

The factory is the one place that knows every driver: it sits above
:mod:`memvault.conversation.session_store` (protocol, validators, in-process store) and the drivers
that build on it (:mod:`memvault.conversation.session_sqlite`,
:mod:`memvault.conversation.session_postgres`), so none of them imports it back.
``PostgresSessionStore`` is imported on first use, so psycopg stays an optional extra.
"""

from __future__ import annotations

from pathlib import Path

from memvault.conversation.session_store import InMemorySessionStore, SessionStore
from memvault.errors import MemoryConfigError

__all__ = ["open_session_store"]


def open_session_store(
    url: str, *, schema: str | None = None, storage: str = "snapshot", prune: str = "delete"
) -> SessionStore:
    """The session store for a memvault storage URL (the same URL the memories use).

    ``storage="messages"`` keeps the sessions in the conversation store instead (every turn
    appended as a message, :class:`memvault.conversation.ConversationSessionStore`; ``prune``
    is then ``"delete"`` or ``"archive"``); the default ``"snapshot"`` is the session table
    rewritten at every save.

    A plain path or ``sqlite:///path.db`` gives a :class:`SQLiteSessionStore` on that file,
    ``postgresql://...`` a :class:`PostgresSessionStore` (extra ``memvault[postgres]``; the
    ``schema`` argument or a ``schema=`` URL parameter names the schema), ``memory://`` an
    :class:`InMemorySessionStore`. Nothing is opened until the first call.

    Raises:
        MemoryConfigError: an unsupported URL (``composite://`` and ``http(s)://`` included:
            name the child store the sessions should live in instead).
    """
    from memvault.backends.factory import parse_url, side_store_url

    if storage not in ("snapshot", "messages"):
        msg = f"session storage must be 'snapshot' or 'messages', got {storage!r}"
        raise MemoryConfigError(msg)
    kind, target = parse_url(side_store_url(url))
    if storage == "messages" and kind in ("memory", "sqlite", "postgresql"):
        from memvault.conversation.factory import open_conversation_store
        from memvault.conversation.sessions import ConversationSessionStore

        return ConversationSessionStore(open_conversation_store(url, schema=schema), prune=prune)
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "sqlite":
        from memvault.conversation.session_sqlite import SQLiteSessionStore

        return SQLiteSessionStore(Path(target).expanduser())
    if kind == "postgresql":
        from memvault.conversation.session_postgres import PostgresSessionStore

        return PostgresSessionStore(target, schema=schema)
    msg = f"sessions cannot be stored in {url!r}: use a file path, sqlite://, postgresql:// or memory://"
    raise MemoryConfigError(msg)
