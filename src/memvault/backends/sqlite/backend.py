"""The embedded default backend: one SQLite file, FTS5 for BM25, exact dense search in numpy.

One connection per backend, used from one worker thread (SQLite connections are not safe to
share across threads, and a single writer is what SQLite wants anyway). Other processes may use
the same file: ``PRAGMA data_version`` tells when another connection committed, and a
``generation`` counter in ``store_meta`` (bumped by every write that changes what search sees)
tells whether the in-process vector matrices must be reloaded.

This module holds the class: connection, lifecycle, and the writes and reads of private memory
rows. The class mixes in the rest, kept in modules of their own to keep each file readable:
search and change tracking (:mod:`._candidates`), shared knowledge, the audit log and the
archive (:mod:`._side`), exports and statistics (:mod:`._export`); row conversion and SQL
fragments are in :mod:`._rows`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memvault._inline import may_run_inline
from memvault.backends._base import (
    CLEAR,
    DELETE,
    BaseBackend,
    Supersede,
    Vectors,
    append_only_error,
    check_agent,
    check_id,
    check_stored_model,
    check_times,
    lexical_text,
)
from memvault.backends._common import check_filters, metadata_json, static_blobs, with_filters
from memvault.backends.sqlite._ann import AnnSettings
from memvault.backends.sqlite._candidates import LOAD_CHUNK, SQLiteCandidatesMixin
from memvault.backends.sqlite._connect import check_foreign, open_sqlite, translate_error
from memvault.backends.sqlite._export import SQLiteExportMixin
from memvault.backends.sqlite._reindex import SQLiteReindexMixin
from memvault.backends.sqlite._rows import (
    _CATEGORY_CODE,
    _COLUMNS,
    _PAGE,
    _EntryCache,
    _filters_sql,
    _fts_scope_key,
    _index_key,
    _insert_audit,
    _opt_us,
    _row_entry,
    _where,
    to_us,
)
from memvault.backends.sqlite._side import SQLiteSideMixin
from memvault.backends.sqlite.schema import SCHEMA_VERSION, apply_migrations
from memvault.backends.sqlite.vector_index import NEVER, AgentIndex, IndexRow
from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
)
from memvault.models import (
    AuditRecord,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryScope,
    MetadataFilter,
)
from memvault.protocols import Embedder
from memvault.retrieval.text import index_text

__all__ = ["SQLiteBackend"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _drop_graph_mentions(conn: sqlite3.Connection, agent_id: str, ids: Sequence[str]) -> None:
    """Drop the graph mentions of deleted memories, in the deletion's transaction.

    Only when graph memory made its tables in this file (memvault.graph.store). Entities and
    edges stay (facts, not memories); archived memories keep their mentions, which graph reads
    skip while the memory is not live and which count again once it is restored.
    """
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'graph_mentions'"
    ).fetchone()
    if not ids or found is None:
        return
    for start in range(0, len(ids), _PAGE):
        chunk = list(ids[start : start + _PAGE])
        conn.execute(
            "DELETE FROM graph_mentions WHERE agent_id = ?"
            f" AND memory_id IN ({','.join('?' * len(chunk))})",
            [agent_id, *chunk],
        )


class SQLiteBackend(
    SQLiteReindexMixin, SQLiteSideMixin, SQLiteExportMixin, SQLiteCandidatesMixin, BaseBackend
):
    """memvault's embedded store in one SQLite file (WAL mode).

    A path that is surely wrong is refused when connecting instead of silently starting a new
    store: a missing directory (unless ``create_dirs=True``: the factory passes it for
    memvault's own directories such as ``~/.memvault``) and an existing file that is not a
    SQLite database both raise :class:`~memvault.errors.MemoryConfigError`.

    ``ann`` are the settings of the HNSW graphs of large agents
    (:class:`~memvault.backends.sqlite._ann.AnnSettings`: from how many rows an agent gets one,
    built in the background or not, ...); default the process-wide ones, whose ``min_rows``
    ``MEMVAULT_SQLITE_ANN_MIN_ROWS`` sets.

    ``load_chunk`` is how many rows are read at a time when an agent's vector index is loaded
    (default 50,000: a million rows read at once would hold their vector blobs twice over beside
    the matrix).

    ``trace``, when given, is called with the text of every SQL statement the store's
    connection runs (:meth:`sqlite3.Connection.set_trace_callback`), on the thread that runs
    it: for debugging, and for tests that count what an operation costs.
    """

    backend_name = "sqlite"
    _implements_shared = True
    _audits_deletes = True

    def __init__(
        self,
        path: str | Path,
        embedder: Embedder,
        *,
        synchronous: str = "normal",
        busy_timeout_ms: int = 10_000,
        entry_cache_size: int = 20_000,
        create_dirs: bool = False,
        trace: Callable[[str], None] | None = None,
        ann: AnnSettings | None = None,
        load_chunk: int = LOAD_CHUNK,
        **kwargs: Any,
    ) -> None:
        super().__init__(embedder, **kwargs)
        self._create_dirs = create_dirs
        self._trace = trace
        self._ann_settings = ann
        if load_chunk < 1:
            msg = f"load_chunk must be at least 1, got {load_chunk}"
            raise MemoryConfigError(msg)
        self._load_chunk = load_chunk
        self._cache = _EntryCache(entry_cache_size)
        self._path = Path(path).expanduser()
        self._synchronous = synchronous.upper()
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        # Held by whoever uses the connection: the store's thread, or an inline caller.
        self._exclusive = threading.Lock()
        self._indexes: dict[str, AgentIndex] = {}
        # FTS document frequency by term, valid at generation _doc_freq_generation.
        self._doc_freq: dict[str, int] = {}
        self._doc_freq_generation = -1
        self._data_version = -1
        self._generation = -1

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    @property
    def path(self) -> Path:
        """The database file's path."""
        return self._path

    @property
    def supports_graph(self) -> bool:
        """An entity graph can be kept beside the memories (side tables, ``graph.enabled``)."""
        return True

    # -- plumbing -------------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any, write: bool = False) -> T:
        if self._executor is None or self._conn is None:
            msg = "sqlite backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        # The sync facade's loop, serving one caller, does the job itself (see memvault._inline)
        # unless the store's thread is busy: the connection and the caches are used by one
        # thread at a time, whichever it is.
        if may_run_inline() and self._exclusive.acquire(blocking=False):
            try:
                return self._guarded(fn, args, write)
            finally:
                self._exclusive.release()
        loop = asyncio.get_running_loop()
        call = functools.partial(self._exclusively, fn, args, write)
        return await loop.run_in_executor(self._executor, call)

    def _exclusively(self, fn: Callable[..., T], args: tuple[Any, ...], write: bool) -> T:
        with self._exclusive:
            return self._guarded(fn, args, write)

    def _guarded(self, fn: Callable[..., T], args: tuple[Any, ...], write: bool) -> T:
        try:
            return fn(*args)
        except MemoryError:
            raise
        except sqlite3.Error as exc:
            raise self._translate(exc, write) from exc

    def _translate(self, exc: sqlite3.Error, write: bool) -> MemoryError:
        return translate_error(exc, write=write, what="sqlite store", path=self._path)

    @property
    def _db(self) -> sqlite3.Connection:
        assert self._conn is not None  # _run checks before any call reaches here
        return self._conn

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA data_version").fetchone()[0] != self._data_version:
                # Another connection committed since this one last looked: if that was a
                # `memvault reindex` swap, vectors of the old model must not be written now.
                self._check_model(conn)
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- lifecycle ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open (creating if needed) the store file, migrate it, and check the embedding model."""
        if self._connected:
            return
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memvault-sqlite")
        loop = asyncio.get_running_loop()
        try:
            self._conn = await loop.run_in_executor(self._executor, self._open)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise
        self._connected = True
        logger.info("memory.connect", extra={"backend": "sqlite", "path": str(self._path)})

    def _open(self) -> sqlite3.Connection:
        def prepare(conn: sqlite3.Connection) -> None:
            if self._trace is not None:
                conn.set_trace_callback(self._trace)
            conn.execute("PRAGMA foreign_keys = ON")
            check_foreign(conn, self._path, "memvault store")
            apply_migrations(conn, to_us(self._clock()))
            self._check_meta(conn)
            self._data_version = conn.execute("PRAGMA data_version").fetchone()[0]
            self._generation = self._read_generation(conn)

        return open_sqlite(
            self._path,
            what="memvault store",
            busy_timeout_ms=self._busy_timeout_ms,
            synchronous=self._synchronous,
            prepare=prepare,
            create_parent=self._create_dirs,
            wrong_file=MemoryConfigError,
        )

    def _check_meta(self, conn: sqlite3.Connection) -> None:
        meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
        model, dim = self._embedder.model_id, self._embedder.dimension
        stored_model = meta.get("embedding_model")
        stored_dim = int(meta["dimension"]) if "dimension" in meta else None
        has_rows = conn.execute("SELECT EXISTS (SELECT 1 FROM memories)").fetchone()[0]
        check_stored_model(
            str(self._path),
            self._embedder,
            stored_model=stored_model,
            stored_dimension=stored_dim,
            has_rows=bool(has_rows),
        )
        if stored_model != model or stored_dim != dim:
            with contextlib.closing(conn.cursor()) as cur:
                cur.execute("BEGIN IMMEDIATE")
                cur.executemany(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [("embedding_model", model), ("dimension", str(dim))],
                )
                cur.execute("COMMIT")

    async def disconnect(self) -> None:
        """Close the connection and stop the worker thread."""
        if not self._connected:
            return
        self._connected = False
        executor, conn = self._executor, self._conn
        self._executor = None
        indexes = list(self._indexes.values())
        self._indexes.clear()
        if executor is not None and conn is not None:
            loop = asyncio.get_running_loop()
            for index in indexes:
                # Save HNSW graphs changed since they were loaded (no-op without ANN).
                await loop.run_in_executor(executor, index.persist_ann)
            await loop.run_in_executor(executor, conn.close)
            executor.shutdown(wait=True)
        self._conn = None

    async def health_check(self) -> bool:
        """True if ``SELECT 1`` answers."""
        if not self._connected:
            return False
        try:
            return await self._run(lambda: self._db.execute("SELECT 1").fetchone()[0] == 1)
        except MemoryError:
            return False

    async def schema_version(self) -> int:
        """The schema version recorded in ``store_meta``."""
        row = await self._run(
            lambda: self._db.execute(
                "SELECT value FROM store_meta WHERE key = 'schema_version'"
            ).fetchone()
        )
        return int(row[0]) if row else SCHEMA_VERSION

    # -- writes ---------------------------------------------------------------------------------

    async def _insert(
        self, entries: Sequence[MemoryEntry], vectors: Vectors, supersedes: Sequence[Supersede]
    ) -> None:
        await self._run(self._insert_sync, list(entries), vectors, list(supersedes), write=True)

    def _insert_sync(
        self,
        entries: list[MemoryEntry],
        vectors: Vectors,
        supersedes: list[Supersede],
        audit: Sequence[AuditRecord] = (),
    ) -> None:
        self._refresh()
        inserted: list[tuple[str | None, IndexRow, int, str]] = []
        statics = static_blobs([e.content for e in entries])
        with self._transaction() as conn:
            for i, e in enumerate(entries):
                m = e.metadata
                cur = conn.execute(
                    "INSERT INTO memories (id, agent_id, category, content, tags, label, source,"
                    " confidence, importance, extra, scope, created_at, updated_at, expires_at,"
                    " valid_from, valid_to, superseded_by, consolidated_at, access_count,"
                    " last_accessed_at, retracted_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        e.id,
                        e.agent_id,
                        e.category.value,
                        e.content,
                        json.dumps(list(m.tags)),
                        m.label,
                        m.source,
                        m.confidence,
                        m.importance,
                        metadata_json(m.extra),
                        e.scope.value,
                        to_us(e.created_at),
                        to_us(e.updated_at),
                        _opt_us(e.expires_at),
                        _opt_us(e.valid_from),
                        _opt_us(e.valid_to),
                        e.superseded_by,
                        _opt_us(e.consolidated_at),
                        e.access_count,
                        _opt_us(e.last_accessed_at),
                        _opt_us(e.retracted_at),
                    ),
                )
                rowid = int(cur.lastrowid or 0)
                conn.executemany(
                    "INSERT INTO memory_tags (tag, memory_rowid) VALUES (?, ?)",
                    [(t, rowid) for t in m.tags],
                )
                conn.execute(
                    "INSERT INTO memory_vectors (memory_rowid, vector) VALUES (?, ?)",
                    (rowid, np.ascontiguousarray(vectors[i], dtype="<f4").tobytes()),
                )
                if statics is not None:
                    conn.execute(
                        "INSERT INTO memory_static (memory_rowid, vector) VALUES (?, ?)",
                        (rowid, statics[i]),
                    )
                body = index_text(lexical_text(e))
                conn.execute(
                    "INSERT INTO memories_fts (rowid, body, scope_key) VALUES (?, ?, ?)",
                    (rowid, body, _fts_scope_key(e.agent_id, e.scope)),
                )
                row = IndexRow(
                    rowid=rowid,
                    category=_CATEGORY_CODE[e.category],
                    created_us=to_us(e.created_at),
                    start_us=to_us(e.valid_from or e.created_at),
                    valid_to_us=NEVER if e.valid_to is None else to_us(e.valid_to),
                    expires_us=NEVER if e.expires_at is None else to_us(e.expires_at),
                    superseded=e.superseded_by is not None,
                )
                inserted.append(
                    (_index_key(e.agent_id, e.scope.value, e.retracted_at), row, i, body)
                )
            superseded_rows: list[tuple[str | None, int, int]] = []
            for s in supersedes:
                found = conn.execute(
                    "SELECT rowid, agent_id, scope, retracted_at FROM memories WHERE id = ?",
                    (s.old_id,),
                ).fetchone()
                if found is None:
                    continue
                when = to_us(s.when)
                conn.execute(
                    "UPDATE memories SET valid_to = ?, superseded_by = ?, updated_at = ?"
                    " WHERE rowid = ?",
                    (when, s.new_id, when, found[0]),
                )
                superseded_rows.append((_index_key(found[1], found[2], found[3]), found[0], when))
            _insert_audit(conn, audit)
            self._bump_generation(conn)
        self._generation += 1
        self._note_inserted_terms((body for *_, body in inserted), self._generation - 1)
        # The transaction committed: mirror it in the loaded matrices (unloaded ones load later).
        by_agent: dict[str, list[tuple[IndexRow, int, str]]] = {}
        for agent, row, i, body in inserted:
            if agent is not None:
                by_agent.setdefault(agent, []).append((row, i, body))
        for agent, items in by_agent.items():
            index = self._indexes.get(agent)
            if index is not None:
                index.add(
                    [r for r, _, _ in items],
                    vectors[[i for _, i, _ in items]],
                    [b for _, _, b in items],
                )
        for key, rowid, when in superseded_rows:
            self._cache.drop_rowids([rowid])
            index = self._indexes.get(key) if key is not None else None
            if index is not None:
                index.supersede(rowid, when)

    async def _existing_ids(self, ids: Sequence[str]) -> set[str]:
        def run() -> set[str]:
            found: set[str] = set()
            for start in range(0, len(ids), _PAGE):
                chunk = list(ids[start : start + _PAGE])
                sql = f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(chunk))})"
                found.update(r[0] for r in self._db.execute(sql, chunk))
            return found

        return await self._run(run)

    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory of the agent (its vector, tags and FTS row go with it).

        The ``memory.delete`` audit record commits in the same transaction.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        audit = self._deletion_audit(agent)

        def run() -> bool:
            self._refresh()
            with self._transaction() as conn:
                row = conn.execute(
                    "SELECT rowid, scope FROM memories WHERE id = ? AND agent_id = ?", (mid, agent)
                ).fetchone()
                if row is None:
                    return False
                if row[1] != MemoryScope.PRIVATE.value:
                    raise append_only_error(mid)
                self._delete_rows(conn, [row[0]])
                _drop_graph_mentions(conn, agent, [mid])
                _insert_audit(conn, [audit(DELETE, mid, {})])
                self._bump_generation(conn)
            self._generation += 1
            self._cache.drop_rowids([row[0]])
            index = self._indexes.get(agent)
            if index is not None:
                index.remove([row[0]])
            return True

        return await self._run(run, write=True)

    @staticmethod
    def _delete_rows(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
        for start in range(0, len(rowids), _PAGE):
            chunk = list(rowids[start : start + _PAGE])
            marks = ",".join("?" * len(chunk))
            conn.execute(f"DELETE FROM memories_fts WHERE rowid IN ({marks})", chunk)
            conn.execute(f"DELETE FROM memories WHERE rowid IN ({marks})", chunk)

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category) in one transaction.

        The ``memory.clear`` audit record (when anything was deleted) commits with it.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        audit = self._deletion_audit(agent)
        what = {"category": None if category is None else category.value}

        def run() -> int:
            self._refresh()
            with self._transaction() as conn:
                if category is None:
                    rows = conn.execute(
                        "SELECT rowid, id FROM memories WHERE agent_id = ? AND scope = 'private'",
                        (agent,),
                    ).fetchall()
                else:
                    rows = conn.execute(
                        "SELECT rowid, id FROM memories"
                        " WHERE agent_id = ? AND scope = 'private' AND category = ?",
                        (agent, category.value),
                    ).fetchall()
                rowids = [r[0] for r in rows]
                self._delete_rows(conn, rowids)
                _drop_graph_mentions(conn, agent, [r[1] for r in rows])
                if rowids:
                    _insert_audit(conn, [audit(CLEAR, None, {"count": len(rowids), **what})])
                    self._bump_generation(conn)
            if rowids:
                self._generation += 1
                self._indexes.pop(agent, None)
                self._cache.drop_rowids(rowids)
            return len(rowids)

        return await self._run(run, write=True)

    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Bump access counters (does not invalidate other processes' matrices)."""
        agent = check_agent(agent_id)
        times = check_times(times)
        if not ids:
            return
        when_us = to_us(when)

        def run() -> None:
            with self._transaction() as conn:
                marks = ",".join("?" * len(ids))
                # "+agent_id": look rows up by id; an agent_id term would let the planner walk
                # the agent's whole index range instead.
                conn.execute(
                    "UPDATE memories SET access_count = access_count + ?, last_accessed_at = ?"
                    f" WHERE +agent_id = ? AND id IN ({marks})",
                    [times, when_us, agent, *ids],
                )
            self._cache.touch(agent, ids, when, times)

        await self._run(run, write=True)

    async def record_access_audited(
        self, agent_id: str, ids: Sequence[str], when: datetime, records: Sequence[AuditRecord]
    ) -> None:
        """:meth:`record_access` (once each) and :meth:`record_audit` in one transaction.

        The write path's confirmations: a write that duplicates a stored memory bumps that
        memory and audits the attempt (``memory.duplicate``) with one commit instead of two.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        wanted = list(ids)
        when_us = to_us(when)

        def run() -> None:
            with self._transaction() as conn:
                if wanted:
                    marks = ",".join("?" * len(wanted))
                    # "+agent_id": by id, as in record_access.
                    conn.execute(
                        "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?"
                        f" WHERE +agent_id = ? AND id IN ({marks})",
                        [when_us, agent, *wanted],
                    )
                _insert_audit(conn, records)
            if wanted:
                self._cache.touch(agent, wanted, when, 1)

        await self._run(run, write=True)

    async def mark_consolidated(self, agent_id: str, ids: Sequence[str], when: datetime) -> None:
        """Set ``consolidated_at`` of the agent's entries among ``ids``."""
        agent = check_agent(agent_id)
        if not ids:
            return
        when_us = to_us(when)

        def run() -> None:
            with self._transaction() as conn:
                for start in range(0, len(ids), _PAGE):
                    chunk = list(ids[start : start + _PAGE])
                    marks = ",".join("?" * len(chunk))
                    conn.execute(
                        "UPDATE memories SET consolidated_at = ?"
                        f" WHERE +agent_id = ? AND id IN ({marks})",
                        [when_us, agent, *chunk],
                    )
                self._bump_generation(conn)
            self._generation += 1
            self._cache.drop_ids(ids)

        await self._run(run, write=True)

    # -- reads ----------------------------------------------------------------------------------

    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent, or None (another agent's id gives None too)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()

        def run() -> MemoryEntry | None:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.id = ? AND m.agent_id = ?",
                (mid, agent),
            ).fetchone()
            return None if row is None else _row_entry(row)

        return await self._run(run)

    async def count(
        self,
        agent_id: str,
        *,
        category: MemoryCategory | None = None,
        filters: Sequence[MetadataFilter] = (),
    ) -> int:
        """Number of stored memories of the agent (of one category, passing the filters)."""
        agent = check_agent(agent_id)
        wanted = check_filters(filters)
        self._require_connected()

        def run() -> int:
            if not wanted:
                # The agent's loaded matrix holds exactly its private rows (every write of this
                # store updates or drops it; _refresh drops it after another process's write), so
                # the cap check after each write counts there instead of scanning the agent's rows.
                self._refresh()
                index = self._indexes.get(agent)
                if index is not None:
                    return index.count(None if category is None else _CATEGORY_CODE[category])
            sql = "SELECT COUNT(*) FROM memories m WHERE m.agent_id = ? AND m.scope = 'private'"
            params: list[Any] = [agent]
            if category is not None:
                sql += " AND m.category = ?"
                params.append(category.value)
            if wanted:
                cond, values = _filters_sql(wanted)
                sql += f" AND {cond}"
                params.extend(values)
            return int(self._db.execute(sql, params).fetchone()[0])

        return await self._run(run)

    async def list_entries(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        offset: int = 0,
        filters: Sequence[MetadataFilter] = (),
    ) -> list[MemoryEntry]:
        """Entries passing the filters (``query.filters`` and ``filters``), newest first."""
        agent = check_agent(agent_id)
        query = with_filters(query, filters)
        self._require_connected()
        now_us = to_us(self._clock())

        def run() -> list[MemoryEntry]:
            where, params = _where(query, now_us)
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories m"
                f" WHERE m.agent_id = ? AND m.scope = 'private' AND {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
                [agent, *params, query.limit, offset],
            ).fetchall()
            return [_row_entry(r) for r in rows]

        return await self._run(run)
