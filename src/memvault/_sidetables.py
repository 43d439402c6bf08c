"""Plumbing of the small tables memvault keeps beside the memories (sessions, learning, keys).

Each such store owns its connection(s) and its table; what they share is here:

* :class:`SQLiteSide`: one sqlite3 connection (WAL, ``busy_timeout``, the table prepared by
  :func:`~memvault.backends.sqlite._connect.open_sqlite`) opened on first use and again after a
  failed open, used by one thread at a time, sqlite3 errors translated into the memvault tree;
  :func:`to_us` / :func:`from_us` for its INTEGER microsecond timestamps. Also used by the
  SQLite API key store (synchronously, :meth:`SQLiteSide.call`).
* :class:`PostgresSide`: a small psycopg ``AsyncConnectionPool`` opened on first use after the
  table is created (``CREATE ... IF NOT EXISTS`` under an advisory lock), psycopg errors
  translated with the password scrubbed. psycopg is imported only when it is used, so the SQLite
  stores do not need the ``postgres`` extra.

The stores keep their own table definitions, SQL and row mapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from memvault.backends.sqlite._connect import open_sqlite, translate_error
from memvault.errors import (
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

    from memvault.backends.postgres._dsn import ParsedDsn

    Conn = psycopg.AsyncConnection[TupleRow]

__all__ = ["PostgresSide", "SQLiteSide", "from_us", "to_us"]

T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_us(value: datetime) -> int:
    """Microseconds since the epoch (UTC) of an aware datetime."""
    return (value - _EPOCH) // timedelta(microseconds=1)


def from_us(value: int) -> datetime:
    """The aware UTC datetime of a microsecond timestamp."""
    return _EPOCH + timedelta(microseconds=value)


class SQLiteSide:
    """The connection of a side table in a SQLite file.

    ``what`` names the store in messages (``"session store"``); ``prepare`` runs on every new
    connection (normally :func:`~memvault.backends.sqlite._connect.prepare_side_table`).
    """

    def __init__(
        self,
        path: Path,
        *,
        what: str,
        busy_timeout_ms: int,
        prepare: Callable[[sqlite3.Connection], None],
    ) -> None:
        self._path = path
        self._what = what
        self._busy_timeout_ms = busy_timeout_ms
        self._prepare = prepare
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False

    def call(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """``fn(conn)`` under the lock; sqlite3 errors become store (write) or retrieval errors."""
        with self._lock:
            if self._closed:
                msg = f"{self._what} {self._path} is closed"
                raise MemoryConnectionError(msg)
            if self._conn is None:
                self._conn = open_sqlite(
                    self._path,
                    what=self._what,
                    busy_timeout_ms=self._busy_timeout_ms,
                    prepare=self._prepare,
                )
            try:
                return fn(self._conn)
            except MemoryError:
                raise
            except sqlite3.Error as exc:
                raise translate_error(exc, write=write, what=self._what, path=self._path) from exc

    async def run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """:meth:`call` in a worker thread."""
        return await asyncio.to_thread(self.call, fn, write=write)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    async def aclose(self) -> None:
        """:meth:`close` in a worker thread."""
        await asyncio.to_thread(self.close)


class PostgresSide:
    """The connection pool of a side table in a PostgreSQL schema.

    ``noun`` names the store in messages (``"session"``: "PostgreSQL session store ...
    unreachable", "PostgreSQL session save in ... failed", "session store ... is closed");
    ``lock_name`` seeds the advisory lock that serialises table creation; ``ddl`` creates the
    table and its indexes (run after the schema is made sure of, in one transaction).
    """

    def __init__(
        self,
        dsn: ParsedDsn,
        *,
        schema: str,
        location: str,
        noun: str,
        lock_name: bytes,
        ddl: Sequence[sql.Composed],
        pool_name: str,
        pool_max: int,
        connect_timeout: float,
    ) -> None:
        self._dsn = dsn
        self._schema = schema
        self._location = location
        self._noun = noun
        self._create_lock = int.from_bytes(
            hashlib.sha256(lock_name).digest()[:8], "big", signed=True
        )
        self._ddl = tuple(ddl)
        self._pool_name = pool_name
        self._pool_max = pool_max
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False

    @contextlib.asynccontextmanager
    async def _guard(self, op: str, *, write: bool) -> AsyncIterator[None]:
        import psycopg

        from memvault.backends.postgres._dsn import scrub

        try:
            yield
        except MemoryError:
            raise
        except (psycopg.Error, OSError) as exc:
            text = scrub(str(exc), self._dsn.secrets)
            if isinstance(exc, psycopg.OperationalError | OSError):
                msg = f"PostgreSQL {self._noun} store {self._location} unreachable: {text}"
                raise MemoryConnectionError(msg) from exc
            msg = f"PostgreSQL {self._noun} {op} in {self._location} failed: {text}"
            if write:
                raise MemoryStoreError(msg) from exc
            raise MemoryRetrievalError(msg) from exc

    async def _ensure_pool(self) -> AsyncConnectionPool[Conn]:
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        async with self._open_lock:
            if self._closed:
                msg = f"{self._noun} store {self._location} is closed"
                raise MemoryConnectionError(msg)
            if self._pool is not None:
                return self._pool
            async with self._guard("connect", write=False):
                conn = await psycopg.AsyncConnection.connect(
                    self._dsn.conninfo,
                    autocommit=True,
                    connect_timeout=max(2, int(self._connect_timeout)),
                )
                try:
                    await self._create_table(conn)
                finally:
                    await conn.close()
                pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
                    self._dsn.conninfo,
                    min_size=1,
                    max_size=self._pool_max,
                    open=False,
                    kwargs={"autocommit": True},
                    name=self._pool_name,
                )
                try:
                    await pool.open(wait=True, timeout=self._connect_timeout)
                except BaseException:
                    await pool.close()
                    raise
            self._pool = pool
            return pool

    async def _create_table(self, conn: Conn) -> None:
        from psycopg import sql

        from memvault.backends.postgres._dsn import SCHEMA_LOCK

        async with conn.transaction():
            # Serialises concurrent creation (CREATE ... IF NOT EXISTS races on the catalog).
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [self._create_lock])
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            cur = await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)", [self._schema]
            )
            row = await cur.fetchone()
            if not (row and row[0]):
                # Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege.
                await conn.execute(
                    sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema))
                )
            for statement in self._ddl:
                await conn.execute(statement)

    async def read(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """``fn`` on a pooled connection (autocommit); errors become retrieval errors."""
        pool = await self._ensure_pool()
        async with self._guard(op, write=False), pool.connection() as conn:
            return await fn(conn)

    async def write(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """``fn`` in a transaction on a pooled connection; errors become store errors."""
        pool = await self._ensure_pool()
        async with self._guard(op, write=True), pool.connection() as conn, conn.transaction():
            return await fn(conn)

    async def close(self) -> None:
        """Close the pool; later calls raise :class:`MemoryConnectionError`."""
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
