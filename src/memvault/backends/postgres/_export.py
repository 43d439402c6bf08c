"""Store-wide reads of the PostgreSQL store: exports, agent ids and statistics.

``export_entries``, ``export_in_storage_order`` and ``export_vectors`` (what ``memvault
migrate`` and re-indexing read, in keyset pages), ``agent_ids`` and ``stats``. This is
:class:`PostgresExportMixin`, mixed into :class:`~memvault.backends.postgres.PostgresBackend`,
which owns the pool; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memvault.backends._base import Vectors, check_agent
from memvault.backends.postgres._candidates import PostgresCandidatesMixin
from memvault.backends.postgres._rows import _COLUMNS, _PAGE, _row_entry, _vector_from_send
from memvault.models import MemoryEntry, StoreStats

__all__ = ["PostgresExportMixin"]

if TYPE_CHECKING:
    _MixinBase = PostgresCandidatesMixin
else:
    _MixinBase = object


class PostgresExportMixin(_MixinBase):
    """Exports, agent ids and statistics of the PostgreSQL backend."""

    if TYPE_CHECKING:
        # Provided by PostgresBackend (memvault.backends.postgres.backend).
        _schema: str

    async def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all), oldest first, read in keyset pages."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        last: tuple[datetime, str] | None = None
        while True:
            clauses: list[str] = []
            params: list[Any] = []
            if last is not None:
                clauses.append("(m.created_at, m.id) > (%s, %s)")
                params.extend(last)
            if agent is not None:
                clauses.append("m.agent_id = %s")
                params.append(agent)
            where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
            async with self._connection("export") as conn:
                cur = await conn.execute(
                    f"SELECT {_COLUMNS} FROM memories m{where}"
                    " ORDER BY m.created_at, m.id LIMIT %s",
                    [*params, _PAGE],
                )
                rows = [_row_entry(r) for r in await cur.fetchall()]
            for entry in rows:
                yield entry
            if len(rows) < _PAGE:
                return
            last = (rows[-1].created_at, rows[-1].id)

    async def agent_ids(self) -> list[str]:
        """Every agent id with at least one memory (bytewise order, as SQLite sorts)."""
        async with self._connection("list agents") as conn:
            cur = await conn.execute("SELECT agent_id FROM agent_stats WHERE n > 0 ORDER BY 1")
            return [str(r[0]) for r in await cur.fetchall()]

    async def stats(self) -> StoreStats:
        """Counts, and the on-disk size of the schema's tables and indexes."""
        async with self._connection("stats") as conn:
            cur = await conn.execute("SELECT category, count(*) FROM memories GROUP BY category")
            by_cat = {str(k): int(v) for k, v in await cur.fetchall()}
            cur = await conn.execute("SELECT count(*) FROM agent_stats WHERE n > 0")
            row = await cur.fetchone()
            agents = int(row[0]) if row else 0
            cur = await conn.execute(
                "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind = 'r'",
                [self._schema],
            )
            row = await cur.fetchone()
            size = int(row[0]) if row else 0
        return StoreStats(
            backend=self.backend_name,
            location=self.location,
            total=sum(by_cat.values()),
            by_category=by_cat,
            agents=agents,
            embedding_model=self._embedder.model_id,
            dimension=self._embedder.dimension,
            size_bytes=size,
        )

    # -- bulk transfer (``memvault migrate``) ---------------------------------------------------

    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``ids`` (any agent), bit-exact; unknown ids are left out."""
        self._require_connected()
        wanted = list(dict.fromkeys(ids))
        out: dict[str, Vectors] = {}
        async with self._connection("export") as conn:
            for start in range(0, len(wanted), _PAGE):
                # vector_send() is pgvector's binary form: exact float32 values, no text parsing.
                cur = await conn.execute(
                    "SELECT id, vector_send(embedding) FROM memories WHERE id = ANY(%s::text[])",
                    [wanted[start : start + _PAGE]],
                )
                for mid, data in await cur.fetchall():
                    out[str(mid)] = _vector_from_send(data)
        return out

    async def export_in_storage_order(
        self, agent_id: str | None = None
    ) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all) in insertion (rowid) order, in keyset pages."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        last = 0
        while True:
            params: list[Any] = [last]
            where = "m.rowid > %s"
            if agent is not None:
                where += " AND m.agent_id = %s"
                params.append(agent)
            async with self._connection("export") as conn:
                cur = await conn.execute(
                    f"SELECT {_COLUMNS} FROM memories m WHERE {where} ORDER BY m.rowid LIMIT %s",
                    [*params, _PAGE],
                )
                rows = await cur.fetchall()
            for row in rows:
                yield _row_entry(row)
            if len(rows) < _PAGE:
                return
            last = int(rows[-1][0])
