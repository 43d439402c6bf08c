"""Plumbing of the small tables memvault keeps beside the memories (sessions, learning, keys).

Each such store owns its connection(s) and its tables; what they share is here:

* :class:`SideSchema` / :class:`Migration`: how a store declares its tables. A store lists, per
  engine, the named migrations that build its tables, in order; opening a store applies the ones
  not yet recorded (each in a transaction of its own, recorded in that transaction) in the one
  ``memvault_side_migrations`` table of the SQLite file or PostgreSQL schema, beside the memory
  store's own ``schema_migrations``. See :class:`SideSchema` for the naming rules.
* :class:`SQLiteSide`: one sqlite3 connection (WAL, ``busy_timeout``; a new file gets the memory
  schema first, another application's file is refused, then the side migrations run) opened on
  first use and again after a failed open, used by one thread at a time, sqlite3 errors
  translated into the memvault tree; :func:`to_us` / :func:`from_us` for its INTEGER microsecond
  timestamps. Also used by the SQLite API key store (synchronously, :meth:`SQLiteSide.call`).
* :class:`PostgresSide`: a small psycopg ``AsyncConnectionPool`` opened on first use after the
  side migrations ran (under advisory locks), psycopg errors translated with the password
  scrubbed. psycopg is imported only when it is used, so the SQLite stores do not need the
  ``postgres`` extra. :func:`migrate_postgres` is the one migration step, on a synchronous
  connection: the stores that keep one (conversations, API keys) call it directly, and
  :class:`PostgresSide` runs it in a worker thread before its pool opens.

The stores keep their own SQL and row mapping.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memvault.backends.sqlite._connect import (
    check_foreign,
    immediate,
    open_sqlite,
    translate_error,
)
from memvault.errors import (
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

    from memvault.backends.postgres._dsn import ParsedDsn

    Conn = psycopg.AsyncConnection[TupleRow]

__all__ = [
    "LEDGER",
    "Migration",
    "PostgresSide",
    "SQLiteSide",
    "SideSchema",
    "advisory_key",
    "from_us",
    "migrate_postgres",
    "migrate_sqlite",
    "to_us",
]

T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_us(value: datetime) -> int:
    """Microseconds since the epoch (UTC) of an aware datetime."""
    return (value - _EPOCH) // timedelta(microseconds=1)


def from_us(value: int) -> datetime:
    """The aware UTC datetime of a microsecond timestamp."""
    return _EPOCH + timedelta(microseconds=value)


def advisory_key(name: bytes) -> int:
    """The PostgreSQL advisory lock key (a signed 64-bit integer) derived from ``name``."""
    return int.from_bytes(hashlib.sha256(name).digest()[:8], "big", signed=True)


# -- declared schemas ------------------------------------------------------------------------------

LEDGER = "memvault_side_migrations"
"""The table recording which side migrations a database (SQLite file, PostgreSQL schema) has."""

# The ledger is the one table created outside a migration: it is what records them (as the memory
# store's schema_migrations is for m001...). It never changes shape.
_SQLITE_LEDGER = (
    f"CREATE TABLE IF NOT EXISTS {LEDGER} (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
)
_PG_LEDGER = (
    f'CREATE TABLE IF NOT EXISTS {LEDGER} (name text COLLATE "C" PRIMARY KEY,'
    " applied_at timestamptz NOT NULL)"
)

_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Migration:
    """One named step of a side store's schema: statements run in order, in one transaction.

    Statements hold plain table names: on PostgreSQL they run with ``search_path`` set to the
    store's schema, so the same text serves every schema.
    """

    name: str
    statements: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SideSchema:
    """The tables of one side store: its named migrations on SQLite and on PostgreSQL, in order.

    Naming, checked here: every name is ``<store>_<NNNN>_<what>`` with ``NNNN`` counting from
    ``0001`` in list order, and the two engines list the same names (one change is one step on
    both). A name is recorded in the database once applied, so it must never change, and a
    migration once released is never edited: a change to a table is a new migration appended to
    both lists (``ALTER TABLE ... ADD COLUMN``, a new index), never an edit of an old one.

    The first migration of each store written before the ledger existed keeps its
    ``IF NOT EXISTS`` clauses: a database made by an older memvault has the tables but no record,
    and applying that first migration to it only adopts them (and records it).

    ``table`` and ``columns`` are what a SQLite open checks after migrating: a ``table`` without
    these columns belongs to someone else, and the store refuses the file.
    """

    store: str
    sqlite: tuple[Migration, ...]
    postgres: tuple[Migration, ...]
    table: str
    columns: frozenset[str]

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.store):
            msg = f"side store name {self.store!r} must be lower-case words joined by '_'"
            raise ValueError(msg)
        for engine, migrations in (("sqlite", self.sqlite), ("postgres", self.postgres)):
            for number, migration in enumerate(migrations, start=1):
                prefix = f"{self.store}_{number:04d}_"
                what = migration.name.removeprefix(prefix)
                if what == migration.name or not _NAME.fullmatch(what):
                    msg = (
                        f"{engine} migration {number} of side store {self.store!r} is named "
                        f"{migration.name!r}; expected {prefix}<what>"
                    )
                    raise ValueError(msg)
        if self.sqlite and self.postgres and self.names("sqlite") != self.names("postgres"):
            msg = f"side store {self.store!r} lists other migrations on SQLite than on PostgreSQL"
            raise ValueError(msg)

    def names(self, engine: str) -> tuple[str, ...]:
        """The migration names of ``engine`` (``"sqlite"`` or ``"postgres"``), in order."""
        return tuple(m.name for m in (self.sqlite if engine == "sqlite" else self.postgres))


def migrate_sqlite(
    conn: sqlite3.Connection, migrations: Sequence[Migration], now_us: int
) -> list[str]:
    """Apply the ``migrations`` not yet recorded in ``conn``'s ledger, in order; the names applied.

    Each runs under ``BEGIN IMMEDIATE`` with its record, after checking again (under the write
    lock) that no other connection applied it since the unlocked read; when nothing is pending,
    opening takes no write lock at all.
    """
    has_ledger = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LEDGER,)
    ).fetchone()
    done = (
        set() if has_ledger is None else {r[0] for r in conn.execute(f"SELECT name FROM {LEDGER}")}
    )
    applied: list[str] = []
    for migration in migrations:
        if migration.name in done:
            continue
        with immediate(conn):
            conn.execute(_SQLITE_LEDGER)
            taken = conn.execute(f"SELECT 1 FROM {LEDGER} WHERE name = ?", (migration.name,))
            if taken.fetchone() is not None:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                f"INSERT INTO {LEDGER} (name, applied_at) VALUES (?, ?)", (migration.name, now_us)
            )
        applied.append(migration.name)
    return applied


# PostgreSQL: every step runs in a transaction that first takes the store's advisory lock and the
# shared SCHEMA_LOCK (in that order, as every creator of a memvault schema does), makes sure of the
# schema (checked first: CREATE SCHEMA IF NOT EXISTS still needs the CREATE privilege), points
# search_path at it for the transaction only, and makes sure of the ledger. The migration steps
# themselves are the ones of migrate_sqlite. The sync and async twins differ only in awaiting.
_PG_LOCK = "SELECT pg_advisory_xact_lock(%s)"
_PG_HAS_SCHEMA = "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)"
_PG_DONE = f"SELECT name FROM {LEDGER}"
_PG_TAKEN = f"SELECT 1 FROM {LEDGER} WHERE name = %s"
_PG_RECORD = f"INSERT INTO {LEDGER} (name, applied_at) VALUES (%s, now())"


def _pg_schema_sql(schema: str) -> tuple[Any, Any]:
    """``CREATE SCHEMA`` and ``SET LOCAL search_path`` for ``schema`` (quoted)."""
    from psycopg import sql

    ident = sql.Identifier(schema)
    return (
        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident),
        sql.SQL("SET LOCAL search_path TO {}").format(ident),
    )


def migrate_postgres(
    conn: psycopg.Connection[Any], *, schema: str, lock: int, migrations: Sequence[Migration]
) -> list[str]:
    """Apply the ``migrations`` not yet in ``schema``'s ledger, in order; returns the names applied.

    ``conn`` is a synchronous autocommit connection (the async stores run this in a worker
    thread on a connection of its own). The schema and the ledger are made sure of first; then
    each pending migration runs in a transaction of its own with its record, under the advisory
    lock ``lock`` (the store's) and the shared schema lock, after checking again under the locks
    that another process did not apply it meanwhile.
    """
    from memvault.backends.postgres._dsn import SCHEMA_LOCK

    create, search = _pg_schema_sql(schema)

    def enter() -> None:
        conn.execute(_PG_LOCK, [lock])
        conn.execute(_PG_LOCK, [SCHEMA_LOCK])
        row = conn.execute(_PG_HAS_SCHEMA, [schema]).fetchone()
        if not (row and row[0]):
            conn.execute(create)
        conn.execute(search)
        conn.execute(_PG_LEDGER)

    with conn.transaction():
        enter()
        done = {r[0] for r in conn.execute(_PG_DONE).fetchall()}
    applied: list[str] = []
    for migration in migrations:
        if migration.name in done:
            continue
        with conn.transaction():
            enter()
            if conn.execute(_PG_TAKEN, [migration.name]).fetchone() is not None:
                continue
            for statement in migration.statements:
                conn.execute(statement.encode())
            conn.execute(_PG_RECORD, [migration.name])
        applied.append(migration.name)
    return applied


# -- connections -----------------------------------------------------------------------------------


class SQLiteSide:
    """The connection of a side store in a SQLite file.

    ``what`` names the store in messages (``"session store"``). Every new connection is
    prepared the same way: a new file gets the memory store's schema first (the memory backend
    refuses a file with tables but no ``store_meta``, so a side table created first must not lock
    it out), a file of another application is refused, the store's migrations of ``migrations``
    that are not recorded yet are applied, and its ``table`` must have the declared columns.
    ``clock`` stamps the records (the memory schema's and the ledger's).
    """

    def __init__(
        self,
        path: Path,
        *,
        what: str,
        busy_timeout_ms: int,
        migrations: SideSchema,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._path = path
        self._what = what
        self._busy_timeout_ms = busy_timeout_ms
        self._schema = migrations
        self._clock = clock or (lambda: datetime.now(UTC))
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.applied: list[str] = []
        """The migrations the last open applied (empty when the file was up to date)."""

    def _prepare(self, conn: sqlite3.Connection) -> None:
        from memvault.backends.sqlite.schema import apply_migrations

        now_us = to_us(self._clock())
        if check_foreign(conn, self._path, self._what):
            apply_migrations(conn, now_us)
        self.applied = migrate_sqlite(conn, self._schema.sqlite, now_us)
        table = self._schema.table
        found = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        if not found >= self._schema.columns:
            msg = (
                f"cannot open {self._what} {self._path}: its {table} table has other columns "
                f"({', '.join(sorted(found))})"
            )
            raise MemoryConnectionError(msg)

    def call(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """``fn(conn)`` under the lock; sqlite3 errors become store (write) or retrieval errors."""
        with self._lock:
            if self._closed:
                msg = f"{self._what} {self._path} is closed"
                raise MemoryConnectionError(msg)
            if self._conn is None:
                self._conn = open_sqlite(
                    self._path,
                    what=self._what,
                    busy_timeout_ms=self._busy_timeout_ms,
                    prepare=self._prepare,
                )
            try:
                return fn(self._conn)
            except MemoryError:
                raise
            except sqlite3.Error as exc:
                raise translate_error(exc, write=write, what=self._what, path=self._path) from exc

    async def run(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """:meth:`call` in a worker thread."""
        return await asyncio.to_thread(self.call, fn, write=write)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    async def aclose(self) -> None:
        """:meth:`close` in a worker thread."""
        await asyncio.to_thread(self.close)


class PostgresSide:
    """The connection pool of a side store in a PostgreSQL schema.

    ``noun`` names the store in messages (``"session"``: "PostgreSQL session store ...
    unreachable", "PostgreSQL session save in ... failed", "session store ... is closed");
    ``lock_name`` seeds the advisory lock that serialises the store's migrations; the PostgreSQL
    migrations of ``migrations`` run (:func:`migrate_postgres`) before the pool opens.
    """

    def __init__(
        self,
        dsn: ParsedDsn,
        *,
        schema: str,
        location: str,
        noun: str,
        lock_name: bytes,
        migrations: SideSchema,
        pool_name: str,
        pool_max: int,
        connect_timeout: float,
    ) -> None:
        self._dsn = dsn
        self._schema = schema
        self._location = location
        self._noun = noun
        self._create_lock = advisory_key(lock_name)
        self._migrations = migrations.postgres
        self._pool_name = pool_name
        self._pool_max = pool_max
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False
        self.applied: list[str] = []
        """The migrations the pool's open applied (empty when the schema was up to date)."""

    @contextlib.asynccontextmanager
    async def _guard(self, op: str, *, write: bool) -> AsyncIterator[None]:
        import psycopg

        from memvault.backends.postgres._dsn import scrub

        try:
            yield
        except MemoryError:
            raise
        except (psycopg.Error, OSError) as exc:
            text = scrub(str(exc), self._dsn.secrets)
            if isinstance(exc, psycopg.OperationalError | OSError):
                msg = f"PostgreSQL {self._noun} store {self._location} unreachable: {text}"
                raise MemoryConnectionError(msg) from exc
            msg = f"PostgreSQL {self._noun} {op} in {self._location} failed: {text}"
            if write:
                raise MemoryStoreError(msg) from exc
            raise MemoryRetrievalError(msg) from exc

    def _migrate(self) -> None:
        """The store's pending migrations, on a short-lived connection of their own."""
        import psycopg

        with psycopg.Connection.connect(
            self._dsn.conninfo, autocommit=True, connect_timeout=max(2, int(self._connect_timeout))
        ) as conn:
            self.applied = migrate_postgres(
                conn, schema=self._schema, lock=self._create_lock, migrations=self._migrations
            )

    async def _ensure_pool(self) -> AsyncConnectionPool[Conn]:
        from psycopg_pool import AsyncConnectionPool

        async with self._open_lock:
            if self._closed:
                msg = f"{self._noun} store {self._location} is closed"
                raise MemoryConnectionError(msg)
            if self._pool is not None:
                return self._pool
            async with self._guard("connect", write=False):
                await asyncio.to_thread(self._migrate)
                pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
                    self._dsn.conninfo,
                    # No idle connection kept: a side store of each of thousands of tenants
                    # must not hold one (see PostgresBackend's pool_min).
                    min_size=0,
                    max_size=self._pool_max,
                    max_idle=60.0,
                    open=False,
                    kwargs={"autocommit": True},
                    name=self._pool_name,
                )
                try:
                    await pool.open(wait=True, timeout=self._connect_timeout)
                except BaseException:
                    await pool.close()
                    raise
            self._pool = pool
            return pool

    async def read(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """``fn`` on a pooled connection (autocommit); errors become retrieval errors."""
        pool = await self._ensure_pool()
        async with self._guard(op, write=False), pool.connection() as conn:
            return await fn(conn)

    async def write(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """``fn`` in a transaction on a pooled connection; errors become store errors."""
        pool = await self._ensure_pool()
        async with self._guard(op, write=True), pool.connection() as conn, conn.transaction():
            return await fn(conn)

    async def close(self) -> None:
        """Close the pool; later calls raise :class:`MemoryConnectionError`."""
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
