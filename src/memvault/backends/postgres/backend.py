"""The scale-out backend: PostgreSQL through a psycopg 3 async pool, pgvector for dense search.

Dense search walks pgvector's HNSW cosine index (``ORDER BY embedding <=> q LIMIT pool``) or, for
small or highly filtered agents where HNSW's post-filtering would lose rows, scans the agent's
rows exactly. Lexical search ranks like SQLite's FTS5 ``bm25()``, to the bit: candidates come from
a GIN index over a ``tsvector`` of the analysed terms, and the score is FTS5's formula evaluated
in SQL over collection statistics (rows, total length, document frequencies) that are kept in
the same transactions as the rows. So a store moved from SQLite to PostgreSQL ranks the same.

Every psycopg error is translated at one boundary (:meth:`PostgresBackend._guard`) into the
memvault error tree; nothing psycopg-specific escapes.

This module holds the class: pool, error boundary, lifecycle, and the writes and reads of
private memory rows. The class mixes in the rest, kept in modules of their own to keep each
file readable: schema setup and migrations (:mod:`._migrate`), candidate search
(:mod:`._candidates`), shared knowledge, the audit log and the archive (:mod:`._side`), exports
and statistics (:mod:`._export`); SQL statements and row conversion are in :mod:`._rows`, and
the driver is imported in :mod:`._driver`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from memvault.backends._base import (
    CLEAR,
    DELETE,
    BaseBackend,
    Supersede,
    Vectors,
    append_only_error,
    check_agent,
    check_id,
    check_times,
    lexical_text,
)
from memvault.backends._common import check_filters, metadata_json, static_blobs, with_filters
from memvault.backends.postgres._candidates import PostgresCandidatesMixin
from memvault.backends.postgres._driver import (
    AsyncConnectionPool,
    Conn,
    Jsonb,
    conninfo_to_dict,
    pg_errors,
    psycopg,
    sql,
)
from memvault.backends.postgres._dsn import check_schema, parse_dsn, scrub
from memvault.backends.postgres._export import PostgresExportMixin
from memvault.backends.postgres._migrate import PostgresMigrateMixin
from memvault.backends.postgres._reindex import PostgresReindexMixin
from memvault.backends.postgres._rows import (
    _AGENT_DELTAS,
    _COLUMNS,
    _DELETE,
    _INSERT,
    _PAGE,
    _PRIVATE_SCOPE,
    _TERM_DELTAS,
    _analysed,
    _filters_sql,
    _insert_audit,
    _row_entry,
    _vector_literal,
    _where,
)
from memvault.backends.postgres._side import PostgresSideMixin
from memvault.backends.postgres.schema import SCHEMA_VERSION
from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
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
from memvault.retrieval.bm25 import PRUNE_MIN_DOCS

__all__ = ["PostgresBackend"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


async def _drop_graph_mentions(conn: Conn, agent_id: str, cond: str, params: Sequence[Any]) -> None:
    """Drop the graph mentions of the memories ``cond`` is about to delete, in its transaction.

    Only when graph memory made its tables in this schema (memvault.graph.store). Entities and
    edges stay (facts, not memories); archived memories keep their mentions, which graph reads
    skip while the memory is not live and which count again once it is restored.
    """
    cur = await conn.execute("SELECT to_regclass('graph_mentions')")
    found = await cur.fetchone()
    if found is None or found[0] is None:
        return
    await conn.execute(
        "DELETE FROM graph_mentions g WHERE g.agent_id = %s"
        f" AND g.memory_id IN (SELECT m.id FROM memories m WHERE {cond})",
        [agent_id, *params],
    )


# SQLSTATE classes/codes that mean the server or the connection is gone, not that the statement
# was wrong: 08 connection exception, 57P0x shutdown / cannot connect now, 53300 too many
# connections.
_CONNECTION_STATES = ("08", "57P01", "57P02", "57P03", "53300")
_RETRIES = 3


def _is_connection_error(exc: psycopg.Error) -> bool:
    if isinstance(exc, psycopg.InterfaceError):
        return True
    state = exc.sqlstate
    if state is None:
        # Raised by the client, not the server: connection refused or lost, pool timeout.
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith(_CONNECTION_STATES)


REPLICA_RETRY_SECONDS = 5.0
"""How long reads stay on the primary after the replica could not be reached."""
# Writes a client never reads back (access counts behind searches): they do not hold the
# writer's reads on the primary.
_UNTRACKED_WRITES = frozenset({"record access"})


class PostgresBackend(
    PostgresReindexMixin,
    PostgresSideMixin,
    PostgresExportMixin,
    PostgresCandidatesMixin,
    PostgresMigrateMixin,
    BaseBackend,
):
    """memvault's store in PostgreSQL with pgvector (see the module docstring).

    Args:
        url: ``postgresql://user:password@host:port/db`` (may add ``?schema=name``) or a libpq
            key/value string.
        embedder: the embedder to index with; its model id and dimension are recorded.
        schema: the schema holding the tables (created if missing); one schema per tenant
            isolates tenants in one database.
        pool_min: connections kept open however idle (default 0: a store nobody uses holds
            none, so a server can keep thousands of tenants' stores open on one database;
            connections above it close after ``pool_idle_seconds`` unused).
        pool_idle_seconds: how long an unused connection above ``pool_min`` is kept.
        pool_max: most connections opened at once.
        hnsw: build and use the HNSW index; without it every dense search is exact.
        index_build_memory: ``maintenance_work_mem`` while the HNSW index is built.
        exact_below: agents with at most this many rows are searched exactly (faster than the
            index at that size, and never misses a row).
        lexical_scan_rows: in stores of ``lexical_bound_min_rows`` rows or more, the most rows
            a BM25 search scores by matching query terms (0: no bound). Beyond it, the rows of
            the rarest terms that fit, rows with two of the other terms (within the bound) and
            the dense candidates are scored: a term in 10% of a million rows would otherwise
            cost a heap fetch per row (most of a second). Scores are unchanged; rows matching a
            single common query term and nothing else can be missed.
        lexical_bound_min_rows: the store size from which ``lexical_scan_rows`` applies
            (default 20,000, the size from which common query terms are dropped as well):
            smaller stores score every match, as SQLite does.
        connect_timeout: seconds to wait for the server when connecting.
        read_url: a streaming replica of the same database (``storage.read_url``): searches,
            lists, counts and gets go there, writes to the primary. Read-your-writes: after a
            write through this backend its reads stay on the primary until the replica has
            replayed that write's WAL position (one ``pg_last_wal_replay_lsn()`` per read
            while it has not); a replica that cannot be reached is left alone for
            :data:`REPLICA_RETRY_SECONDS` and reads fall back to the primary, the read in
            flight included. The replica is used in this backend's own schema.
        **kwargs: :class:`~memvault.backends._base.BaseBackend` options.
    """

    backend_name = "postgresql"
    _implements_shared = True
    _audits_deletes = True

    def __init__(
        self,
        url: str,
        embedder: Embedder,
        *,
        schema: str = "public",
        pool_min: int = 0,
        pool_max: int = 10,
        hnsw: bool = True,
        exact_below: int = 2_000,
        lexical_scan_rows: int = 5_000,
        lexical_bound_min_rows: int = PRUNE_MIN_DOCS,
        index_build_memory: str = "1GB",
        connect_timeout: float = 10.0,
        read_url: str | None = None,
        pool_idle_seconds: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(embedder, **kwargs)
        self._dsn = parse_dsn(url)
        self._read_dsn = None if not read_url else parse_dsn(read_url)
        self._replica: AsyncConnectionPool[Conn] | None = None
        self._replica_down_until = 0.0
        self._write_lsn: str | None = None
        self.read_routes: Counter[str] = Counter()
        """Where reads went: ``replica``, ``primary (lag)`` (the replica had not replayed this
        backend's last write yet), ``primary (replica down)``; empty without a replica."""
        if self._dsn.schema is not None and schema not in ("public", self._dsn.schema):
            msg = f"schema {schema!r} conflicts with schema={self._dsn.schema!r} in the URL"
            raise MemoryConfigError(msg)
        self._schema = check_schema(self._dsn.schema or schema)
        if not (0 <= pool_min <= pool_max and pool_max >= 1):
            msg = (
                f"need 0 <= pool_min <= pool_max and pool_max >= 1, got pool_min={pool_min}, "
                f"pool_max={pool_max}"
            )
            raise MemoryConfigError(msg)
        self._pool_min = pool_min
        self._pool_idle = pool_idle_seconds
        self._pool_max = pool_max
        self._hnsw = hnsw
        self._exact_below = max(0, exact_below)
        self._lexical_scan_rows = max(0, lexical_scan_rows)
        self._lexical_bound_min_rows = max(0, lexical_bound_min_rows)
        if not re.fullmatch(r"\d+\s*(kB|MB|GB)", index_build_memory):
            msg = f"index_build_memory must look like '512MB' or '2GB', got {index_build_memory!r}"
            raise MemoryConfigError(msg)
        self._index_build_memory = index_build_memory
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._search_path: sql.Composable | None = None
        if self._dsn.schema is None and self._schema != "public":
            # Show the schema in the location: two stores in one database are different stores.
            sep = "&" if "?" in self._dsn.location else "?"
            self._location = f"{self._dsn.location}{sep}schema={self._schema}"
        else:
            self._location = self._dsn.location

    @property
    def location(self) -> str:
        """The URL without password (with ``schema=`` unless it is ``public``)."""
        return self._location

    @property
    def schema(self) -> str:
        """The schema holding this store's tables."""
        return self._schema

    @property
    def supports_graph(self) -> bool:
        """An entity graph can be kept beside the memories (side tables, ``graph.enabled``)."""
        return True

    # -- plumbing -------------------------------------------------------------------------------

    def _message(self, exc: BaseException) -> str:
        return scrub(str(exc).strip(), self._dsn.secrets)

    def _translate(
        self, exc: psycopg.Error, op: str, *, write: bool, connecting: bool
    ) -> MemoryError:
        text = self._message(exc)
        if _is_connection_error(exc):
            verb = "cannot connect to" if connecting else "lost"
            return MemoryConnectionError(f"{verb} PostgreSQL store {self.location}: {text}")
        if connecting:
            # Opening includes migrating: a store that cannot be prepared cannot be used.
            return MemoryConnectionError(f"cannot open memvault store {self.location}: {text}")
        if write:
            return MemoryStoreError(f"PostgreSQL {op} in {self.location} failed: {text}")
        return MemoryRetrievalError(f"PostgreSQL {op} in {self.location} failed: {text}")

    @contextlib.asynccontextmanager
    async def _guard(
        self, op: str, *, write: bool = False, connecting: bool = False
    ) -> AsyncIterator[None]:
        """The error boundary: psycopg errors become memvault errors here, and only here.

        Connection trouble is :class:`MemoryConnectionError`; anything else is
        :class:`MemoryStoreError` for writes and :class:`MemoryRetrievalError` for reads, or
        :class:`MemoryConnectionError` again while connecting. Messages never hold the password.
        """
        try:
            yield
        except MemoryError:
            raise
        except psycopg.Error as exc:
            raise self._translate(exc, op, write=write, connecting=connecting) from exc

    @contextlib.asynccontextmanager
    async def _connection(self, op: str, *, write: bool = False) -> AsyncIterator[Conn]:
        """A pooled connection (autocommit), inside the error boundary."""
        pool = self._pool
        if pool is None or not self._connected:
            msg = "postgresql backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        async with self._guard(op, write=write), pool.connection() as conn:
            yield conn

    async def _write(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn`` in one transaction; retried when PostgreSQL picks it as deadlock victim."""
        pool = self._pool
        if pool is None or not self._connected:
            msg = "postgresql backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        async with self._guard(op, write=True):
            for attempt in range(_RETRIES):
                try:
                    async with pool.connection() as conn:
                        async with conn.transaction():
                            done = await fn(conn)
                        if self._read_dsn is not None and op not in _UNTRACKED_WRITES:
                            # After the commit: a replica at this position has replayed it.
                            cur = await conn.execute("SELECT pg_current_wal_insert_lsn()::text")
                            row = await cur.fetchone()
                            self._write_lsn = None if row is None else str(row[0])
                        return done
                except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                    if attempt == _RETRIES - 1:
                        raise
                    await asyncio.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _read(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run the read ``fn`` on the replica when it may answer, else on the primary.

        See ``read_url`` in the class docstring. A replica failure never fails the read: it
        runs again on the primary.
        """
        replica = self._replica
        if replica is not None:
            if time.monotonic() < self._replica_down_until:
                self.read_routes["primary (replica down)"] += 1
            else:
                try:
                    async with self._guard(op), replica.connection(timeout=1.0) as conn:
                        if await self._replayed(conn):
                            found = await fn(conn)
                            self.read_routes["replica"] += 1
                            return found
                    self.read_routes["primary (lag)"] += 1
                except MemoryConnectionError as exc:
                    self._replica_down_until = time.monotonic() + REPLICA_RETRY_SECONDS
                    self.read_routes["primary (replica down)"] += 1
                    logger.warning(
                        "memory.replica.down",
                        extra={"location": self.location, "error": str(exc)},
                    )
        async with self._connection(op) as conn:
            return await fn(conn)

    async def _replayed(self, conn: Conn) -> bool:
        """True if the replica has replayed this backend's last tracked write."""
        wanted = self._write_lsn
        if wanted is None:
            return True
        cur = await conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [wanted])
        row = await cur.fetchone()
        if row is not None and row[0]:
            if self._write_lsn == wanted:
                self._write_lsn = None  # replayed: later reads need not ask until a new write
            return True
        return False

    async def _configure(self, conn: Conn) -> None:
        """Session settings of every pooled connection."""
        assert self._search_path is not None  # set by connect() before the pool opens
        # jit off: JIT compilation adds tens of milliseconds to exactly the big scans that
        # latency-sensitive searches run, for no gain at this query size.
        await conn.execute(
            sql.SQL("SET search_path TO {}; SET TIME ZONE 'UTC'; SET jit = off").format(
                self._search_path
            )
        )

    # -- lifecycle ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect, create the schema and tables if needed, and check the embedding model."""
        if self._connected:
            return
        async with self._guard("connect", connecting=True):
            conn = await psycopg.AsyncConnection.connect(
                self._dsn.conninfo, autocommit=True, **self._connect_kwargs()
            )
            try:
                await self._migrate(conn)
            finally:
                await conn.close()
            pool = self._new_pool(self._dsn.conninfo, f"memvault:{self._schema}")
            try:
                await pool.open(wait=True, timeout=self._connect_timeout)
            except BaseException:
                await pool.close()
                raise
        self._pool = pool
        if self._read_dsn is not None:
            # Opened without waiting: a replica that is down must not stop the store opening
            # (reads use the primary until it answers).
            replica = self._new_pool(
                self._read_dsn.conninfo, f"memvault-replica:{self._schema}", reconnect_timeout=0
            )
            await replica.open(wait=False)
            self._replica = replica
        self._connected = True
        logger.info("memory.connect", extra={"backend": "postgresql", "location": self.location})

    def _new_pool(self, conninfo: str, name: str, **extra: Any) -> AsyncConnectionPool[Conn]:
        """A (not yet open) pool of autocommit connections set up by :meth:`_configure`."""
        return AsyncConnectionPool(
            conninfo,
            min_size=self._pool_min,
            max_size=self._pool_max,
            max_idle=self._pool_idle,
            open=False,
            kwargs={"autocommit": True, **self._connect_kwargs()},
            configure=self._configure,
            name=name,
            **extra,
        )

    def _connect_kwargs(self) -> dict[str, Any]:
        """libpq options memvault sets unless the URL sets them itself."""
        given = conninfo_to_dict(self._dsn.conninfo)
        # libpq takes whole seconds (and treats 1 as 2); never 0, which means "wait forever".
        defaults: dict[str, Any] = {
            "connect_timeout": max(2, math.ceil(self._connect_timeout)),
            # Names memvault's sessions in pg_stat_activity (monitoring, killing stuck queries).
            "application_name": "memvault",
        }
        return {k: v for k, v in defaults.items() if k not in given}

    async def disconnect(self) -> None:
        """Close every pooled connection (idempotent)."""
        if not self._connected:
            return
        self._connected = False
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        replica, self._replica = self._replica, None
        if replica is not None:
            await replica.close()

    async def health_check(self) -> bool:
        """True if ``SELECT 1`` answers."""
        if not self._connected:
            return False
        try:
            async with self._connection("health check") as conn:
                cur = await conn.execute("SELECT 1")
                row = await cur.fetchone()
            return row is not None and row[0] == 1
        except MemoryError:
            return False

    async def schema_version(self) -> int:
        """The schema version recorded in ``store_meta``."""
        async with self._connection("read") as conn:
            cur = await conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'")
            row = await cur.fetchone()
        return int(row[0]) if row else SCHEMA_VERSION

    # -- writes ---------------------------------------------------------------------------------

    async def _insert(
        self, entries: Sequence[MemoryEntry], vectors: Vectors, supersedes: Sequence[Supersede]
    ) -> None:
        await self._insert_rows(entries, vectors, supersedes, ())

    async def _insert_rows(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        """Insert entries, apply supersessions and write audit records in one transaction."""
        rows: list[tuple[Any, ...]] = []
        analysed: dict[str, tuple[str, Counter[str], int]] = {}
        shared_ids = {e.id for e in entries if e.scope is MemoryScope.SHARED}
        statics = static_blobs([e.content for e in entries])
        for i, e in enumerate(entries):
            m = e.metadata
            freqs, length = _analysed(lexical_text(e))
            analysed[e.id] = (e.agent_id, freqs, length)
            rows.append(
                (
                    e.id,
                    e.agent_id,
                    e.category.value,
                    e.content,
                    list(m.tags),
                    m.label,
                    m.source,
                    m.confidence,
                    m.importance,
                    metadata_json(m.extra),
                    e.scope.value,
                    e.created_at,
                    e.updated_at,
                    e.expires_at,
                    e.valid_from,
                    e.valid_to,
                    e.superseded_by,
                    e.consolidated_at,
                    e.access_count,
                    e.last_accessed_at,
                    e.retracted_at,
                    _vector_literal(vectors[i]),
                    sorted(freqs),
                    Jsonb(dict(freqs)),
                    length,
                    None if statics is None else statics[i],
                )
            )

        async def run(conn: Conn) -> None:
            inserted: list[str] = []
            async with conn.cursor() as cur:
                await cur.executemany(_INSERT, rows, returning=True)
                while True:
                    inserted.extend(r[0] for r in await cur.fetchall())
                    if not cur.nextset():
                        break
            for s in supersedes:
                await conn.execute(
                    "UPDATE memories SET valid_to = %s, superseded_by = %s, updated_at = %s"
                    " WHERE id = %s",
                    [s.when, s.new_id, s.when, s.old_id],
                )
            terms: Counter[str] = Counter()
            agents: Counter[str] = Counter()
            total_len = 0
            for mid in inserted:  # ids that already existed were skipped by ON CONFLICT
                agent, freqs, length = analysed[mid]
                terms.update(freqs.keys())
                agents[agent] += 1
                total_len += length
            await self._apply_stats(conn, terms, agents, len(inserted), total_len)
            shared = sum(1 for mid in inserted if mid in shared_ids)
            if shared:
                await conn.execute(
                    "UPDATE store_stats SET shared_n = shared_n + %s WHERE id = 1", [shared]
                )
            await _insert_audit(conn, audit)

        await self._write("insert", run)

    @staticmethod
    async def _apply_stats(
        conn: Conn, terms: Counter[str], agents: Counter[str], rows: int, total_len: int
    ) -> None:
        """Add (or, with negative counts, remove) rows to the collection statistics."""
        if terms:
            keys = sorted(terms)
            await conn.execute(_TERM_DELTAS, [keys, [terms[k] for k in keys]])
        if agents:
            names = sorted(agents)
            await conn.execute(_AGENT_DELTAS, [names, [agents[a] for a in names]])
            if any(agents[a] < 0 for a in names):
                await conn.execute(
                    "DELETE FROM agent_stats WHERE agent_id = ANY(%s::text[]) AND n <= 0", [names]
                )
        if rows or total_len:
            await conn.execute(
                "UPDATE store_stats SET n = n + %s, total_len = total_len + %s WHERE id = 1",
                [rows, total_len],
            )

    async def _delete_where(self, conn: Conn, cond: str, params: Sequence[Any]) -> int:
        """Delete the matching rows and their share of the statistics; returns how many."""
        cur = await conn.execute(_DELETE.format(cond=cond), params)
        row = await cur.fetchone()
        assert row is not None
        count, total_len, terms, dfs, agents, ns = row
        if not count:
            return 0
        await self._apply_stats(
            conn,
            Counter(dict(zip(terms, (-d for d in dfs), strict=True))),
            Counter(dict(zip(agents, (-n for n in ns), strict=True))),
            -int(count),
            -int(total_len),
        )
        return int(count)

    async def _existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        async with self._connection("read") as conn:
            for start in range(0, len(ids), _PAGE):
                cur = await conn.execute(
                    "SELECT id FROM memories WHERE id = ANY(%s::text[])",
                    [list(ids[start : start + _PAGE])],
                )
                found.update(r[0] for r in await cur.fetchall())
        return found

    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory of the agent (its lexical statistics go with it).

        The ``memory.delete`` audit record commits in the same transaction.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        audit = self._deletion_audit(agent)

        async def run(conn: Conn) -> int:
            cur = await conn.execute(
                "SELECT scope FROM memories WHERE id = %s AND agent_id = %s", [mid, agent]
            )
            found = await cur.fetchone()
            if found is None:
                return 0
            if found[0] != MemoryScope.PRIVATE.value:
                raise append_only_error(mid)
            cond = "m.id = %s AND m.agent_id = %s"
            await _drop_graph_mentions(conn, agent, cond, [mid, agent])
            done = await self._delete_where(conn, cond, [mid, agent])
            if done:
                await _insert_audit(conn, [audit(DELETE, mid, {})])
            return done

        return await self._write("delete", run) > 0

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category) in one transaction.

        The ``memory.clear`` audit record (when anything was deleted) commits with it.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        audit = self._deletion_audit(agent)
        what = {"category": None if category is None else category.value}

        async def run(conn: Conn) -> int:
            # Private rows only: shared knowledge is append-only (retract, never delete).
            if category is None:
                await _drop_graph_mentions(conn, agent, _PRIVATE_SCOPE, [agent])
                done = await self._delete_where(conn, _PRIVATE_SCOPE, [agent])
            else:
                cond = f"{_PRIVATE_SCOPE} AND m.category = %s"
                await _drop_graph_mentions(conn, agent, cond, [agent, category.value])
                done = await self._delete_where(conn, cond, [agent, category.value])
            if done:
                await _insert_audit(conn, [audit(CLEAR, None, {"count": done, **what})])
            return done

        return await self._write("clear", run)

    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Bump access counters of the agent's entries among ``ids``."""
        agent = check_agent(agent_id)
        times = check_times(times)
        if not ids:
            return

        async def run(conn: Conn) -> None:
            # Through _write for its deadlock retry: concurrent bumps of overlapping id sets
            # lock the same rows in different orders.
            await conn.execute(
                "UPDATE memories SET access_count = access_count + %s, last_accessed_at = %s"
                " WHERE agent_id = %s AND id = ANY(%s::text[])",
                [times, when, agent, list(ids)],
            )

        await self._write("record access", run)

    async def mark_consolidated(self, agent_id: str, ids: Sequence[str], when: datetime) -> None:
        """Set ``consolidated_at`` of the agent's entries among ``ids``."""
        agent = check_agent(agent_id)
        if not ids:
            return

        async def run(conn: Conn) -> None:
            await conn.execute(
                "UPDATE memories SET consolidated_at = %s"
                " WHERE agent_id = %s AND id = ANY(%s::text[])",
                [when, agent, list(ids)],
            )

        await self._write("mark consolidated", run)

    # -- reads ----------------------------------------------------------------------------------

    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent, or None (another agent's id gives None too)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()

        async def run(conn: Conn) -> Any:
            cur = await conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.id = %s AND m.agent_id = %s",
                [mid, agent],
            )
            return await cur.fetchone()

        row = await self._read("get", run)
        return None if row is None else _row_entry(row)

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
        query = f"SELECT count(*) FROM memories m WHERE {_PRIVATE_SCOPE}"
        params: list[Any] = [agent]
        if category is not None:
            query += " AND m.category = %s"
            params.append(category.value)
        if wanted:
            cond, values = _filters_sql(wanted)
            query += f" AND {cond}"
            params.extend(values)

        async def run(conn: Conn) -> Any:
            cur = await conn.execute(query, params)
            return await cur.fetchone()

        row = await self._read("count", run)
        return int(row[0]) if row else 0

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
        where, params = _where(query, self._clock())

        async def run(conn: Conn) -> list[Any]:
            cur = await conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE {_PRIVATE_SCOPE} AND {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s",
                [agent, *params, query.limit, offset],
            )
            return list(await cur.fetchall())

        rows = await self._read("list", run)
        return [_row_entry(r) for r in rows]
