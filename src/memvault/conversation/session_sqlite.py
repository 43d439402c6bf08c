"""Sessions in the SQLite file the memories use, in a ``sessions`` table of their own.

The store has its own connection (WAL, ``busy_timeout``), so it works next to an open memory
backend on the same file, or in another process. Calls run in a worker thread
(``asyncio.to_thread``) one at a time under a lock: a sqlite3 connection must not be used by two
threads at once.

A new file gets the memory store's schema first: :class:`memvault.backends.sqlite.SQLiteBackend`
refuses a file with tables but no ``store_meta`` (another application's database), and a file
that only held sessions would otherwise look like one. For the same reason this store refuses
such foreign files too.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault._sidetables import SQLiteSide, from_us, to_us
from memvault.backends.sqlite._connect import immediate
from memvault.conversation.session_models import SessionRecord
from memvault.conversation.session_store import (
    SESSION_TABLES,
    Clock,
    MessageLike,
    check_agent_id,
    check_keep,
    check_limit,
    check_messages,
    check_session_id,
    messages_from_json,
    messages_to_json,
)

__all__ = ["SQLiteSessionStore"]

_COLUMNS = "session_id, agent_id, created_at, updated_at, message_count, messages"


class SQLiteSessionStore:
    """Sessions in a SQLite file (normally the memory store's own file).

    The file and its parent directories are created on first use. Opening is retried on the
    next call after a failure, so a store that was unreachable for a while recovers.
    """

    def __init__(
        self, path: str | Path, *, busy_timeout_ms: int = 10_000, clock: Clock | None = None
    ) -> None:
        self._path = Path(path).expanduser()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._db = SQLiteSide(
            self._path,
            what="session store",
            busy_timeout_ms=busy_timeout_ms,
            migrations=SESSION_TABLES,
            clock=self._clock,
        )

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    # -- plumbing -------------------------------------------------------------------------------

    # IMMEDIATE: the seq read and the write that uses it must not interleave with another
    # writer's.
    _transaction = staticmethod(immediate)

    def _record(self, row: Sequence[Any]) -> SessionRecord:
        session_id, agent_id, created, updated, count, messages = row
        items = messages_from_json(messages, f"{agent_id}/{session_id} in {self._path}")
        return SessionRecord(
            session_id=session_id,
            agent_id=agent_id,
            created_at=from_us(created),
            updated_at=from_us(updated),
            messages=items,
            message_count=count,
        )

    # -- the SessionStore protocol --------------------------------------------------------------

    async def save(
        self, agent_id: str, session_id: str, messages: Sequence[MessageLike]
    ) -> SessionRecord:
        """Create or replace a session's message history; it becomes the agent's latest."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        items = check_messages(messages)
        body = messages_to_json(items)

        def run(conn: sqlite3.Connection) -> SessionRecord:
            now = to_us(self._clock())
            with self._transaction(conn):
                (seq,) = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM sessions WHERE agent_id = ?", (agent,)
                ).fetchone()
                conn.execute(
                    "INSERT INTO sessions (agent_id, session_id, seq, created_at, updated_at,"
                    " message_count, messages) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (agent_id, session_id) DO UPDATE SET seq = excluded.seq,"
                    " updated_at = excluded.updated_at, message_count = excluded.message_count,"
                    " messages = excluded.messages",
                    (agent, sid, seq, now, now, len(items), body),
                )
                (created,) = conn.execute(
                    "SELECT created_at FROM sessions WHERE agent_id = ? AND session_id = ?",
                    (agent, sid),
                ).fetchone()
            return SessionRecord(
                session_id=sid,
                agent_id=agent,
                created_at=from_us(created),
                updated_at=from_us(now),
                messages=items,
                message_count=len(items),
            )

        return await self._db.run(run, write=True)

    async def latest(self, agent_id: str) -> SessionRecord | None:
        """The agent's most recently saved session, or ``None`` if it has none."""
        rows = await self.list(agent_id, limit=1)
        return rows[0] if rows else None

    async def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        """One session of the agent, or ``None`` (also when it belongs to another agent)."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)

        def run(conn: sqlite3.Connection) -> SessionRecord | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE agent_id = ? AND session_id = ?",
                (agent, sid),
            ).fetchone()
            return None if row is None else self._record(row)

        return await self._db.run(run, write=False)

    async def list(
        self, agent_id: str, *, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first (at most ``limit``)."""
        agent = check_agent_id(agent_id)
        check_limit(limit)

        def run(conn: sqlite3.Connection) -> builtins.list[SessionRecord]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE agent_id = ? ORDER BY seq DESC LIMIT ?",
                (agent, -1 if limit is None else limit),  # LIMIT -1: no limit in SQLite
            ).fetchall()
            return [self._record(r) for r in rows]

        return await self._db.run(run, write=False)

    async def delete(self, agent_id: str, session_id: str) -> bool:
        """Delete one session; ``False`` if the agent has no such session."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)

        def run(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "DELETE FROM sessions WHERE agent_id = ? AND session_id = ?", (agent, sid)
            )
            return cur.rowcount > 0

        return await self._db.run(run, write=True)

    async def clear(self, agent_id: str) -> int:
        """Delete every session of the agent; returns how many were deleted."""
        agent = check_agent_id(agent_id)

        def run(conn: sqlite3.Connection) -> int:
            return conn.execute("DELETE FROM sessions WHERE agent_id = ?", (agent,)).rowcount

        return await self._db.run(run, write=True)

    async def prune(self, agent_id: str, keep: int) -> int:
        """Delete all but the agent's ``keep`` most recent sessions; returns how many went."""
        agent = check_agent_id(agent_id)
        check_keep(keep)

        def run(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "DELETE FROM sessions WHERE agent_id = ? AND session_id NOT IN ("
                " SELECT session_id FROM sessions WHERE agent_id = ? ORDER BY seq DESC LIMIT ?)",
                (agent, agent, keep),
            )
            return cur.rowcount

        return await self._db.run(run, write=True)

    async def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        await self._db.aclose()
