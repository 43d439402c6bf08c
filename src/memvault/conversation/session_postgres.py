"""Sessions in PostgreSQL, in a ``sessions`` table of the store's schema (psycopg 3, async).

The table lives next to the memory tables of the same schema (``public`` unless the URL or the
``schema`` argument names another) but is created and used only here. A small connection pool
of its own is opened on first use. psycopg errors never escape: they are translated into the
memvault error tree (:class:`memvault._sidetables.PostgresSide`), with the password scrubbed.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memvault._sidetables import PostgresSide
from memvault.errors import MemoryConfigError

try:
    import psycopg
    from psycopg import sql
    from psycopg.rows import TupleRow
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool  # noqa: F401  (the pool of PostgresSide)
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = 'PostgreSQL sessions need psycopg 3 and psycopg-pool: pip install "memvault[postgres]"'
    raise MemoryConfigError(_msg) from exc

from memvault.backends.postgres._dsn import check_schema, parse_dsn
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
)

__all__ = ["PostgresSessionStore"]

Conn = psycopg.AsyncConnection[TupleRow]

_COLUMNS = "session_id, agent_id, created_at, updated_at, message_count, messages"


class PostgresSessionStore:
    """Sessions in a PostgreSQL database (``postgresql://...``, optionally ``?schema=name``)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        pool_max: int = 4,
        connect_timeout: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        self._dsn = parse_dsn(url)
        if schema is not None and self._dsn.schema is not None and schema != self._dsn.schema:
            msg = f"schema {schema!r} conflicts with schema={self._dsn.schema!r} in the URL"
            raise MemoryConfigError(msg)
        self._schema = check_schema(self._dsn.schema or schema or "public")
        self._table = sql.Identifier(self._schema, "sessions")
        self._clock = clock or (lambda: datetime.now(UTC))
        if self._dsn.schema is None and self._schema != "public":
            sep = "&" if "?" in self._dsn.location else "?"
            self._location = f"{self._dsn.location}{sep}schema={self._schema}"
        else:
            self._location = self._dsn.location
        self._db = PostgresSide(
            self._dsn,
            schema=self._schema,
            location=self._location,
            noun="session",
            lock_name=b"memvault.sessions",
            migrations=SESSION_TABLES,
            pool_name=f"memvault-sessions:{self._schema}",
            pool_max=max(1, pool_max),
            connect_timeout=connect_timeout,
        )

    @property
    def location(self) -> str:
        """The URL without password (with ``schema=`` unless it is ``public``)."""
        return self._location

    # -- plumbing -------------------------------------------------------------------------------

    def _record(self, row: Sequence[Any]) -> SessionRecord:
        session_id, agent_id, created, updated, count, messages = row
        items = messages_from_json(messages, f"{agent_id}/{session_id} in {self.location}")
        return SessionRecord(
            session_id=session_id,
            agent_id=agent_id,
            created_at=created,
            updated_at=updated,
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
        body = Jsonb([m.model_dump(mode="json", exclude_none=True) for m in items])

        async def run(conn: Conn) -> SessionRecord:
            now = self._clock()
            # The agent's rows are locked so that two concurrent saves cannot take the same seq.
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                ["memvault.sessions:" + agent],
            )
            cur = await conn.execute(
                sql.SQL(
                    "INSERT INTO {t} (agent_id, session_id, seq, created_at, updated_at,"
                    " message_count, messages)"
                    " SELECT %s, %s, COALESCE(MAX(seq), 0) + 1, %s, %s, %s, %s"
                    " FROM {t} WHERE agent_id = %s"
                    " ON CONFLICT (agent_id, session_id) DO UPDATE SET seq = excluded.seq,"
                    " updated_at = excluded.updated_at, message_count = excluded.message_count,"
                    " messages = excluded.messages"
                    " RETURNING created_at"
                ).format(t=self._table),
                [agent, sid, now, now, len(items), body, agent],
            )
            row = await cur.fetchone()
            assert row is not None  # INSERT ... RETURNING always returns the row
            return SessionRecord(
                session_id=sid,
                agent_id=agent,
                created_at=row[0],
                updated_at=now,
                messages=items,
                message_count=len(items),
            )

        return await self._db.write("save", run)

    async def latest(self, agent_id: str) -> SessionRecord | None:
        """The agent's most recently saved session, or ``None`` if it has none."""
        rows = await self.list(agent_id, limit=1)
        return rows[0] if rows else None

    async def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        """One session of the agent, or ``None`` (also when it belongs to another agent)."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)

        async def run(conn: Conn) -> SessionRecord | None:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT " + _COLUMNS + " FROM {} WHERE agent_id = %s AND session_id = %s"
                ).format(self._table),
                [agent, sid],
            )
            row = await cur.fetchone()
            return None if row is None else self._record(row)

        return await self._db.read("get", run)

    async def list(
        self, agent_id: str, *, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first (at most ``limit``)."""
        agent = check_agent_id(agent_id)
        check_limit(limit)

        async def run(conn: Conn) -> builtins.list[SessionRecord]:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT " + _COLUMNS + " FROM {} WHERE agent_id = %s ORDER BY seq DESC LIMIT %s"
                ).format(self._table),
                [agent, limit],  # LIMIT NULL: no limit
            )
            return [self._record(r) for r in await cur.fetchall()]

        return await self._db.read("list", run)

    async def delete(self, agent_id: str, session_id: str) -> bool:
        """Delete one session; ``False`` if the agent has no such session."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)

        async def run(conn: Conn) -> bool:
            cur = await conn.execute(
                sql.SQL("DELETE FROM {} WHERE agent_id = %s AND session_id = %s").format(
                    self._table
                ),
                [agent, sid],
            )
            return cur.rowcount > 0

        return await self._db.write("delete", run)

    async def clear(self, agent_id: str) -> int:
        """Delete every session of the agent; returns how many were deleted."""
        agent = check_agent_id(agent_id)

        async def run(conn: Conn) -> int:
            cur = await conn.execute(
                sql.SQL("DELETE FROM {} WHERE agent_id = %s").format(self._table), [agent]
            )
            return cur.rowcount

        return await self._db.write("clear", run)

    async def prune(self, agent_id: str, keep: int) -> int:
        """Delete all but the agent's ``keep`` most recent sessions; returns how many went."""
        agent = check_agent_id(agent_id)
        check_keep(keep)

        async def run(conn: Conn) -> int:
            cur = await conn.execute(
                sql.SQL(
                    "DELETE FROM {t} WHERE agent_id = %s AND session_id NOT IN ("
                    " SELECT session_id FROM {t} WHERE agent_id = %s ORDER BY seq DESC LIMIT %s)"
                ).format(t=self._table),
                [agent, agent, keep],
            )
            return cur.rowcount

        return await self._db.write("prune", run)

    async def close(self) -> None:
        """Close the pool; later calls raise :class:`MemoryConnectionError`."""
        await self._db.close()
