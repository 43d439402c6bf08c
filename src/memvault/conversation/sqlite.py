"""Conversations in the SQLite file the memories use (tables ``conversations`` and
``conversation_messages``), on a connection of their own (WAL, ``busy_timeout``).

As for the session store, a new file gets the memory store's schema first and a file of
another application is refused (:class:`~memvault._sidetables.SQLiteSide`); the tables are
made by the named migrations of :data:`~memvault.conversation.store.CONVERSATION_TABLES`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from memvault._sidetables import SQLiteSide
from memvault.conversation.store import CONVERSATION_TABLES, Q, SQLiteDialect, sqlite_run

__all__ = ["SQLiteConversationStore"]

T = TypeVar("T")


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
            migrations=CONVERSATION_TABLES,
            clock=self._clock,
        )

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    async def _run(self, fn: Callable[[Q], T], *, write: bool) -> T:
        return await self._db.run(lambda conn: sqlite_run(conn, fn, write=write), write=write)

    async def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        await self._db.aclose()
