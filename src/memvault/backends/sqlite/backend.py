"""The embedded default backend: one SQLite file, FTS5 for BM25, exact dense search in numpy.

One connection per backend, used from one worker thread (SQLite connections are not safe to
share across threads, and a single writer is what SQLite wants anyway). Other processes may use
the same file: ``PRAGMA data_version`` tells when another connection committed, and a
``generation`` counter in ``store_meta`` (bumped by every write that changes what search sees)
tells whether the in-process vector matrices must be reloaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import sqlite3
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memvault.backends._base import (
    SHARED_KEY,
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
from memvault.backends.sqlite._connect import check_foreign, open_sqlite, translate_error
from memvault.backends.sqlite.schema import SCHEMA_VERSION, apply_migrations
from memvault.backends.sqlite.vector_index import NEVER, AgentIndex, IndexRow
from memvault.errors import (
    MemoryConnectionError,
    MemoryError,
)
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryScope,
    StoreStats,
    trusted,
)
from memvault.protocols import Embedder
from memvault.retrieval.bm25 import PRUNE_MIN_DOCS, prune_common_terms
from memvault.retrieval.text import index_text

__all__ = ["SQLiteBackend"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CATEGORY_CODE = {c: i for i, c in enumerate(MemoryCategory)}
_CATEGORIES = {c.value: c for c in MemoryCategory}
_SCOPES = {s.value: s for s in MemoryScope}
_COLUMNS = (
    "m.rowid, m.id, m.agent_id, m.category, m.content, m.tags, m.label, m.source, m.confidence,"
    " m.importance, m.extra, m.scope, m.created_at, m.updated_at, m.expires_at, m.valid_from,"
    " m.valid_to, m.superseded_by, m.consolidated_at, m.access_count, m.last_accessed_at,"
    " m.retracted_at"
)
_PAGE = 500


def to_us(value: datetime) -> int:
    """Microseconds since the epoch of an aware datetime (exact)."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _opt_us(value: datetime | None) -> int | None:
    return None if value is None else to_us(value)


def from_us(value: int | None) -> datetime | None:
    """The aware UTC datetime of a microsecond timestamp."""
    return None if value is None else _EPOCH + timedelta(microseconds=value)


def _json(text: str, empty: Any) -> Any:
    # Most rows carry no tags or extra metadata; skip the parser for the empty literals.
    return empty if text in ("[]", "{}") else json.loads(text)


def _row_entry(row: sqlite3.Row | tuple[Any, ...]) -> MemoryEntry:
    # Rows were validated when written; `trusted` skips re-validation on the read path, which
    # would otherwise dominate search latency.
    meta = trusted(
        MemoryMetadata,
        {
            "tags": tuple(_json(row[5], ())),
            "source": row[7],
            "label": row[6],
            "confidence": row[8],
            "importance": row[9],
            "extra": _json(row[10], {}),
        },
    )
    return trusted(
        MemoryEntry,
        {
            "id": row[1],
            "agent_id": row[2],
            "category": _CATEGORIES[row[3]],
            "content": row[4],
            "metadata": meta,
            "created_at": _EPOCH + timedelta(microseconds=row[12]),
            "updated_at": _EPOCH + timedelta(microseconds=row[13]),
            "expires_at": from_us(row[14]),
            "valid_from": from_us(row[15]),
            "valid_to": from_us(row[16]),
            "superseded_by": row[17],
            "consolidated_at": from_us(row[18]),
            "access_count": row[19],
            "last_accessed_at": from_us(row[20]),
            "scope": _SCOPES[row[11]],
            "retracted_at": from_us(row[21]),
            "relevance_score": None,
            "score": None,
        },
    )


class _EntryCache:
    """A bounded LRU of hydrated entries by rowid (entries are immutable; writes invalidate).

    Search hydrates hundreds of candidates per query and the same popular entries recur, so
    keeping the parsed objects saves most of the read path. Access counters updated by
    *another* process are not seen until that process's next write bumps the generation.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[int, MemoryEntry] = OrderedDict()
        self._rowid: dict[str, int] = {}

    def get(self, rowid: int) -> MemoryEntry | None:
        entry = self._items.get(rowid)
        if entry is not None:
            self._items.move_to_end(rowid)
        return entry

    def put(self, rowid: int, entry: MemoryEntry) -> None:
        if self._size <= 0:
            return
        self._items[rowid] = entry
        self._rowid[entry.id] = rowid
        if len(self._items) > self._size:
            _, old = self._items.popitem(last=False)
            self._rowid.pop(old.id, None)

    def drop_rowids(self, rowids: Iterable[int]) -> None:
        for rowid in rowids:
            entry = self._items.pop(rowid, None)
            if entry is not None:
                self._rowid.pop(entry.id, None)

    def drop_ids(self, ids: Iterable[str]) -> None:
        self.drop_rowids([r for r in (self._rowid.get(i) for i in ids) if r is not None])

    def touch(self, agent_id: str, ids: Iterable[str], when: datetime, times: int = 1) -> None:
        """Apply an access-counter bump to the cached copies (instead of dropping them:
        popular entries are the ones searches touch, and they would be re-read every time)."""
        for i in dict.fromkeys(ids):  # SQL's IN bumps a repeated id once
            rowid = self._rowid.get(i)
            entry = None if rowid is None else self._items.get(rowid)
            if rowid is not None and entry is not None and entry.agent_id == agent_id:
                self._items[rowid] = entry.model_copy(
                    update={"access_count": entry.access_count + times, "last_accessed_at": when}
                )

    def clear(self) -> None:
        self._items.clear()
        self._rowid.clear()


def _fts_scope_key(agent_id: str, scope: MemoryScope = MemoryScope.PRIVATE) -> str:
    """The FTS ``scope_key`` of a row: ``a`` + hex of the agent id (one token, exact for any
    id), or ``shared`` (not hex, so never an agent's key) for shared knowledge."""
    if scope is MemoryScope.SHARED:
        return "shared"
    return "a" + agent_id.encode("utf-8").hex()


def _fts_query(terms: Sequence[str]) -> str:
    # Terms are analysed words (letters and digits only), quoted anyway so no term can ever be
    # read as FTS5 syntax.
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _where(query: MemoryQuery, now_us: int) -> tuple[str, list[Any]]:
    """SQL filter clauses (on alias ``m``) equivalent to ``MemoryQuery.matches``."""
    clauses = ["(m.expires_at IS NULL OR m.expires_at > ?)"]
    params: list[Any] = [now_us]
    if query.categories is not None:
        cats = sorted(c.value for c in query.categories)
        clauses.append(f"m.category IN ({','.join('?' * len(cats))})")
        params.extend(cats)
    if query.since is not None:
        clauses.append("m.created_at >= ?")
        params.append(to_us(query.since))
    if query.until is not None:
        clauses.append("m.created_at <= ?")
        params.append(to_us(query.until))
    if query.label is not None:
        clauses.append("m.label = ?")
        params.append(query.label)
    for tag in query.tags:
        clauses.append(
            "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_rowid = m.rowid AND t.tag = ?)"
        )
        params.append(tag)
    if query.as_of is not None:
        as_of = to_us(query.as_of)
        clauses.append("COALESCE(m.valid_from, m.created_at) <= ?")
        clauses.append("(m.valid_to IS NULL OR m.valid_to > ?)")
        params.extend([as_of, as_of])
    elif not query.include_superseded:
        clauses.append("m.superseded_by IS NULL AND (m.valid_to IS NULL OR m.valid_to > ?)")
        params.append(now_us)
    return " AND ".join(clauses), params


def _scope_sql(key: str, exclude_agent: str | None = None) -> tuple[str, list[Any]]:
    """The rows a per-scope query covers (alias ``m``): an agent's private memories, or the
    live shared knowledge of every author but ``exclude_agent`` when ``key`` is SHARED_KEY."""
    if key != SHARED_KEY:
        return "m.agent_id = ? AND m.scope = 'private'", [key]
    if exclude_agent is None:
        return "m.scope = 'shared' AND m.retracted_at IS NULL", []
    return "m.scope = 'shared' AND m.retracted_at IS NULL AND m.agent_id <> ?", [exclude_agent]


def _index_key(agent_id: str, scope: str, retracted_at: Any) -> str | None:
    """Which in-process matrix holds a row: its agent's, the shared one, or none (retracted)."""
    if scope == MemoryScope.PRIVATE.value:
        return agent_id
    if scope == MemoryScope.SHARED.value and retracted_at is None:
        return SHARED_KEY
    return None


def _insert_audit(
    conn: sqlite3.Connection, records: Sequence[AuditRecord], *, ignore: bool = False
) -> None:
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    conn.executemany(
        f"{verb} INTO audit (id, at, actor, action, agent_id, memory_id, details)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.id,
                to_us(r.at),
                r.actor,
                r.action,
                r.agent_id,
                r.memory_id,
                json.dumps(r.details, sort_keys=True),
            )
            for r in records
        ],
    )


def _insert_archive(
    conn: sqlite3.Connection, records: Sequence[ArchivedEntry], *, ignore: bool = False
) -> None:
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    conn.executemany(
        f"{verb} INTO archive (id, memory_id, agent_id, reason, archived_at, entry)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                r.archive_id,
                r.memory_id,
                r.agent_id,
                r.reason,
                to_us(r.archived_at),
                json.dumps(r.entry.to_json(), sort_keys=True),
            )
            for r in records
        ],
    )


class SQLiteBackend(BaseBackend):
    """memvault's embedded store in one SQLite file (WAL mode)."""

    backend_name = "sqlite"
    _implements_shared = True

    def __init__(
        self,
        path: str | Path,
        embedder: Embedder,
        *,
        synchronous: str = "normal",
        busy_timeout_ms: int = 10_000,
        entry_cache_size: int = 20_000,
        **kwargs: Any,
    ) -> None:
        super().__init__(embedder, **kwargs)
        self._cache = _EntryCache(entry_cache_size)
        self._path = Path(path).expanduser()
        self._synchronous = synchronous.upper()
        self._busy_timeout_ms = busy_timeout_ms
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._indexes: dict[str, AgentIndex] = {}
        self._data_version = -1
        self._generation = -1
        self._fts_count = 0
        self._fts_count_generation = -2

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    @property
    def path(self) -> Path:
        """The database file's path."""
        return self._path

    # -- plumbing -------------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any, write: bool = False) -> T:
        if self._executor is None or self._conn is None:
            msg = "sqlite backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        loop = asyncio.get_running_loop()
        call = functools.partial(self._guarded, fn, args, write)
        return await loop.run_in_executor(self._executor, call)

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
        self._indexes.clear()
        if executor is not None and conn is not None:
            loop = asyncio.get_running_loop()
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

    # -- change tracking ------------------------------------------------------------------------

    @staticmethod
    def _read_generation(conn: sqlite3.Connection) -> int:
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump_generation(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
        )

    def _refresh(self) -> None:
        """Drop cached matrices if another process changed the store since we last looked."""
        conn = self._db
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return
        self._data_version = version
        generation = self._read_generation(conn)
        if generation != self._generation:
            self._generation = generation
            if self._indexes:
                logger.debug("memory.sqlite.refresh", extra={"path": str(self._path)})
            self._indexes.clear()
            self._cache.clear()

    def _index_for(self, agent_id: str) -> AgentIndex:
        """The vector matrix of an agent's private memories, or of shared knowledge (SHARED_KEY)."""
        index = self._indexes.get(agent_id)
        if index is not None:
            return index
        scope, scope_params = _scope_sql(agent_id)
        rows = self._db.execute(
            "SELECT m.rowid, m.category, m.created_at, COALESCE(m.valid_from, m.created_at),"
            " m.valid_to, m.expires_at, m.superseded_by IS NOT NULL, v.vector"
            " FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid"
            f" WHERE {scope} ORDER BY m.rowid",
            scope_params,
        ).fetchall()
        dim = self._embedder.dimension
        index = AgentIndex(dim, capacity=len(rows))
        if rows:
            blob = b"".join(r[7] for r in rows)
            vectors = np.frombuffer(blob, dtype="<f4").reshape(len(rows), dim)
            index.add([self._index_row(r) for r in rows], vectors)
        self._indexes[agent_id] = index
        return index

    @staticmethod
    def _index_row(r: Sequence[Any]) -> IndexRow:
        return IndexRow(
            rowid=r[0],
            category=_CATEGORY_CODE[MemoryCategory(r[1])],
            created_us=r[2],
            start_us=r[3],
            valid_to_us=NEVER if r[4] is None else r[4],
            expires_us=NEVER if r[5] is None else r[5],
            superseded=bool(r[6]),
        )

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
        inserted: list[tuple[str | None, IndexRow, int]] = []
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
                        json.dumps(m.extra, sort_keys=True),
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
                conn.execute(
                    "INSERT INTO memories_fts (rowid, body, scope_key) VALUES (?, ?, ?)",
                    (rowid, index_text(lexical_text(e)), _fts_scope_key(e.agent_id, e.scope)),
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
                inserted.append((_index_key(e.agent_id, e.scope.value, e.retracted_at), row, i))
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
        # The transaction committed: mirror it in the loaded matrices (unloaded ones load later).
        by_agent: dict[str, list[tuple[IndexRow, int]]] = {}
        for agent, row, i in inserted:
            if agent is not None:
                by_agent.setdefault(agent, []).append((row, i))
        for agent, items in by_agent.items():
            index = self._indexes.get(agent)
            if index is not None:
                index.add([r for r, _ in items], vectors[[i for _, i in items]])
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
        """Delete one memory of the agent (its vector, tags and FTS row go with it)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()

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
        """Delete every memory of the agent (of one category) in one transaction."""
        agent = check_agent(agent_id)
        self._require_connected()

        def run() -> int:
            self._refresh()
            with self._transaction() as conn:
                if category is None:
                    rows = conn.execute(
                        "SELECT rowid FROM memories WHERE agent_id = ? AND scope = 'private'",
                        (agent,),
                    ).fetchall()
                else:
                    rows = conn.execute(
                        "SELECT rowid FROM memories"
                        " WHERE agent_id = ? AND scope = 'private' AND category = ?",
                        (agent, category.value),
                    ).fetchall()
                rowids = [r[0] for r in rows]
                self._delete_rows(conn, rowids)
                if rowids:
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

    async def count(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Number of stored memories of the agent."""
        agent = check_agent(agent_id)
        self._require_connected()

        def run() -> int:
            if category is None:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM memories WHERE agent_id = ? AND scope = 'private'",
                    (agent,),
                ).fetchone()
            else:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM memories"
                    " WHERE agent_id = ? AND scope = 'private' AND category = ?",
                    (agent, category.value),
                ).fetchone()
            return int(row[0])

        return await self._run(run)

    async def list_entries(
        self, agent_id: str, query: MemoryQuery, *, offset: int = 0
    ) -> list[MemoryEntry]:
        """Entries passing the filters, newest first."""
        agent = check_agent(agent_id)
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

    async def _candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        return await self._run(self._candidates_sync, agent_id, query, vector, terms, pool, now)

    def _candidates_sync(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
        exclude_agent: str | None = None,
    ) -> CandidateSet:
        """Candidates among the agent's private entries, or shared ones if ``agent_id`` is
        ``SHARED_KEY`` (minus ``exclude_agent``'s)."""
        self._refresh()
        conn = self._db
        now_us = to_us(now)
        where, params = _where(query, now_us)
        scope, scope_params = _scope_sql(agent_id, exclude_agent)
        dense: list[tuple[int, float]] = []
        if vector is not None:
            index = self._index_for(agent_id)
            allowed = None
            if query.tags or query.label is not None:
                rows = conn.execute(
                    f"SELECT m.rowid FROM memories m WHERE {scope} AND {where}",
                    [*scope_params, *params],
                ).fetchall()
                allowed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            mask = index.mask(
                now_us=now_us,
                categories=None
                if query.categories is None
                else [_CATEGORY_CODE[c] for c in query.categories],
                since_us=None if query.since is None else to_us(query.since),
                until_us=None if query.until is None else to_us(query.until),
                as_of_us=None if query.as_of is None else to_us(query.as_of),
                include_superseded=query.include_superseded,
                allowed_rowids=allowed,
            )
            if exclude_agent is not None and allowed is None:
                # The shared matrix holds every author; mask out the excluded one's rows.
                excluded = conn.execute(
                    "SELECT rowid FROM memories WHERE agent_id = ? AND scope = 'shared'",
                    (exclude_agent,),
                ).fetchall()
                if excluded:
                    gone = np.fromiter((r[0] for r in excluded), dtype=np.int64)
                    mask &= ~np.isin(index.rowids[: index.n], gone)
            dense = index.search(vector, mask, pool)
        lexical: list[tuple[int, float]] = []
        terms = self._prune_terms(terms)
        if terms:
            key = "shared" if agent_id == SHARED_KEY else _fts_scope_key(agent_id)
            # The scope key narrows the match inside FTS5 (weight 0: it never scores); the
            # join still checks scope and filters exactly.
            rows = conn.execute(
                "SELECT m.rowid, bm25(memories_fts, 1.0, 0.0) AS s FROM memories_fts"
                " JOIN memories m ON m.rowid = memories_fts.rowid"
                f" WHERE memories_fts MATCH ? AND {scope} AND {where}"
                " ORDER BY s, m.rowid DESC LIMIT ?",
                [
                    f'scope_key : "{key}" AND body : ({_fts_query(terms)})',
                    *scope_params,
                    *params,
                    pool,
                ],
            ).fetchall()
            # FTS5's bm25() is negated so that ORDER BY ascending puts the best first.
            lexical = [(int(r[0]), -float(r[1])) for r in rows]
        by_rowid = self._load_rows({r for r, _ in dense} | {r for r, _ in lexical})
        cands = CandidateSet(query_vector=vector)
        cands.dense = [(by_rowid[r].id, s) for r, s in dense if r in by_rowid]
        cands.lexical = [(by_rowid[r].id, s) for r, s in lexical if r in by_rowid]
        cands.entries = {e.id: e for e in by_rowid.values()}
        loaded = self._indexes.get(agent_id) if vector is not None else None
        if loaded is not None:
            for rowid, entry in by_rowid.items():
                vec = loaded.vector(rowid, copy=False)
                if vec is not None:
                    cands.vectors[entry.id] = vec
        return cands

    def _prune_terms(self, terms: list[str]) -> list[str]:
        """Apply :func:`prune_common_terms` with this store's FTS statistics."""
        if len(terms) < 2:
            return terms
        conn = self._db
        if self._fts_count_generation != self._generation:
            # FTS5 counts every indexed row (all agents), as its bm25() does.
            self._fts_count = int(conn.execute("SELECT COUNT(*) FROM memories_fts").fetchone()[0])
            self._fts_count_generation = self._generation
        if self._fts_count < PRUNE_MIN_DOCS:
            return terms
        marks = ",".join("?" * len(terms))
        freq = dict(
            conn.execute(
                f"SELECT term, doc FROM memories_fts_vocab WHERE term IN ({marks})", terms
            ).fetchall()
        )
        return prune_common_terms(terms, freq, self._fts_count)

    def _load_rows(self, rowids: Iterable[int]) -> dict[int, MemoryEntry]:
        """Entries by rowid, from the cache where possible, else from one query per page."""
        out: dict[int, MemoryEntry] = {}
        missing: list[int] = []
        for rowid in rowids:
            cached = self._cache.get(rowid)
            if cached is None:
                missing.append(rowid)
            else:
                out[rowid] = cached
        for start in range(0, len(missing), _PAGE):
            chunk = missing[start : start + _PAGE]
            marks = ",".join("?" * len(chunk))
            for row in self._db.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid IN ({marks})", chunk
            ):
                entry = _row_entry(row)
                self._cache.put(row[0], entry)
                out[row[0]] = entry
        return out

    async def _adjacent(
        self, agent_id: str, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        return await self._run(self._adjacent_sync, agent_id, list(ids), hops)

    def _adjacent_sync(
        self, agent_id: str, ids: list[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        self._refresh()
        index = self._index_for(agent_id)
        marks = ",".join("?" * len(ids))
        # Looked up by id (unique index), then kept if the row is in this matrix: a WHERE on
        # agent/scope lets the planner pick the scope index and scan every private row.
        own = {
            r[0]: r[1]
            for r in self._db.execute(
                "SELECT m.id, m.rowid, m.agent_id, m.scope, m.retracted_at FROM memories m"
                f" WHERE m.id IN ({marks})",
                ids,
            )
            if _index_key(r[2], r[3], r[4]) == agent_id
        }
        sides = {entry_id: index.adjacent(rowid, hops) for entry_id, rowid in own.items()}
        by_rowid = self._load_rows({r for b, a in sides.values() for r in (*b, *a)})
        return {
            entry_id: (
                [by_rowid[r] for r in before if r in by_rowid],
                [by_rowid[r] for r in after if r in by_rowid],
            )
            for entry_id, (before, after) in sides.items()
        }

    async def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all), oldest first, read in pages."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        last: tuple[int, str] = (-(2**62), "")
        while True:

            def page(after: tuple[int, str] = last) -> list[MemoryEntry]:
                sql = f"SELECT {_COLUMNS} FROM memories m WHERE (m.created_at, m.id) > (?, ?)"
                params: list[Any] = [after[0], after[1]]
                if agent is not None:
                    sql += " AND m.agent_id = ?"
                    params.append(agent)
                sql += " ORDER BY m.created_at, m.id LIMIT ?"
                params.append(_PAGE)
                return [_row_entry(r) for r in self._db.execute(sql, params)]

            rows = await self._run(page)
            for entry in rows:
                yield entry
            if len(rows) < _PAGE:
                return
            last = (to_us(rows[-1].created_at), rows[-1].id)

    async def agent_ids(self) -> list[str]:
        """Every agent id with at least one memory."""
        rows = await self._run(
            lambda: self._db.execute(
                "SELECT DISTINCT agent_id FROM memories ORDER BY agent_id"
            ).fetchall()
        )
        return [r[0] for r in rows]

    async def stats(self) -> StoreStats:
        """Counts and file size."""

        def run() -> StoreStats:
            conn = self._db
            by_cat = Counter(
                dict(conn.execute("SELECT category, COUNT(*) FROM memories GROUP BY category"))
            )
            agents = conn.execute("SELECT COUNT(DISTINCT agent_id) FROM memories").fetchone()[0]
            size = sum(
                p.stat().st_size for p in (self._path, Path(f"{self._path}-wal")) if p.exists()
            )
            return StoreStats(
                backend=self.backend_name,
                location=str(self._path),
                total=sum(by_cat.values()),
                by_category=dict(by_cat),
                agents=int(agents),
                embedding_model=self._embedder.model_id,
                dimension=self._embedder.dimension,
                size_bytes=size,
            )

        return await self._run(run)

    # -- bulk transfer (``memvault migrate``) ---------------------------------------------------

    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``ids`` (any agent), bit-exact; unknown ids are left out."""
        self._require_connected()
        wanted = list(dict.fromkeys(ids))

        def run() -> dict[str, Vectors]:
            out: dict[str, Vectors] = {}
            for start in range(0, len(wanted), _PAGE):
                chunk = wanted[start : start + _PAGE]
                rows = self._db.execute(
                    "SELECT m.id, v.vector FROM memories m"
                    " JOIN memory_vectors v ON v.memory_rowid = m.rowid"
                    f" WHERE m.id IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                for mid, blob in rows:
                    # Copied out of the BLOB's buffer: callers may keep or modify the arrays.
                    out[mid] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            return out

        return await self._run(run)

    async def export_in_storage_order(
        self, agent_id: str | None = None
    ) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all) in insertion (rowid) order, read in pages."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        last = 0
        while True:

            def page(after: int = last) -> list[tuple[int, MemoryEntry]]:
                sql = f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid > ?"
                params: list[Any] = [after]
                if agent is not None:
                    sql += " AND m.agent_id = ?"
                    params.append(agent)
                sql += " ORDER BY m.rowid LIMIT ?"
                params.append(_PAGE)
                return [(int(r[0]), _row_entry(r)) for r in self._db.execute(sql, params)]

            rows = await self._run(page)
            for _, entry in rows:
                yield entry
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]

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
    ) -> list[AuditRecord]:
        def run() -> list[AuditRecord]:
            sql = "SELECT id, at, actor, action, agent_id, memory_id, details FROM audit WHERE 1=1"
            params: list[Any] = []
            if memory_id is not None:
                sql += " AND memory_id = ?"
                params.append(memory_id)
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
