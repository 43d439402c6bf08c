"""The learning records in PostgreSQL: a ``learning_items`` table in the store's schema.

Made on first use beside the memory tables by the named migrations of
:data:`memvault.learning.store.LEARNING_TABLES` (under an advisory lock); a small connection pool
of its own. psycopg errors are translated into the memvault error tree with the password
scrubbed.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
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
    _msg = 'the PostgreSQL learning store needs psycopg 3: pip install "memvault[postgres]"'
    raise MemoryConfigError(_msg) from exc

from memvault.backends.postgres._dsn import check_schema, parse_dsn
from memvault.learning.store import LEARNING_TABLES, LearningRow

__all__ = ["PostgresLearningStore"]

Conn = psycopg.AsyncConnection[TupleRow]

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
        self._db = PostgresSide(
            self._dsn,
            schema=self._schema,
            location=self._dsn.location,
            noun="learning",
            lock_name=b"memvault.learning",
            migrations=LEARNING_TABLES,
            pool_name=f"memvault-learning:{self._schema}",
            pool_max=max(1, pool_max),
            connect_timeout=connect_timeout,
        )

    @property
    def location(self) -> str:
        """The URL without password."""
        return self._dsn.location

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

        await self._db.write("put", run)

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

        return await self._db.read("get", run)

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

        return await self._db.read("find", run)

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

        return await self._db.write("transition", run)

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

        await self._db.write("bump", run)

    async def close(self) -> None:
        """Close the pool; later calls raise :class:`MemoryConnectionError`."""
        await self._db.close()
