"""Re-embedding the PostgreSQL store with another model: the backend side of ``memvault reindex``.

New vectors are staged in ``reindex_vectors`` (memory rowid, target model id, an untyped
``vector``), created on demand and committed a batch per transaction, so an interrupted run
keeps what it staged. The ``embedding`` column changes only in
:meth:`PostgresReindexMixin.reindex_swap`, in one transaction that holds off other writers
(``SHARE ROW EXCLUSIVE``): it embeds whatever memory still lacks a staged vector, drops the HNSW
index, retypes the column when the dimension changes (the dimension is part of pgvector's type),
copies the staged vectors in, records the model id and dimension in ``store_meta``, drops the
staging table and builds the HNSW index again. A crash at any point leaves either the old vectors
and model or the new ones; PostgreSQL rolls back an unfinished swap (DDL included).

The lexical columns (``lexemes``, ``term_freqs``) do not depend on the model and stay as they are.

This is :class:`PostgresReindexMixin`, mixed into
:class:`~memvault.backends.postgres.PostgresBackend`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from memvault.backends._base import BaseBackend, Vectors, embedding_text
from memvault.backends.postgres._driver import Conn, sql
from memvault.backends.postgres._rows import _COLUMNS, _PAGE, _row_entry, _vector_literal
from memvault.backends.postgres.schema import HNSW_INDEX, hnsw_index_sql
from memvault.errors import MemoryStoreError
from memvault.protocols import Embedder

__all__ = ["PostgresReindexMixin"]

logger = logging.getLogger("memvault.backends.postgres.backend")

T = TypeVar("T")

if TYPE_CHECKING:
    import contextlib

    _MixinBase = BaseBackend
else:
    _MixinBase = object

_STAGING_DDL = (
    "CREATE TABLE IF NOT EXISTS reindex_vectors ("
    " memory_rowid bigint NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,"
    ' model        text COLLATE "C" NOT NULL,'
    " embedding    vector NOT NULL,"
    " PRIMARY KEY (memory_rowid, model))"
)

_MISSING = (
    f"SELECT {_COLUMNS} FROM memories m WHERE NOT EXISTS (SELECT 1 FROM reindex_vectors r"
    " WHERE r.memory_rowid = m.rowid AND r.model = %s) ORDER BY m.rowid LIMIT %s"
)

_STAGE = (
    "INSERT INTO reindex_vectors (memory_rowid, model, embedding)"
    " SELECT m.rowid, %s, v.e::vector FROM unnest(%s::text[], %s::text[]) AS v (id, e)"
    " JOIN memories m ON m.id = v.id"
    " ON CONFLICT (memory_rowid, model) DO UPDATE SET embedding = excluded.embedding"
)


class PostgresReindexMixin(_MixinBase):
    """Staging, resuming and swapping in new vectors (see the module docstring)."""

    if TYPE_CHECKING:
        # Provided by PostgresBackend (memvault.backends.postgres.backend).
        _hnsw: bool
        _index_build_memory: str

        async def _write(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T: ...

        def _connection(
            self, op: str, *, write: bool = False
        ) -> contextlib.AbstractAsyncContextManager[Conn]: ...

    @staticmethod
    async def _has_staging(conn: Conn) -> bool:
        cur = await conn.execute("SELECT to_regclass('reindex_vectors') IS NOT NULL")
        row = await cur.fetchone()
        return bool(row and row[0])

    async def reindex_status(self, model_id: str) -> tuple[int, int]:
        """``(memories, memories with a staged vector of model_id)``; writes nothing."""
        self._require_connected()
        async with self._connection("read") as conn:
            cur = await conn.execute("SELECT count(*) FROM memories")
            row = await cur.fetchone()
            total = int(row[0]) if row else 0
            if not await self._has_staging(conn):
                return total, 0
            cur = await conn.execute(
                "SELECT count(*) FROM reindex_vectors WHERE model = %s", [model_id]
            )
            row = await cur.fetchone()
            return total, int(row[0]) if row else 0

    async def reindex_begin(self, model_id: str) -> None:
        """Create the staging table; keep what is staged for ``model_id``, drop the rest."""
        self._require_connected()

        async def run(conn: Conn) -> None:
            await conn.execute(_STAGING_DDL)
            # Vectors of another target model are an abandoned run's: they never get used.
            await conn.execute("DELETE FROM reindex_vectors WHERE model <> %s", [model_id])

        await self._write("reindex", run)

    async def reindex_pending(
        self, model_id: str, limit: int, *, after: str | None = None
    ) -> list[tuple[str, str]]:
        """Up to ``limit`` memories (id, text to embed) with no staged vector, by rowid (after
        the rowid of memory ``after``)."""
        self._require_connected()
        # A missing `after` row makes the bound NULL: an empty page, and the engine starts over.
        bound = "(SELECT rowid FROM memories WHERE id = %s)" if after is not None else "0"
        params: list[Any] = [] if after is None else [after]
        async with self._connection("read") as conn:
            if await self._has_staging(conn):
                cur = await conn.execute(
                    f"SELECT {_COLUMNS} FROM memories m WHERE NOT EXISTS (SELECT 1"
                    " FROM reindex_vectors r WHERE r.memory_rowid = m.rowid AND r.model = %s)"
                    f" AND m.rowid > {bound} ORDER BY m.rowid LIMIT %s",
                    [model_id, *params, limit],
                )
            else:
                cur = await conn.execute(
                    f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid > {bound}"
                    " ORDER BY m.rowid LIMIT %s",
                    [*params, limit],
                )
            entries = [_row_entry(r) for r in await cur.fetchall()]
        return [(e.id, embedding_text(e)) for e in entries]

    async def reindex_stage(self, model_id: str, vectors: Mapping[str, Vectors]) -> int:
        """Stage vectors by memory id in one transaction; ids gone meanwhile are skipped."""
        self._require_connected()
        ids = list(vectors)
        literals = [_vector_literal(vectors[i]) for i in ids]

        async def run(conn: Conn) -> int:
            cur = await conn.execute(_STAGE, [model_id, ids, literals])
            return max(cur.rowcount, 0)

        return await self._write("reindex", run)

    async def reindex_swap(self, embedder: Embedder, embed: Callable[[list[str]], Vectors]) -> int:
        """Swap the staged vectors in, in one transaction (see the module docstring)."""
        self._require_connected()
        model, dim = embedder.model_id, embedder.dimension

        async def run(conn: Conn) -> int:
            # Writers wait from here to the commit; readers go on with the old vectors until
            # the column is retyped below.
            await conn.execute("LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE")
            await conn.execute(_STAGING_DDL)
            filled = 0
            async for texts, rowids in _missing(conn, model):
                matrix = await asyncio.to_thread(embed, texts)
                await conn.execute(
                    "INSERT INTO reindex_vectors (memory_rowid, model, embedding)"
                    " SELECT r, %s, e::vector FROM unnest(%s::bigint[], %s::text[]) AS v (r, e)",
                    [model, rowids, [_vector_literal(v) for v in matrix]],
                )
                filled += len(rowids)
            await conn.execute(
                sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(HNSW_INDEX))
            )
            cur = await conn.execute(
                "SELECT atttypmod FROM pg_attribute"
                " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
            )
            row = await cur.fetchone()
            retype = row is None or row[0] != dim
            if retype:
                # vector(n) cannot be cast to vector(m): empty the column, retype it, refill it.
                await conn.execute("ALTER TABLE memories ALTER COLUMN embedding DROP NOT NULL")
                await conn.execute(
                    sql.SQL(
                        "ALTER TABLE memories ALTER COLUMN embedding TYPE vector({dim})"
                        " USING NULL::vector({dim})"
                    ).format(dim=sql.Literal(dim))
                )
            await conn.execute(
                "UPDATE memories m SET embedding = r.embedding FROM reindex_vectors r"
                " WHERE r.memory_rowid = m.rowid AND r.model = %s",
                [model],
            )
            cur = await conn.execute(
                "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM reindex_vectors"
                " r WHERE r.memory_rowid = m.rowid AND r.model = %s)",
                [model],
            )
            row = await cur.fetchone()
            if row is not None and row[0]:  # pragma: no cover - every memory was staged above
                msg = f"reindex of {self.location}: {row[0]} vectors were not replaced"
                raise MemoryStoreError(msg)
            if retype:
                await conn.execute("ALTER TABLE memories ALTER COLUMN embedding SET NOT NULL")
            await conn.execute(
                "INSERT INTO store_meta (key, value)"
                " VALUES ('embedding_model', %s), ('dimension', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [model, str(dim)],
            )
            await conn.execute("DROP TABLE reindex_vectors")
            if self._hnsw:
                await conn.execute(
                    "SELECT set_config('maintenance_work_mem', %s, true)",
                    [self._index_build_memory],
                )
                await conn.execute(hnsw_index_sql())
            return filled

        filled = await self._write("reindex", run)
        self._embedder = embedder
        logger.info(
            "memory.reindex.swap",
            extra={"location": self.location, "model": model, "dimension": dim, "filled": filled},
        )
        return filled


async def _missing(conn: Conn, model: str) -> AsyncIterator[tuple[list[str], list[int]]]:
    """Pages of (texts to embed, rowids) of the memories with no staged vector of ``model``.

    Each page is staged before the next is read, so the same query walks on.
    """
    while True:
        cur = await conn.execute(_MISSING, [model, _PAGE])
        rows: list[Any] = await cur.fetchall()
        if not rows:
            return
        yield [embedding_text(_row_entry(r)) for r in rows], [int(r[0]) for r in rows]
