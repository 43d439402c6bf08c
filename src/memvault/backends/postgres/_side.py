"""Shared knowledge, the audit log and the archive in the PostgreSQL store.

The storage primitives :class:`~memvault.backends._base.BaseBackend` calls for everything
beside an agent's private memories (``_insert_shared``, ``_retract``, ``_audit_records``,
``_archive_move`` ...). This is :class:`PostgresSideMixin`, mixed into
:class:`~memvault.backends.postgres.PostgresBackend`, which owns the pool and the private memory
rows; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memvault.backends._base import Supersede, Vectors
from memvault.backends.postgres._candidates import PostgresCandidatesMixin
from memvault.backends.postgres._driver import Conn, Jsonb
from memvault.backends.postgres._rows import (
    _COLUMNS,
    _PRIVATE_SCOPE,
    _SHARED_SCOPE,
    _SHARED_STATS,
    _hydrate_sides,
    _insert_archive,
    _insert_audit,
    _row_entry,
    _where,
)
from memvault.models import ArchivedEntry, AuditRecord, CandidateSet, MemoryEntry, MemoryQuery

__all__ = ["PostgresSideMixin"]

T = TypeVar("T")

if TYPE_CHECKING:
    _MixinBase = PostgresCandidatesMixin
else:
    _MixinBase = object


class PostgresSideMixin(_MixinBase):
    """Shared knowledge, audit log and archive primitives of the PostgreSQL backend."""

    if TYPE_CHECKING:
        # Provided by PostgresBackend (memvault.backends.postgres.backend).

        async def _write(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T: ...

        async def _insert_rows(
            self,
            entries: Sequence[MemoryEntry],
            vectors: Vectors,
            supersedes: Sequence[Supersede],
            audit: Sequence[AuditRecord],
        ) -> None: ...

        async def _delete_where(self, conn: Conn, cond: str, params: Sequence[Any]) -> int: ...

    # -- shared knowledge -----------------------------------------------------------------------
    #
    # Shared entries are rows of ``memories`` with scope 'shared' (agent_id = author), indexed
    # and scored like private ones. Retraction sets ``retracted_at``; rows are never deleted,
    # so the lexical statistics keep counting them, as they keep superseded rows.

    async def _insert_shared(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        await self._insert_rows(entries, vectors, supersedes, audit)

    async def _shared_candidates(
        self,
        exclude_agent: str | None,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        scope, scope_params = _SHARED_SCOPE, []
        if exclude_agent is not None:
            scope, scope_params = f"{scope} AND m.agent_id <> %s", [exclude_agent]
        return await self._scoped_candidates(
            scope, scope_params, _SHARED_STATS, [terms], query, vector, terms, pool, now
        )

    async def _shared_adjacent(
        self, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        if not ids:
            return {}
        live = "scope = 'shared' AND {0}.retracted_at IS NULL"
        async with self._connection("search") as conn:
            # Insertion order of the live shared entries (any author) is rowid order.
            cur = await conn.execute(
                "SELECT t.id,"
                " ARRAY(SELECT p.rowid FROM memories p WHERE p."
                + live.format("p")
                + " AND p.rowid < t.rowid ORDER BY p.rowid DESC LIMIT %s),"
                " ARRAY(SELECT n.rowid FROM memories n WHERE n."
                + live.format("n")
                + " AND n.rowid > t.rowid ORDER BY n.rowid LIMIT %s)"
                " FROM memories t WHERE t." + live.format("t") + " AND t.id = ANY(%s::text[])",
                [hops, hops, list(ids)],
            )
            return await _hydrate_sides(conn, await cur.fetchall())

    async def _list_shared(
        self, exclude_agent: str | None, query: MemoryQuery, offset: int
    ) -> list[MemoryEntry]:
        where, params = _where(query, self._clock())
        scope, scope_params = _SHARED_SCOPE, []
        if exclude_agent is not None:
            scope, scope_params = f"{scope} AND m.agent_id <> %s", [exclude_agent]
        async with self._connection("list") as conn:
            cur = await conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE {scope} AND {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s",
                [*scope_params, *params, query.limit, offset],
            )
            rows = await cur.fetchall()
        return [_row_entry(r) for r in rows]

    async def _retract(
        self, agent_id: str, memory_id: str, when: datetime, record: AuditRecord
    ) -> bool:
        async def run(conn: Conn) -> bool:
            cur = await conn.execute(
                "UPDATE memories SET retracted_at = %s, updated_at = %s"
                " WHERE id = %s AND agent_id = %s AND scope = 'shared' AND retracted_at IS NULL"
                " RETURNING rowid",
                [when, when, memory_id, agent_id],
            )
            if await cur.fetchone() is None:
                return False
            await _insert_audit(conn, [record])
            return True

        return await self._write("retract", run)

    async def _audit_records(
        self,
        memory_id: str | None,
        limit: int,
        after: tuple[datetime, str] | None = None,
        *,
        agent_id: str | None = None,
    ) -> list[AuditRecord]:
        sql = "SELECT id, at, actor, action, agent_id, memory_id, details FROM audit WHERE true"
        params: list[Any] = []
        if memory_id is not None:
            sql += " AND memory_id = %s"
            params.append(memory_id)
        if agent_id is not None:
            # audit_agent (agent_id, at, id) serves the filter and the order.
            sql += " AND agent_id = %s"
            params.append(agent_id)
        if after is not None:
            sql += " AND (at, id) > (%s, %s)"
            params.extend([after[0], after[1]])
        sql += " ORDER BY at, id LIMIT %s"
        params.append(limit)
        async with self._connection("audit") as conn:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        return [
            AuditRecord(
                id=r[0],
                at=r[1],
                actor=r[2],
                action=r[3],
                agent_id=r[4],
                memory_id=r[5],
                details=dict(r[6]),
            )
            for r in rows
        ]

    async def _archive_move(
        self, agent_id: str, records: Sequence[ArchivedEntry], audit: Sequence[AuditRecord]
    ) -> None:
        async def run(conn: Conn) -> None:
            await _insert_archive(conn, records)
            await self._delete_where(
                conn,
                f"{_PRIVATE_SCOPE} AND m.id = ANY(%s::text[])",
                [agent_id, [r.memory_id for r in records]],
            )
            await _insert_audit(conn, audit)

        await self._write("archive", run)

    async def _archive_rows(
        self, agent_id: str | None, memory_id: str | None, limit: int, offset: int
    ) -> list[ArchivedEntry]:
        sql = "SELECT id, agent_id, reason, archived_at, entry FROM archive WHERE true"
        params: list[Any] = []
        if agent_id is not None:
            sql += " AND agent_id = %s"
            params.append(agent_id)
        if memory_id is not None:
            sql += " AND memory_id = %s"
            params.append(memory_id)
        sql += " ORDER BY archived_at DESC, id DESC LIMIT %s OFFSET %s"
        params.extend([limit, offset])
        async with self._connection("read") as conn:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
        return [
            ArchivedEntry(
                archive_id=r[0],
                agent_id=r[1],
                reason=r[2],
                archived_at=r[3],
                entry=MemoryEntry.from_json(r[4]),
            )
            for r in rows
        ]

    async def _archive_import(self, records: Sequence[ArchivedEntry]) -> int:
        async def run(conn: Conn) -> int:
            return await _insert_archive(conn, records, ignore=True)

        return await self._write("archive.import", run)

    async def _archive_count(self) -> int:
        async with self._connection("read") as conn:
            cur = await conn.execute("SELECT count(*) FROM archive")
            row = await cur.fetchone()
        return int(row[0]) if row is not None else 0

    async def _archive_drop(self, archive_id: str) -> None:
        async def run(conn: Conn) -> None:
            await conn.execute("DELETE FROM archive WHERE id = %s", [archive_id])

        await self._write("archive.drop", run)

    async def _import_audit(self, records: Sequence[AuditRecord]) -> int:
        async def run(conn: Conn) -> int:
            inserted = 0
            for r in records:
                cur = await conn.execute(
                    "INSERT INTO audit (id, at, actor, action, agent_id, memory_id, details)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                    (r.id, r.at, r.actor, r.action, r.agent_id, r.memory_id, Jsonb(r.details)),
                )
                inserted += max(cur.rowcount, 0)
            return inserted

        return await self._write("audit.import", run)

    async def _count_audit(self) -> int:
        async with self._connection("audit") as conn:
            cur = await conn.execute("SELECT COUNT(*) FROM audit")
            row = await cur.fetchone()
        return int(row[0]) if row else 0
