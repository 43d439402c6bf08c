"""Conversations in PostgreSQL: tables ``conversations`` and ``conversation_messages`` in the
store's schema (psycopg 3).

The store keeps one synchronous connection, used by one worker thread at a time, like the
SQLite driver: the conversation store is a log appended turn by turn, not a hot concurrent
path, and one code path for both databases (:class:`SQLConversationStore`) is worth more here
than a pool. The connection is opened on first use (and again after a failure); psycopg errors
are translated into the memvault tree with the password scrubbed.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
)

try:
    import psycopg
    from psycopg import sql
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = 'PostgreSQL conversations need psycopg 3: pip install "memvault[postgres]"'
    raise MemoryConfigError(_msg) from exc

from memvault._sidetables import advisory_key, migrate_postgres
from memvault.backends.postgres._dsn import check_schema, parse_dsn, scrub
from memvault.conversation.store import CONVERSATION_TABLES, Q, SQLConversationStore

__all__ = ["PostgresConversationStore"]

T = TypeVar("T")

_CREATE_LOCK = advisory_key(b"memvault.conversations")


class _PgQ:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self.rowcount = 0

    def __call__(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        # The SQL is memvault's own text with quoted identifiers, never user input.
        cur = self._conn.execute(sql.encode(), tuple(params))
        self.rowcount = cur.rowcount
        return list(cur.fetchall()) if cur.description is not None else []


class PostgresConversationStore(SQLConversationStore):
    """Conversations in a PostgreSQL schema (``postgresql://...``, optionally ``?schema=``)."""

    _agent_lock_sql = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        connect_timeout: float = 10.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self._dsn = parse_dsn(url)
        if schema is not None and self._dsn.schema is not None and schema != self._dsn.schema:
            msg = f"schema {schema!r} conflicts with schema={self._dsn.schema!r} in the URL"
            raise MemoryConfigError(msg)
        self._schema = check_schema(self._dsn.schema or schema or "public")
        quoted = sql.Identifier(self._schema).as_string(None)
        self._names = {
            "c": f"{quoted}.conversations",
            "m": f"{quoted}.conversation_messages",
            "ci": "conversations_agent_seq",
            "mi": "conversation_messages_unembedded",
        }
        self._timeout = connect_timeout
        if self._dsn.schema is None and self._schema != "public":
            sep = "&" if "?" in self._dsn.location else "?"
            self._location = f"{self._dsn.location}{sep}schema={self._schema}"
        else:
            self._location = self._dsn.location
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def location(self) -> str:
        """The URL without password (with ``schema=`` unless it is ``public``)."""
        return self._location

    def _sql(self, text: str) -> str:
        # Only placeholders use "?" in the shared SQL (no literal question marks).
        return text.format(**self._names).replace("?", "%s")

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(
            self._dsn.conninfo, autocommit=True, connect_timeout=max(2, int(self._timeout))
        )
        try:
            migrate_postgres(
                conn,
                schema=self._schema,
                lock=_CREATE_LOCK,
                migrations=CONVERSATION_TABLES.postgres,
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def _call(self, fn: Callable[[Q], T], write: bool) -> T:
        with self._lock:
            if self._closed:
                msg = f"conversation store {self._location} is closed"
                raise MemoryConnectionError(msg)
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                conn = self._conn
                if not write:
                    return fn(_PgQ(conn))
                with conn.transaction():
                    return fn(_PgQ(conn))
            except MemoryError:
                raise
            except (psycopg.Error, OSError) as exc:
                text = scrub(str(exc), self._dsn.secrets)
                if isinstance(exc, psycopg.OperationalError | OSError):
                    if self._conn is not None:
                        self._conn.close()
                    self._conn = None
                    msg = f"PostgreSQL conversation store {self._location} unreachable: {text}"
                    raise MemoryConnectionError(msg) from exc
                verb = "write to" if write else "read from"
                msg = f"PostgreSQL conversation {verb} {self._location} failed: {text}"
                raise (MemoryStoreError if write else MemoryRetrievalError)(msg) from exc

    async def _run(self, fn: Callable[[Q], T], *, write: bool) -> T:
        return await asyncio.to_thread(self._call, fn, write)

    async def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""

        def shut() -> None:
            with self._lock:
                self._closed = True
                conn, self._conn = self._conn, None
                if conn is not None:
                    conn.close()

        await asyncio.to_thread(shut)
