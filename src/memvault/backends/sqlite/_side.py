"""Shared knowledge, the audit log and the archive in the SQLite store.

The storage primitives :class:`~memvault.backends._base.BaseBackend` calls for everything
beside an agent's private memories (``_insert_shared``, ``_retract``, ``_audit_records``,
``_archive_move`` ...). This is :class:`SQLiteSideMixin`, mixed into
:class:`~memvault.backends.sqlite.SQLiteBackend`, which owns the connection and the private
memory rows; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memvault.backends._base import SHARED_KEY, Supersede, Vectors
from memvault.backends.sqlite._candidates import SQLiteCandidatesMixin
from memvault.backends.sqlite._rows import (
    _COLUMNS,
    _EPOCH,
    _insert_archive,
    _insert_audit,
    _row_entry,
    _scope_sql,
    _where,
    to_us,
)
from memvault.models import ArchivedEntry, AuditRecord, CandidateSet, MemoryEntry, MemoryQuery

__all__ = ["SQLiteSideMixin"]

if TYPE_CHECKING:
    _MixinBase = SQLiteCandidatesMixin
else:
    _MixinBase = object


class SQLiteSideMixin(_MixinBase):
    """Shared knowledge, audit log and archive primitives of the SQLite backend."""

    if TYPE_CHECKING:
        # Provided by SQLiteBackend (memvault.backends.sqlite.backend).

        def _transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...

        @staticmethod
        def _delete_rows(conn: sqlite3.Connection, rowids: Sequence[int]) -> None: ...

        def _insert_sync(
            self,
            entries: list[MemoryEntry],
            vectors: Vectors,
            supersedes: list[Supersede],
            audit: Sequence[AuditRecord] = (),
        ) -> None: ...

    # -- shared knowledge -----------------------------------------------------------------------
    #
    # Shared entries are rows of ``memories`` with scope 'shared' (agent_id = author), indexed
    # like private ones (FTS5, vectors) but kept in their own in-process matrix (SHARED_KEY).
    # Retraction sets ``retracted_at`` and drops the row from that matrix; the row stays.

    async def _insert_shared(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        await self._run(
            self._insert_sync, list(entries), vectors, list(supersedes), list(audit), write=True
        )

    async def _shared_candidates(
        self,
        exclude_agent: str | None,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        return await self._run(
            self._candidates_sync, SHARED_KEY, query, vector, terms, pool, now, exclude_agent
        )

    async def _shared_adjacent(
        self, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        if not ids:
            return {}
        return await self._run(self._adjacent_sync, SHARED_KEY, list(ids), hops)

    async def _list_shared(
        self, exclude_agent: str | None, query: MemoryQuery, offset: int
    ) -> list[MemoryEntry]:
        now_us = to_us(self._clock())

        def run() -> list[MemoryEntry]:
            where, params = _where(query, now_us)
            scope, scope_params = _scope_sql(SHARED_KEY, exclude_agent)
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE {scope} AND {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
                [*scope_params, *params, query.limit, offset],
            ).fetchall()
            return [_row_entry(r) for r in rows]

        return await self._run(run)

    async def _retract(
        self, agent_id: str, memory_id: str, when: datetime, record: AuditRecord
    ) -> bool:
        when_us = to_us(when)

        def run() -> bool:
            self._refresh()
            with self._transaction() as conn:
                row = conn.execute(
                    "SELECT rowid FROM memories WHERE id = ? AND agent_id = ?"
                    " AND scope = 'shared' AND retracted_at IS NULL",
                    (memory_id, agent_id),
                ).fetchone()
                if row is None:
                    return False
                conn.execute(
                    "UPDATE memories SET retracted_at = ?, updated_at = ? WHERE rowid = ?",
                    (when_us, when_us, row[0]),
                )
                _insert_audit(conn, [record])
                self._bump_generation(conn)
            self._generation += 1
            self._cache.drop_rowids([row[0]])
            index = self._indexes.get(SHARED_KEY)
            if index is not None:
                index.remove([row[0]])
            return True

        return await self._run(run, write=True)

    async def _audit_records(
        self,
        memory_id: str | None,
        limit: int,
        after: tuple[datetime, str] | None = None,
        *,
        agent_id: str | None = None,
    ) -> list[AuditRecord]:
        def run() -> list[AuditRecord]:
            sql = "SELECT id, at, actor, action, agent_id, memory_id, details FROM audit WHERE 1=1"
            params: list[Any] = []
            if memory_id is not None:
                sql += " AND memory_id = ?"
                params.append(memory_id)
            if agent_id is not None:
                # idx_audit_agent (agent_id, at, id) serves the filter and the order.
                sql += " AND agent_id = ?"
                params.append(agent_id)
            if after is not None:
                sql += " AND (at, id) > (?, ?)"
                params.extend([to_us(after[0]), after[1]])
            sql += " ORDER BY at, id LIMIT ?"
            params.append(limit)
            return [
                AuditRecord(
                    id=r[0],
                    at=_EPOCH + timedelta(microseconds=r[1]),
                    actor=r[2],
                    action=r[3],
                    agent_id=r[4],
                    memory_id=r[5],
                    details=json.loads(r[6]),
                )
                for r in self._db.execute(sql, params)
            ]

        return await self._run(run)

    async def _import_audit(self, records: Sequence[AuditRecord]) -> int:
        def run() -> int:
            with self._transaction() as conn:
                before = conn.total_changes
                _insert_audit(conn, records, ignore=True)
                return conn.total_changes - before

        return await self._run(run, write=True)

    async def _count_audit(self) -> int:
        row = await self._run(lambda: self._db.execute("SELECT COUNT(*) FROM audit").fetchone())
        return int(row[0])

    # -- archive ------------------------------------------------------------------------------

    async def _archive_move(
        self, agent_id: str, records: Sequence[ArchivedEntry], audit: Sequence[AuditRecord]
    ) -> None:
        def run() -> None:
            self._refresh()
            with self._transaction() as conn:
                _insert_archive(conn, records)
                rowids = [
                    row[0]
                    for r in records
                    for row in conn.execute(
                        "SELECT rowid FROM memories WHERE id = ? AND agent_id = ?"
                        " AND scope = 'private'",
                        (r.memory_id, agent_id),
                    )
                ]
                self._delete_rows(conn, rowids)
                _insert_audit(conn, audit)
                self._bump_generation(conn)
            self._generation += 1
            self._cache.drop_rowids(rowids)
            index = self._indexes.get(agent_id)
            if index is not None:
                index.remove(rowids)

        await self._run(run, write=True)

    async def _archive_rows(
        self, agent_id: str | None, memory_id: str | None, limit: int, offset: int
    ) -> list[ArchivedEntry]:
        def run() -> list[ArchivedEntry]:
            sql = "SELECT id, agent_id, reason, archived_at, entry FROM archive WHERE 1=1"
            params: list[Any] = []
            if agent_id is not None:
                sql += " AND agent_id = ?"
                params.append(agent_id)
            if memory_id is not None:
                sql += " AND memory_id = ?"
                params.append(memory_id)
            sql += " ORDER BY archived_at DESC, id DESC LIMIT ? OFFSET ?"
            params.extend([limit, offset])
            return [
                ArchivedEntry(
                    archive_id=r[0],
                    agent_id=r[1],
                    reason=r[2],
                    archived_at=_EPOCH + timedelta(microseconds=r[3]),
                    entry=MemoryEntry.from_json(json.loads(r[4])),
                )
                for r in self._db.execute(sql, params)
            ]

        return await self._run(run)

    async def _archive_import(self, records: Sequence[ArchivedEntry]) -> int:
        def run() -> int:
            with self._transaction() as conn:
                before = conn.total_changes
                _insert_archive(conn, records, ignore=True)
                return conn.total_changes - before

        return await self._run(run, write=True)

    async def _archive_count(self) -> int:
        row = await self._run(lambda: self._db.execute("SELECT COUNT(*) FROM archive").fetchone())
        return int(row[0])

    async def _archive_drop(self, archive_id: str) -> None:
        def run() -> None:
            with self._transaction() as conn:
                conn.execute("DELETE FROM archive WHERE id = ?", (archive_id,))

        await self._run(run, write=True)
