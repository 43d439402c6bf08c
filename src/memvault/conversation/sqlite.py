"""Conversations in the SQLite file the memories use (tables ``conversations`` and
``conversation_messages``), on a connection of their own (WAL, ``busy_timeout``).

As for the session store, a new file gets the memory store's schema first and a file of
another application is refused (:func:`~memvault.backends.sqlite._connect.prepare_side_table`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from memvault._sidetables import SQLiteSide, to_us
from memvault.backends.sqlite._connect import prepare_side_table
from memvault.conversation.store import Q, SQLiteDialect, sqlite_run

__all__ = ["SQLiteConversationStore"]

T = TypeVar("T")

_MESSAGE_COLUMNS = frozenset(
    {
        "message_id",
        "conversation_id",
        "position",
        "role",
        "content",
        "kind",
        "agent_visible",
        "user_visible",
        "focus_pinned",
        "compacted_at",
        "summary_id",
        "superseded_at",
        "embedding",
        "embedded_at",
    }
)


class SQLiteConversationStore(SQLiteDialect):
    """Conversations in a SQLite file (created with its directories on first use)."""

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 10_000,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self._path = Path(path).expanduser()
        self._db = SQLiteSide(
            self._path,
            what="conversation store",
            busy_timeout_ms=busy_timeout_ms,
            prepare=self._prepare,
        )

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        prepare_side_table(
            conn,
            self._path,
            what="conversation store",
            table="conversation_messages",
            ddl=[self._sql(s) for s in self._ddl()],
            columns=_MESSAGE_COLUMNS,
            now_us=to_us(self._clock()),
        )

    async def _run(self, fn: Callable[[Q], T], *, write: bool) -> T:
        return await self._db.run(lambda conn: sqlite_run(conn, fn, write=write), write=write)

    async def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        await self._db.aclose()
