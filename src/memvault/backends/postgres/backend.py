"""The scale-out backend: PostgreSQL through a psycopg 3 async pool, pgvector for dense search.

Dense search walks pgvector's HNSW cosine index (``ORDER BY embedding <=> q LIMIT pool``) or, for
small or highly filtered agents where HNSW's post-filtering would lose rows, scans the agent's
rows exactly. Lexical search ranks like SQLite's FTS5 ``bm25()``, to the bit: candidates come from
a GIN index over a ``tsvector`` of the analysed terms, and the score is FTS5's formula evaluated
in SQL over collection statistics (rows, total length, document frequencies) that are kept in
the same transactions as the rows. So a store moved from SQLite to PostgreSQL ranks the same.

Every psycopg error is translated at one boundary (:meth:`PostgresBackend._guard`) into the
memvault error tree; nothing psycopg-specific escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from memvault.backends._base import (
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
from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
)

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import TupleRow
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = (
        'the PostgreSQL backend needs psycopg 3 and psycopg-pool: pip install "memvault[postgres]"'
    )
    raise MemoryConfigError(_msg) from exc

from memvault.backends.postgres._dsn import check_schema, parse_dsn, scrub
from memvault.backends.postgres.schema import (
    HNSW_INDEX,
    MIGRATIONS,
    SCHEMA_VERSION,
    hnsw_index_sql,
    migration_sql,
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
)
from memvault.protocols import Embedder
from memvault.retrieval.bm25 import K1, ROW_EXTRA_TOKENS, B, idf, prune_common_terms
from memvault.retrieval.text import tokenize

__all__ = ["PostgresBackend"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
Conn = psycopg.AsyncConnection[TupleRow]

_COLUMNS = (
    "m.rowid, m.id, m.agent_id, m.category, m.content, m.tags, m.label, m.source, m.confidence,"
    " m.importance, m.extra, m.scope, m.created_at, m.updated_at, m.expires_at, m.valid_from,"
    " m.valid_to, m.superseded_by, m.consolidated_at, m.access_count, m.last_accessed_at,"
    " m.retracted_at"
)
_PAGE = 500
# Longer terms cannot be tsvector lexemes (2 KiB) or btree keys (~2.7 KiB): such "words" (think
# base64 blobs) still count towards the document's length but are not searchable lexically.
_MAX_TERM_BYTES = 2000
# pgvector caps hnsw.ef_search at 1000; a scan needing more is done exactly instead.
_MAX_EF_SEARCH = 1000
_MIN_EF_SEARCH = 40
# One key for every memvault migration in the database: CREATE EXTENSION is database-wide, and
# migrations are rare and quick, so serialising them all costs nothing.
_MIGRATE_LOCK = int.from_bytes(
    hashlib.sha256(b"memvault:postgres:migrate").digest()[:8], "big", signed=True
)
# SQLSTATE classes/codes that mean the server or the connection is gone, not that the statement
# was wrong: 08 connection exception, 57P0x shutdown / cannot connect now, 53300 too many
# connections.
_CONNECTION_STATES = ("08", "57P01", "57P02", "57P03", "53300")
_RETRIES = 3

_EXACT: ContextVar[bool] = ContextVar("memvault_postgres_exact", default=False)

_INSERT = (
    "INSERT INTO memories (id, agent_id, category, content, tags, label, source, confidence,"
    " importance, extra, scope, created_at, updated_at, expires_at, valid_from, valid_to,"
    " superseded_by, consolidated_at, access_count, last_accessed_at, retracted_at, embedding,"
    " lexemes, term_freqs, doc_len) VALUES (%s, %s, %s, %s, %s::text[], %s, %s, %s, %s, %s, %s,"
    " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, array_to_tsvector(%s::text[]), %s, %s)"
    " ON CONFLICT (id) DO NOTHING RETURNING id"
)
# Statistics rows are locked in one global order (terms sorted, then agents sorted, then the
# store row) by every writer, so concurrent writers queue instead of deadlocking.
_TERM_DELTAS = (
    "INSERT INTO term_stats AS t (term, df)"
    " SELECT d.term, d.df FROM unnest(%s::text[], %s::bigint[]) AS d(term, df) ORDER BY d.term"
    " ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df"
)
_AGENT_DELTAS = (
    "INSERT INTO agent_stats AS a (agent_id, n)"
    " SELECT d.agent_id, d.n FROM unnest(%s::text[], %s::bigint[]) AS d(agent_id, n)"
    " ORDER BY d.agent_id"
    " ON CONFLICT (agent_id) DO UPDATE SET n = a.n + excluded.n"
)
_DELETE = (
    "WITH gone AS (DELETE FROM memories m WHERE {cond}"
    " RETURNING m.agent_id, m.doc_len, m.term_freqs),"
    " terms AS (SELECT k.term, count(*) AS df FROM gone,"
    " jsonb_object_keys(gone.term_freqs) AS k(term) GROUP BY k.term),"
    " agents AS (SELECT agent_id, count(*) AS n FROM gone GROUP BY agent_id)"
    " SELECT (SELECT count(*) FROM gone), (SELECT COALESCE(sum(doc_len), 0) FROM gone),"
    " ARRAY(SELECT term FROM terms ORDER BY term), ARRAY(SELECT df FROM terms ORDER BY term),"
    " ARRAY(SELECT agent_id FROM agents ORDER BY agent_id),"
    " ARRAY(SELECT n FROM agents ORDER BY agent_id)"
)
_STATS = (
    "SELECT s.n, s.total_len,"
    " COALESCE((SELECT a.n FROM agent_stats a WHERE a.agent_id = %s), 0),"
    " ARRAY(SELECT COALESCE(t.df, 0) FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)"
    " LEFT JOIN term_stats t ON t.term = q.term ORDER BY q.ord)"
    " FROM store_stats s WHERE s.id = 1"
)
# The same for the shared scope: its row count instead of an agent's.
_SHARED_STATS = (
    "SELECT s.n, s.total_len, s.shared_n,"
    " ARRAY(SELECT COALESCE(t.df, 0) FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)"
    " LEFT JOIN term_stats t ON t.term = q.term ORDER BY q.ord)"
    " FROM store_stats s WHERE s.id = 1"
)
# Which rows a per-scope query covers (alias m). Literals, not parameters, so the planner can
# match the partial indexes on scope = 'shared'.
_PRIVATE_SCOPE = "m.agent_id = %s AND m.scope = 'private'"
_SHARED_SCOPE = "m.scope = 'shared' AND m.retracted_at IS NULL"
# FTS5's bm25(), term for term: score = sum over query terms, in query order, of
#   idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)))
# with the same operation order, so the double-precision result is identical to SQLite's.
# Parameters: k1 + 1, k1, 1 - b, b, extra row tokens, avgdl, terms, idfs, tsquery, scope and
# filters, limit.
_BM25 = (
    "SELECT m.rowid, sum(q.idf * ((q.tf * %s) / (q.tf + %s * (%s + %s * (m.doc_len + %s) / %s)))"
    " ORDER BY q.ord) AS score"
    " FROM memories m CROSS JOIN LATERAL ("
    " SELECT t.ord, t.idf, (m.term_freqs ->> t.term)::float8 AS tf"
    " FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS t(term, idf, ord)) q"
    " WHERE m.lexemes @@ %s::tsquery AND {where} AND q.tf IS NOT NULL"
    " GROUP BY m.rowid ORDER BY score DESC, m.rowid DESC LIMIT %s"
)


def _row_entry(row: Sequence[Any]) -> MemoryEntry:
    # Rows were validated when written; model_construct skips re-validation on the read path.
    meta = MemoryMetadata.model_construct(
        tags=tuple(row[5]),
        label=row[6],
        source=row[7],
        confidence=row[8],
        importance=row[9],
        extra=json.loads(row[10]),
    )
    return MemoryEntry.model_construct(
        id=row[1],
        agent_id=row[2],
        category=MemoryCategory(row[3]),
        content=row[4],
        metadata=meta,
        scope=MemoryScope(row[11]),
        created_at=row[12],
        updated_at=row[13],
        expires_at=row[14],
        valid_from=row[15],
        valid_to=row[16],
        superseded_by=row[17],
        consolidated_at=row[18],
        access_count=row[19],
        last_accessed_at=row[20],
        retracted_at=row[21],
        relevance_score=None,
        score=None,
    )


def _vector_literal(vector: Vectors) -> str:
    # pgvector's text form. repr() of a float32 widened to float64 parses back (strtof) to the
    # very same float32, so vectors arrive bit-exact without a binary dumper or extra package.
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def _vector_from_send(data: bytes) -> Vectors:
    # vector_send(): int16 dimension, int16 unused, then big-endian float32 values.
    return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def _analysed(text: str) -> tuple[Counter[str], int]:
    """Term frequencies (searchable terms only) and length in terms, as FTS5 sees ``text``."""
    terms = tokenize(text)
    freqs = Counter(t for t in terms if len(t.encode()) <= _MAX_TERM_BYTES)
    return freqs, len(terms)


def _tsquery(terms: Sequence[str]) -> str:
    # tsquery input syntax with every term quoted (quotes doubled, backslashes escaped), so no
    # term is ever read as an operator; analysed terms are letters and digits anyway.
    quoted = ("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
    return " | ".join(quoted)


def _where(query: MemoryQuery, now: datetime) -> tuple[str, list[Any]]:
    """SQL filter clauses (on alias ``m``) equivalent to ``MemoryQuery.matches``."""
    clauses = ["(m.expires_at IS NULL OR m.expires_at > %s)"]
    params: list[Any] = [now]
    if query.categories is not None:
        clauses.append("m.category = ANY(%s::text[])")
        params.append(sorted(c.value for c in query.categories))
    if query.since is not None:
        clauses.append("m.created_at >= %s")
        params.append(query.since)
    if query.until is not None:
        clauses.append("m.created_at <= %s")
        params.append(query.until)
    if query.label is not None:
        clauses.append("m.label = %s")
        params.append(query.label)
    if query.tags:
        # Every tag must be present; the GIN index on tags answers @> directly.
        clauses.append("m.tags @> %s::text[]")
        params.append(list(query.tags))
    if query.as_of is not None:
        clauses.append("COALESCE(m.valid_from, m.created_at) <= %s")
        clauses.append("(m.valid_to IS NULL OR m.valid_to > %s)")
        params.extend([query.as_of, query.as_of])
    elif not query.include_superseded:
        clauses.append("m.superseded_by IS NULL AND (m.valid_to IS NULL OR m.valid_to > %s)")
        params.append(now)
    return " AND ".join(clauses), params


async def _insert_archive(
    conn: Conn, records: Sequence[ArchivedEntry], *, ignore: bool = False
) -> int:
    """Write archive rows (in the caller's transaction); returns how many were inserted."""
    inserted = 0
    for r in records:
        cur = await conn.execute(
            "INSERT INTO archive (id, memory_id, agent_id, reason, archived_at, entry)"
            " VALUES (%s, %s, %s, %s, %s, %s)" + (" ON CONFLICT (id) DO NOTHING" if ignore else ""),
            (
                r.archive_id,
                r.memory_id,
                r.agent_id,
                r.reason,
                r.archived_at,
                Jsonb(r.entry.to_json()),
            ),
        )
        inserted += max(cur.rowcount, 0)
    return inserted


async def _insert_audit(conn: Conn, records: Sequence[AuditRecord]) -> None:
    """Write audit records (in the caller's transaction)."""
    if not records:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO audit (id, at, actor, action, agent_id, memory_id, details)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (r.id, r.at, r.actor, r.action, r.agent_id, r.memory_id, Jsonb(r.details))
                for r in records
            ],
        )


def _is_connection_error(exc: psycopg.Error) -> bool:
    if isinstance(exc, psycopg.InterfaceError):
        return True
    state = exc.sqlstate
    if state is None:
        # Raised by the client, not the server: connection refused or lost, pool timeout.
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith(_CONNECTION_STATES)


class PostgresBackend(BaseBackend):
    """memvault's store in PostgreSQL with pgvector (see the module docstring).

    Args:
        url: ``postgresql://user:password@host:port/db`` (may add ``?schema=name``) or a libpq
            key/value string.
        embedder: the embedder to index with; its model id and dimension are recorded.
        schema: the schema holding the tables (created if missing); one schema per tenant
            isolates tenants in one database.
        pool_min: connections kept open.
        pool_max: most connections opened at once.
        hnsw: build and use the HNSW index; without it every dense search is exact.
        index_build_memory: ``maintenance_work_mem`` while the HNSW index is built.
        exact_below: agents with at most this many rows are searched exactly (faster than the
            index at that size, and never misses a row).
        connect_timeout: seconds to wait for the server when connecting.
        **kwargs: :class:`~memvault.backends._base.BaseBackend` options.
    """

    backend_name = "postgresql"
    _implements_shared = True

    def __init__(
        self,
        url: str,
        embedder: Embedder,
        *,
        schema: str = "public",
        pool_min: int = 1,
        pool_max: int = 10,
        hnsw: bool = True,
        exact_below: int = 2_000,
        index_build_memory: str = "1GB",
        connect_timeout: float = 10.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(embedder, **kwargs)
        self._dsn = parse_dsn(url)
        if self._dsn.schema is not None and schema not in ("public", self._dsn.schema):
            msg = f"schema {schema!r} conflicts with schema={self._dsn.schema!r} in the URL"
            raise MemoryConfigError(msg)
        self._schema = check_schema(self._dsn.schema or schema)
        if not 1 <= pool_min <= pool_max:
            msg = f"need 1 <= pool_min <= pool_max, got pool_min={pool_min}, pool_max={pool_max}"
            raise MemoryConfigError(msg)
        self._pool_min = pool_min
        self._pool_max = pool_max
        self._hnsw = hnsw
        self._exact_below = max(0, exact_below)
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
                    async with pool.connection() as conn, conn.transaction():
                        return await fn(conn)
                except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                    if attempt == _RETRIES - 1:
                        raise
                    await asyncio.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

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
            pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
                self._dsn.conninfo,
                min_size=self._pool_min,
                max_size=self._pool_max,
                open=False,
                kwargs={"autocommit": True, **self._connect_kwargs()},
                configure=self._configure,
                name=f"memvault:{self._schema}",
            )
            try:
                await pool.open(wait=True, timeout=self._connect_timeout)
            except BaseException:
                await pool.close()
                raise
        self._pool = pool
        self._connected = True
        logger.info("memory.connect", extra={"backend": "postgresql", "location": self.location})

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

    async def _migrate(self, conn: Conn) -> None:
        """Create or upgrade the store in one transaction under a database-wide advisory lock.

        Concurrent connects (several processes starting at once) queue on the lock, and the
        second finds everything done. Creating the HNSW index on a large existing table (first
        connect with ``hnsw=True`` after running without) holds the lock while it builds.
        """
        schema = sql.Identifier(self._schema)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATE_LOCK])
            ext_schema = await self._ensure_vector(conn)
            cur = await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)", [self._schema]
            )
            row = await cur.fetchone()
            if not (row and row[0]):
                # Checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege.
                await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
            path = [self._schema] if ext_schema == self._schema else [self._schema, ext_schema]
            self._search_path = sql.SQL(", ").join(sql.Identifier(p) for p in path)
            await conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(self._search_path))
            await self._check_foreign(conn)
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                ' name text COLLATE "C" PRIMARY KEY, applied_at timestamptz NOT NULL)'
            )
            cur = await conn.execute("SELECT name FROM schema_migrations")
            done = {r[0] for r in await cur.fetchall()}
            dim = self._embedder.dimension
            for name, template in MIGRATIONS:
                if name in done:
                    continue
                await conn.execute(migration_sql(template, dim))
                await conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)",
                    [name, self._clock()],
                )
                logger.info("memory.postgres.migrate", extra={"migration": name})
            await conn.execute(
                "INSERT INTO store_meta (key, value) VALUES ('schema_version', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [str(SCHEMA_VERSION)],
            )
            await self._check_meta(conn)
            if self._hnsw:
                # pgvector builds HNSW far faster when the graph fits in maintenance memory
                # (a million 384-d vectors need about 2 GB); the setting lasts this transaction.
                await conn.execute(
                    "SELECT set_config('maintenance_work_mem', %s, true)",
                    [self._index_build_memory],
                )
                await conn.execute(hnsw_index_sql())

    async def _ensure_vector(self, conn: Conn) -> str:
        """The schema of the ``vector`` extension, creating the extension if needed."""
        find = (
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'vector'"
        )
        cur = await conn.execute(find)
        row = await cur.fetchone()
        if row is None:
            try:
                async with conn.transaction():  # a savepoint: the failure must not abort ours
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                msg = (
                    f"the pgvector extension is not installed in {self.location} and could not "
                    f"be created ({self._message(exc)}): install pgvector on the server and "
                    "run CREATE EXTENSION vector as a privileged user"
                )
                raise MemoryConnectionError(msg) from exc
            cur = await conn.execute(find)
            row = await cur.fetchone()
            assert row is not None
        return str(row[0])

    async def _check_foreign(self, conn: Conn) -> None:
        cur = await conn.execute(
            "SELECT to_regclass('memories') IS NOT NULL, to_regclass('store_meta') IS NOT NULL"
        )
        row = await cur.fetchone()
        assert row is not None
        if row[0] and not row[1]:
            msg = (
                f"cannot open memvault store {self.location}: schema {self._schema!r} has a "
                "'memories' table of another application (no store_meta); refusing to modify it"
            )
            raise MemoryConnectionError(msg)

    async def _check_meta(self, conn: Conn) -> None:
        cur = await conn.execute("SELECT key, value FROM store_meta")
        meta = {str(k): str(v) for k, v in await cur.fetchall()}
        model, dim = self._embedder.model_id, self._embedder.dimension
        stored_model = meta.get("embedding_model")
        stored_dim = int(meta["dimension"]) if "dimension" in meta else None
        cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM memories)")
        row = await cur.fetchone()
        has_rows = bool(row and row[0])
        check_stored_model(
            self.location,
            self._embedder,
            stored_model=stored_model,
            stored_dimension=stored_dim,
            has_rows=bool(has_rows),
        )
        cur = await conn.execute(
            "SELECT atttypmod FROM pg_attribute"
            " WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"
        )
        row = await cur.fetchone()
        if row is not None and row[0] != dim:
            # An empty store adopts the configured embedder: the column's dimension is part of
            # its type (HNSW needs it), so retype the column and rebuild the index.
            await conn.execute(
                sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(HNSW_INDEX))
            )
            await conn.execute(
                sql.SQL("ALTER TABLE memories ALTER COLUMN embedding TYPE vector({})").format(
                    sql.Literal(dim)
                )
            )
        if stored_model != model or stored_dim != dim:
            await conn.execute(
                "INSERT INTO store_meta (key, value)"
                " VALUES ('embedding_model', %s), ('dimension', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [model, str(dim)],
            )

    async def disconnect(self) -> None:
        """Close every pooled connection (idempotent)."""
        if not self._connected:
            return
        self._connected = False
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

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
                    json.dumps(m.extra, sort_keys=True),
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
        """Delete one memory of the agent (its lexical statistics go with it)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()

        async def run(conn: Conn) -> int:
            cur = await conn.execute(
                "SELECT scope FROM memories WHERE id = %s AND agent_id = %s", [mid, agent]
            )
            found = await cur.fetchone()
            if found is None:
                return 0
            if found[0] != MemoryScope.PRIVATE.value:
                raise append_only_error(mid)
            return await self._delete_where(conn, "m.id = %s AND m.agent_id = %s", [mid, agent])

        return await self._write("delete", run) > 0

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category) in one transaction."""
        agent = check_agent(agent_id)
        self._require_connected()

        async def run(conn: Conn) -> int:
            # Private rows only: shared knowledge is append-only (retract, never delete).
            if category is None:
                return await self._delete_where(conn, _PRIVATE_SCOPE, [agent])
            return await self._delete_where(
                conn, f"{_PRIVATE_SCOPE} AND m.category = %s", [agent, category.value]
            )

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
        async with self._connection("get") as conn:
            cur = await conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE m.id = %s AND m.agent_id = %s",
                [mid, agent],
            )
            row = await cur.fetchone()
        return None if row is None else _row_entry(row)

    async def count(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Number of stored memories of the agent."""
        agent = check_agent(agent_id)
        self._require_connected()
        async with self._connection("count") as conn:
            if category is None:
                cur = await conn.execute(
                    f"SELECT count(*) FROM memories m WHERE {_PRIVATE_SCOPE}", [agent]
                )
            else:
                cur = await conn.execute(
                    f"SELECT count(*) FROM memories m WHERE {_PRIVATE_SCOPE} AND m.category = %s",
                    [agent, category.value],
                )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def list_entries(
        self, agent_id: str, query: MemoryQuery, *, offset: int = 0
    ) -> list[MemoryEntry]:
        """Entries passing the filters, newest first."""
        agent = check_agent(agent_id)
        self._require_connected()
        where, params = _where(query, self._clock())
        async with self._connection("list") as conn:
            cur = await conn.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE {_PRIVATE_SCOPE} AND {where}"
                " ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s",
                [agent, *params, query.limit, offset],
            )
            rows = await cur.fetchall()
        return [_row_entry(r) for r in rows]

    async def search_candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        pool: int,
        dense: bool = True,
        neighbours: int = 0,
        hops: int = 1,
        terms: Sequence[str] | None = None,
        exact: bool = False,
    ) -> CandidateSet:
        """Dense and lexical top-``pool`` candidates for ``query.text`` passing the filters.

        ``exact=True`` scans every matching row for the dense side instead of walking the HNSW
        graph (index scans off for the query), e.g. to measure the index's recall.
        """
        token = _EXACT.set(exact)
        try:
            return await super().search_candidates(
                agent_id,
                query,
                pool=pool,
                dense=dense,
                neighbours=neighbours,
                hops=hops,
                terms=terms,
            )
        finally:
            _EXACT.reset(token)

    async def _candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        return await self._scoped_candidates(
            _PRIVATE_SCOPE, [agent_id], _STATS, [agent_id, terms], query, vector, terms, pool, now
        )

    async def _scoped_candidates(
        self,
        scope: str,
        scope_params: list[Any],
        stats_sql: str,
        stats_params: list[Any],
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        """Candidates among the rows ``scope`` selects; ``stats_sql`` gives the collection
        statistics and the scope's row count (for the dense planner)."""
        exact = _EXACT.get()
        where, params = _where(query, now)
        where, params = f"{scope} AND {where}", [*scope_params, *params]
        async with self._connection("search") as conn, conn.transaction():
            # One snapshot for the statistics and the rows they score, as FTS5 has; the dense
            # side reads the same snapshot, so no search sees half of a write.
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur = await conn.execute(stats_sql, stats_params)
            stats = await cur.fetchone()
            assert stats is not None
            n_total, total_len, n_agent, dfs = int(stats[0]), int(stats[1]), int(stats[2]), stats[3]
            dense: list[tuple[int, float]] = []
            if vector is not None and n_agent:
                dense = await self._dense(
                    conn, where, params, vector, pool, n_total, n_agent, exact
                )
            lexical: list[tuple[int, float]] = []
            kept = prune_common_terms(terms, dict(zip(terms, dfs, strict=True)), n_total)
            if len(kept) < len(terms):
                dfs = [df for t, df in zip(terms, dfs, strict=True) if t in kept]
                terms = kept
            if terms and any(dfs):
                lexical = await self._lexical(
                    conn, where, params, terms, dfs, pool, n_total, total_len
                )
            rowids = sorted({r for r, _ in dense} | {r for r, _ in lexical})
            by_rowid: dict[int, tuple[MemoryEntry, Vectors]] = {}
            if rowids:
                cur = await conn.execute(
                    f"SELECT {_COLUMNS}, vector_send(m.embedding) FROM memories m"
                    " WHERE m.rowid = ANY(%s::bigint[])",
                    [rowids],
                )
                for row in await cur.fetchall():
                    by_rowid[int(row[0])] = (_row_entry(row), _vector_from_send(row[-1]))
        cands = CandidateSet(query_vector=vector)
        cands.dense = [(by_rowid[r][0].id, s) for r, s in dense if r in by_rowid]
        cands.lexical = [(by_rowid[r][0].id, s) for r, s in lexical if r in by_rowid]
        for entry, vec in by_rowid.values():
            cands.entries[entry.id] = entry
            cands.vectors[entry.id] = vec
        return cands

    async def _adjacent(
        self, agent_id: str, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        if not ids:
            return {}
        async with self._connection("search") as conn:
            # Insertion order per agent is rowid order (the identity column only grows).
            cur = await conn.execute(
                "SELECT t.id,"
                " ARRAY(SELECT p.rowid FROM memories p WHERE p.agent_id = t.agent_id"
                "  AND p.scope = 'private' AND p.rowid < t.rowid ORDER BY p.rowid DESC LIMIT %s),"
                " ARRAY(SELECT n.rowid FROM memories n WHERE n.agent_id = t.agent_id"
                "  AND n.scope = 'private' AND n.rowid > t.rowid ORDER BY n.rowid LIMIT %s)"
                " FROM memories t"
                " WHERE t.agent_id = %s AND t.scope = 'private' AND t.id = ANY(%s::text[])",
                [hops, hops, agent_id, list(ids)],
            )
            return await _hydrate_sides(conn, await cur.fetchall())

    def _ef_search(self, *, exact: bool, n_total: int, n_agent: int, pool: int) -> int | None:
        """``hnsw.ef_search`` for a dense query, or None to scan exactly.

        HNSW filters *after* walking the graph: of ``ef_search`` nearest rows of the whole
        table only the agent's survive. So ``ef_search`` (at least ``max(40, pool)``) grows with
        the inverse of the agent's share of the table; past pgvector's limit of 1000, or for
        agents small enough that a scan is cheap, the exact scan is both faster and complete.
        """
        if exact or not self._hnsw or n_agent <= self._exact_below:
            return None
        ef = math.ceil(max(_MIN_EF_SEARCH, pool) * n_total / n_agent)
        return ef if ef <= _MAX_EF_SEARCH else None

    async def _dense(
        self,
        conn: Conn,
        where: str,
        params: list[Any],
        vector: Vectors,
        pool: int,
        n_total: int,
        n_agent: int,
        exact: bool,
    ) -> list[tuple[int, float]]:
        literal = _vector_literal(vector)
        ef = self._ef_search(exact=exact, n_total=n_total, n_agent=n_agent, pool=pool)
        rows = await self._dense_query(conn, where, params, literal, pool, ef)
        if ef is not None and len(rows) < min(pool, n_agent):
            # The other filters (category, time, tags, supersession) cut the graph walk's rows
            # below the pool: rows may be missing, so scan exactly instead.
            rows = await self._dense_query(conn, where, params, literal, pool, None)
        scored = [(int(r[0]), 1.0 - float(r[1])) for r in rows]
        # Best first; ties go to the newer row, as in the other backends.
        scored.sort(key=lambda p: (-p[1], -p[0]))
        return scored

    @staticmethod
    async def _dense_query(
        conn: Conn,
        where: str,
        params: list[Any],
        literal: str,
        pool: int,
        ef: int | None,
    ) -> list[tuple[Any, ...]]:
        # SET LOCAL through set_config(), which takes parameters (SET does not). Exact: with
        # index scans off the planner reads the agent's rows through the btree on agent_id (or
        # the shared rows through their partial index) in a bitmap scan and sorts them by
        # distance. HNSW: sorting is switched off instead, so
        # the plan that walks the index (which yields rows in distance order) wins even when
        # the table's statistics are stale; agent_stats already told us the index fits.
        exact = ef is None
        await conn.execute(
            "SELECT set_config('enable_indexscan', %s, true),"
            " set_config('enable_sort', %s, true), set_config('hnsw.ef_search', %s, true)",
            ["off" if exact else "on", "on" if exact else "off", str(ef or _MIN_EF_SEARCH)],
        )
        # Never prepared: a cached plan ignores the planner settings above, so a plan made for
        # one mode would be reused for the other.
        cur = await conn.execute(
            "SELECT m.rowid, m.embedding <=> %s::vector AS distance FROM memories m"
            f" WHERE {where} ORDER BY distance LIMIT %s",
            [literal, *params, pool],
            prepare=False,
        )
        return await cur.fetchall()

    @staticmethod
    async def _lexical(
        conn: Conn,
        where: str,
        params: list[Any],
        terms: list[str],
        dfs: Sequence[int],
        pool: int,
        n_total: int,
        total_len: int,
    ) -> list[tuple[int, float]]:
        # Collection statistics exactly as FTS5 derives them: avgdl = total tokens / rows, and
        # idf floored at 1e-6, both computed here in double precision as SQLite does. Rows
        # count ROW_EXTRA_TOKENS more than their text, as in SQLite (see _BM25).
        avgdl = (total_len + ROW_EXTRA_TOKENS * n_total) / n_total
        weights = [idf(n_total, int(df)) for df in dfs]
        searchable = [t for t, df in zip(terms, dfs, strict=True) if df]
        cur = await conn.execute(
            _BM25.format(where=where),
            [
                K1 + 1.0,
                K1,
                1 - B,
                B,
                ROW_EXTRA_TOKENS,
                avgdl,
                terms,
                weights,
                _tsquery(searchable),
                *params,
                pool,
            ],
        )
        return [(int(r[0]), float(r[1])) for r in await cur.fetchall()]

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
    ) -> list[AuditRecord]:
        sql = "SELECT id, at, actor, action, agent_id, memory_id, details FROM audit WHERE true"
        params: list[Any] = []
        if memory_id is not None:
            sql += " AND memory_id = %s"
            params.append(memory_id)
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


async def _hydrate_sides(
    conn: Conn, rows: Sequence[Any]
) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
    """Entries for ``(id, rowids before, rowids after)`` rows of an adjacency query."""
    sides = {str(r[0]): ([int(x) for x in r[1]], [int(x) for x in r[2]]) for r in rows}
    wanted = sorted({r for b, a in sides.values() for r in (*b, *a)})
    by_rowid: dict[int, MemoryEntry] = {}
    if wanted:
        cur = await conn.execute(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid = ANY(%s::bigint[])", [wanted]
        )
        by_rowid = {int(r[0]): _row_entry(r) for r in await cur.fetchall()}
    return {
        entry_id: (
            [by_rowid[r] for r in before if r in by_rowid],
            [by_rowid[r] for r in after if r in by_rowid],
        )
        for entry_id, (before, after) in sides.items()
    }
