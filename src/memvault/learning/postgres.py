"""The learning records in PostgreSQL: a ``learning_items`` table in the store's schema.

Created on first use beside the memory tables (``CREATE TABLE IF NOT EXISTS``, under an advisory
lock); a small connection pool of its own. psycopg errors are translated into the memvault error
tree with the password scrubbed.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
    from psycopg.rows import TupleRow
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = 'the PostgreSQL learning store needs psycopg 3: pip install "memvault[postgres]"'
    raise MemoryConfigError(_msg) from exc

from memvault.backends.postgres._dsn import check_schema, parse_dsn, scrub
from memvault.learning.store import LearningRow

__all__ = ["PostgresLearningStore"]

T = TypeVar("T")
Conn = psycopg.AsyncConnection[TupleRow]

_CREATE_LOCK = int.from_bytes(hashlib.sha256(b"memvault.learning").digest()[:8], "big", signed=True)
_COLUMNS = "kind, id, agent_id, status, at, n, data"


class PostgresLearningStore:
    """Learning records in a PostgreSQL database (``postgresql://...``, optionally ``?schema=``)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        pool_max: int = 2,
        connect_timeout: float = 10.0,
    ) -> None:
        self._dsn = parse_dsn(url)
        self._schema = check_schema(self._dsn.schema or schema or "public")
        self._table = sql.Identifier(self._schema, "learning_items")
        self._pool_max = max(1, pool_max)
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False

    @property
    def location(self) -> str:
        """The URL without password."""
        return self._dsn.location

    @contextlib.asynccontextmanager
    async def _guard(self, op: str, *, write: bool) -> AsyncIterator[None]:
        try:
            yield
        except MemoryError:
            raise
        except (psycopg.Error, OSError) as exc:
            text = scrub(str(exc), self._dsn.secrets)
            if isinstance(exc, psycopg.OperationalError | OSError):
                msg = f"PostgreSQL learning store {self.location} unreachable: {text}"
                raise MemoryConnectionError(msg) from exc
            msg = f"PostgreSQL learning {op} in {self.location} failed: {text}"
            if write:
                raise MemoryStoreError(msg) from exc
            raise MemoryRetrievalError(msg) from exc

    async def _ensure_pool(self) -> AsyncConnectionPool[Conn]:
        async with self._open_lock:
            if self._closed:
                msg = f"learning store {self.location} is closed"
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
                    name=f"memvault-learning:{self._schema}",
                )
                try:
                    await pool.open(wait=True, timeout=self._connect_timeout)
                except BaseException:
                    await pool.close()
                    raise
            self._pool = pool
            return pool

    async def _create_table(self, conn: Conn) -> None:
        schema = sql.Identifier(self._schema)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_CREATE_LOCK])
            cur = await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)", [self._schema]
            )
            row = await cur.fetchone()
            if not (row and row[0]):
                await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
            await conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} ("
                    ' kind text COLLATE "C" NOT NULL,'
                    ' id text COLLATE "C" NOT NULL,'
                    ' agent_id text COLLATE "C",'
                    " status text,"
                    " at timestamptz NOT NULL,"
                    " n bigint NOT NULL DEFAULT 0,"
                    " data jsonb NOT NULL,"
                    " PRIMARY KEY (kind, id))"
                ).format(self._table)
            )
            for name, cols in (
                ("learning_kind_status_at", "kind, status, at"),
                ("learning_kind_agent_at", "kind, agent_id, at"),
            ):
                await conn.execute(
                    sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (" + cols + ")").format(
                        sql.Identifier(name), self._table
                    )
                )

    async def _read(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        pool = await self._ensure_pool()
        async with self._guard(op, write=False), pool.connection() as conn:
            return await fn(conn)

    async def _write(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        pool = await self._ensure_pool()
        async with self._guard(op, write=True), pool.connection() as conn, conn.transaction():
            return await fn(conn)

    @staticmethod
    def _row(raw: Sequence[Any]) -> LearningRow:
        kind, item_id, agent_id, status, at, n, data = raw
        return LearningRow(kind, item_id, agent_id, status, at, int(n), dict(data))

    async def put(self, row: LearningRow) -> None:
        """Insert or replace a record (its counter is kept)."""

        async def run(conn: Conn) -> None:
            await conn.execute(
                sql.SQL(
                    "INSERT INTO {} (" + _COLUMNS + ") VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (kind, id) DO UPDATE SET agent_id = excluded.agent_id,"
                    " status = excluded.status, at = excluded.at, data = excluded.data"
                ).format(self._table),
                [row.kind, row.id, row.agent_id, row.status, row.at, row.n, Jsonb(row.data)],
            )

        await self._write("put", run)

    async def get(self, kind: str, item_id: str) -> LearningRow | None:
        """One record, or None."""

        async def run(conn: Conn) -> LearningRow | None:
            cur = await conn.execute(
                sql.SQL("SELECT " + _COLUMNS + " FROM {} WHERE kind = %s AND id = %s").format(
                    self._table
                ),
                [kind, item_id],
            )
            raw = await cur.fetchone()
            return None if raw is None else self._row(raw)

        return await self._read("get", run)

    async def find(
        self,
        kind: str,
        *,
        status: str | None = None,
        agent_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> builtins.list[LearningRow]:
        """Records of ``kind`` matching the filters, by time (then id)."""
        where, params = ["kind = %s"], [kind]
        extra: list[Any] = []
        if status is not None:
            where.append("status = %s")
            extra.append(status)
        if agent_id is not None:
            where.append("agent_id = %s")
            extra.append(agent_id)
        if since is not None:
            where.append("at >= %s")
            extra.append(since)
        order = "DESC" if newest_first else "ASC"
        query = sql.SQL(
            "SELECT "
            + _COLUMNS
            + " FROM {} WHERE "
            + " AND ".join(where)
            + f" ORDER BY at {order}, id {order} LIMIT %s"
        ).format(self._table)

        async def run(conn: Conn) -> builtins.list[LearningRow]:
            cur = await conn.execute(query, [*params, *extra, limit])
            return [self._row(r) for r in await cur.fetchall()]

        return await self._read("find", run)

    async def transition(self, row: LearningRow, *, expected_status: str) -> bool:
        """Replace the record only if its status is still ``expected_status``."""

        async def run(conn: Conn) -> bool:
            cur = await conn.execute(
                sql.SQL(
                    "UPDATE {} SET agent_id = %s, status = %s, at = %s, data = %s"
                    " WHERE kind = %s AND id = %s AND status = %s"
                ).format(self._table),
                [
                    row.agent_id,
                    row.status,
                    row.at,
                    Jsonb(row.data),
                    row.kind,
                    row.id,
                    expected_status,
                ],
            )
            return cur.rowcount > 0

        return await self._write("transition", run)

    async def bump(self, kind: str, ids: Sequence[str], at: datetime) -> None:
        """Add one to each record's counter (created when missing) and set its time."""

        async def run(conn: Conn) -> None:
            for item_id in ids:
                await conn.execute(
                    sql.SQL(
                        "INSERT INTO {t} ("
                        + _COLUMNS
                        + ") VALUES (%s, %s, NULL, NULL, %s, 1, '{{}}')"
                        " ON CONFLICT (kind, id) DO UPDATE SET n = {t}.n + 1, at = excluded.at"
                    ).format(t=self._table),
                    [kind, item_id, at],
                )

        await self._write("bump", run)

    async def close(self) -> None:
        """Close the pool; later calls raise :class:`MemoryConnectionError`."""
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
