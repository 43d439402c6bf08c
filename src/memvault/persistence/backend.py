"""The :class:`PersistenceBackend` protocol and its SQLite and PostgreSQL implementations.

Application code holds a :class:`PersistenceBackend` (from
:func:`memvault.persistence.create_persistence`) and uses its repositories; it never imports a
concrete backend. Both backends here are :class:`SQLPersistence` over a different
:class:`~memvault.persistence._sql.SQLDatabase`: the repositories and their SQL are shared, so
the two engines cannot drift apart in behaviour (one contract suite runs on both).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from memvault._sidetables import PostgresSide, SQLiteSide
from memvault.backends.sqlite._connect import immediate
from memvault.errors import MemoryConnectionError, MemoryError
from memvault.persistence import repositories as r
from memvault.persistence._sql import SQLDatabase, SQLRepository
from memvault.persistence._tables import ENTITIES, SCHEMA

if TYPE_CHECKING:
    from memvault.backends.postgres._dsn import ParsedDsn

__all__ = [
    "PersistenceBackend",
    "PostgresDatabase",
    "SQLPersistence",
    "SQLiteDatabase",
]


@runtime_checkable
class PersistenceBackend(Protocol):
    """An isolated store of one company's operational records (seed 001's protocol)."""

    async def connect(self) -> None:
        """Open the connection(s) and apply pending migrations."""
        ...

    async def disconnect(self) -> None:
        """Close the connection(s); the backend cannot be used afterwards."""
        ...

    async def health_check(self) -> bool:
        """True if the database answers a trivial query."""
        ...

    async def migrate(self) -> list[str]:
        """Apply pending migrations; the names applied."""
        ...

    @property
    def is_connected(self) -> bool:
        """True between :meth:`connect` and :meth:`disconnect`."""
        ...

    @property
    def backend_name(self) -> str:
        """``sqlite`` or ``postgresql``."""
        ...

    @property
    def location(self) -> str:
        """Where the records live (a file path, or a URL without password)."""
        ...

    @property
    def tasks(self) -> r.TaskRepository: ...
    @property
    def cost_records(self) -> r.CostRecordRepository: ...
    @property
    def messages(self) -> r.MessageRepository: ...
    @property
    def audit_entries(self) -> r.AuditRepository: ...
    @property
    def parked_contexts(self) -> r.ParkedContextRepository: ...
    @property
    def agent_states(self) -> r.AgentStateRepository: ...
    @property
    def settings(self) -> r.SettingsRepository: ...
    @property
    def artifacts(self) -> r.ArtifactRepository: ...
    @property
    def projects(self) -> r.ProjectRepository: ...
    @property
    def custom_presets(self) -> r.PresetRepository: ...
    @property
    def users(self) -> r.UserRepository: ...
    @property
    def checkpoints(self) -> r.CheckpointRepository: ...
    @property
    def heartbeats(self) -> r.HeartbeatRepository: ...
    @property
    def lifecycle_events(self) -> r.LifecycleEventRepository: ...
    @property
    def task_metrics(self) -> r.TaskMetricRepository: ...
    @property
    def collaboration_metrics(self) -> r.CollaborationMetricRepository: ...

    def repositories(self) -> dict[str, SQLRepository[Any]]:
        """Every table's repository by entity name (``checkpoint_writes`` included)."""
        ...


# -- engines ------------------------------------------------------------------------------------


class _OpsSQLiteSide(SQLiteSide):
    """A :class:`SQLiteSide` that also applies the ``persistence.sqlite`` journal settings."""

    def __init__(
        self, path: Path, *, wal_mode: bool, journal_size_limit: int, synchronous: str
    ) -> None:
        super().__init__(path, what="operational store", busy_timeout_ms=30_000, migrations=SCHEMA)
        self._wal = wal_mode
        self._journal_limit = journal_size_limit
        self._synchronous = "FULL" if synchronous.lower() == "full" else "NORMAL"

    def _prepare(self, conn: sqlite3.Connection) -> None:
        super()._prepare(conn)
        conn.execute(f"PRAGMA journal_size_limit = {int(self._journal_limit)}")
        # storage.durability: power (synchronous=full) holds for these records as for memories.
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        if not self._wal:
            # Only for a file of its own (the factory refuses it for the memory store's file,
            # whose readers rely on WAL).
            conn.execute("PRAGMA journal_mode = DELETE")


class SQLiteDatabase:
    """:class:`~memvault.persistence._sql.SQLDatabase` on one SQLite file (one connection)."""

    engine: Literal["sqlite"] = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        wal_mode: bool = True,
        journal_size_limit: int = 64 * 1024 * 1024,
        synchronous: str = "normal",
        temporary: bool = False,
    ) -> None:
        self.path = path
        self._temporary = temporary
        self._side = _OpsSQLiteSide(
            path,
            wal_mode=wal_mode,
            journal_size_limit=journal_size_limit,
            synchronous=synchronous,
        )

    @classmethod
    def in_process(cls) -> SQLiteDatabase:
        """A database in a private temporary file, removed when closed (for ``memory://``)."""
        folder = Path(tempfile.mkdtemp(prefix="memvault-ops-"))
        return cls(folder / "operations.db", temporary=True)

    async def fetch(
        self, op: str, sql: str, params: Sequence[Any] = (), *, write: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of ``sql``."""

        def run(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            if write:
                with immediate(conn):
                    return conn.execute(sql, params).fetchall()
            return conn.execute(sql, params).fetchall()

        return await self._side.run(run, write=write)

    async def execute(self, op: str, sql: str, params: Sequence[Any] = ()) -> int:
        """Run ``sql`` in a transaction of its own; the rows changed."""

        def run(conn: sqlite3.Connection) -> int:
            with immediate(conn):
                return conn.execute(sql, params).rowcount

        return await self._side.run(run, write=True)

    async def execute_many(self, op: str, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run ``sql`` for every row, in one transaction."""

        def run(conn: sqlite3.Connection) -> int:
            with immediate(conn):
                conn.executemany(sql, rows)
            return len(rows)

        return await self._side.run(run, write=True)

    @property
    def applied(self) -> list[str]:
        """The migrations applied when the file was opened."""
        return self._side.applied

    async def close(self) -> None:
        """Close the connection (and remove a temporary file)."""
        await self._side.aclose()
        if self._temporary:
            await asyncio.to_thread(shutil.rmtree, self.path.parent, True)


class PostgresDatabase:
    """:class:`~memvault.persistence._sql.SQLDatabase` on one PostgreSQL schema (a pool)."""

    engine: Literal["postgres"] = "postgres"

    def __init__(self, dsn: ParsedDsn, *, schema: str, location: str, pool_size: int) -> None:
        self.schema = schema
        self.location = location
        self._side = PostgresSide(
            dsn,
            schema=schema,
            location=location,
            noun="operational",
            lock_name=b"memvault-persistence-migrate",
            migrations=SCHEMA,
            pool_name="memvault-persistence",
            pool_max=pool_size,
            connect_timeout=10.0,
        )
        from psycopg import sql

        self._search_path = sql.SQL("SET search_path TO {}").format(sql.Identifier(schema))

    @staticmethod
    def _pg(sql: str) -> str:
        # The repositories' SQL holds no literal '?', so every one is a placeholder.
        return sql.replace("%", "%%").replace("?", "%s")

    async def fetch(
        self, op: str, sql: str, params: Sequence[Any] = (), *, write: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of ``sql``."""
        text = self._pg(sql)

        async def run(conn: Any) -> list[tuple[Any, ...]]:
            await conn.execute(self._search_path)
            cur = await conn.execute(text.encode(), list(params))
            return list(await cur.fetchall())

        if write:
            return await self._side.write(op, run)
        return await self._side.read(op, run)

    async def execute(self, op: str, sql: str, params: Sequence[Any] = ()) -> int:
        """Run ``sql`` in a transaction of its own; the rows changed."""
        text = self._pg(sql)

        async def run(conn: Any) -> int:
            await conn.execute(self._search_path)
            cur = await conn.execute(text.encode(), list(params))
            return int(cur.rowcount)

        return await self._side.write(op, run)

    async def execute_many(self, op: str, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run ``sql`` for every row, in one transaction (pipelined)."""
        text = self._pg(sql)

        async def run(conn: Any) -> int:
            await conn.execute(self._search_path)
            async with conn.cursor() as cur:
                await cur.executemany(text.encode(), [list(row) for row in rows])
            return len(rows)

        return await self._side.write(op, run)

    @property
    def applied(self) -> list[str]:
        """The migrations applied when the pool opened."""
        return self._side.applied

    async def close(self) -> None:
        """Close the pool."""
        await self._side.close()


# -- the backend --------------------------------------------------------------------------------

_Database = SQLiteDatabase | PostgresDatabase


class SQLPersistence:
    """A :class:`PersistenceBackend` on one SQL database (SQLite file or PostgreSQL schema)."""

    def __init__(self, db: _Database, *, location: str) -> None:
        self._db = db
        self._location = location
        self._connected = False
        self._closed = False
        self._lock = asyncio.Lock()
        sqldb: SQLDatabase = db
        self._tasks = r.TaskRepository(sqldb)
        self._cost_records = r.CostRecordRepository(sqldb)
        self._messages = r.MessageRepository(sqldb)
        self._audit_entries = r.AuditRepository(sqldb)
        self._parked_contexts = r.ParkedContextRepository(sqldb)
        self._agent_states = r.AgentStateRepository(sqldb)
        self._settings = r.SettingsRepository(sqldb)
        self._artifacts = r.ArtifactRepository(sqldb)
        self._projects = r.ProjectRepository(sqldb)
        self._custom_presets = r.PresetRepository(sqldb)
        self._users = r.UserRepository(sqldb)
        self._checkpoints = r.CheckpointRepository(sqldb)
        self._heartbeats = r.HeartbeatRepository(sqldb)
        self._lifecycle_events = r.LifecycleEventRepository(sqldb)
        self._task_metrics = r.TaskMetricRepository(sqldb)
        self._collaboration_metrics = r.CollaborationMetricRepository(sqldb)

    @property
    def backend_name(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return "sqlite" if isinstance(self._db, SQLiteDatabase) else "postgresql"

    @property
    def location(self) -> str:
        """The file path, or the URL without password (with its schema)."""
        return self._location

    @property
    def is_connected(self) -> bool:
        """True between :meth:`connect` and :meth:`disconnect`."""
        return self._connected

    async def connect(self) -> None:
        """Open the database and apply pending migrations (idempotent)."""
        async with self._lock:
            if self._closed:
                msg = f"operational store {self._location} is closed"
                raise MemoryConnectionError(msg)
            if not self._connected:
                await self.migrate()
                self._connected = True

    async def migrate(self) -> list[str]:
        """Apply the pending named migrations; the names applied (empty when up to date).

        Migrations run when the database is first opened; this opens it.
        """
        await self._db.fetch("migrate", "SELECT 1")
        return list(self._db.applied)

    async def disconnect(self) -> None:
        """Close the database (idempotent); later calls raise :class:`MemoryConnectionError`."""
        async with self._lock:
            self._closed = True
            self._connected = False
        await self._db.close()

    async def close(self) -> None:
        """:meth:`disconnect` (what a memory calls on the features it closes)."""
        await self.disconnect()

    async def health_check(self) -> bool:
        """True if the database answers ``SELECT 1``."""
        try:
            rows = await self._db.fetch("health check", "SELECT 1")
        except MemoryError:
            return False
        return bool(rows) and rows[0][0] == 1

    async def __aenter__(self) -> SQLPersistence:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.disconnect()

    def repositories(self) -> dict[str, SQLRepository[Any]]:
        """Every table's repository by entity name (``checkpoint_writes`` included)."""
        found: dict[str, SQLRepository[Any]] = {
            name: getattr(self, name) for name in ENTITIES if name != "checkpoint_writes"
        }
        found["checkpoint_writes"] = self._checkpoints.write_records
        return found

    @property
    def tasks(self) -> r.TaskRepository:
        """Tasks."""
        return self._tasks

    @property
    def cost_records(self) -> r.CostRecordRepository:
        """Cost records."""
        return self._cost_records

    @property
    def messages(self) -> r.MessageRepository:
        """Messages."""
        return self._messages

    @property
    def audit_entries(self) -> r.AuditRepository:
        """Audit entries."""
        return self._audit_entries

    @property
    def parked_contexts(self) -> r.ParkedContextRepository:
        """Parked contexts."""
        return self._parked_contexts

    @property
    def agent_states(self) -> r.AgentStateRepository:
        """Agent runtime states."""
        return self._agent_states

    @property
    def settings(self) -> r.SettingsRepository:
        """Settings."""
        return self._settings

    @property
    def artifacts(self) -> r.ArtifactRepository:
        """Artifacts."""
        return self._artifacts

    @property
    def projects(self) -> r.ProjectRepository:
        """Projects."""
        return self._projects

    @property
    def custom_presets(self) -> r.PresetRepository:
        """Custom presets."""
        return self._custom_presets

    @property
    def users(self) -> r.UserRepository:
        """Users."""
        return self._users

    @property
    def checkpoints(self) -> r.CheckpointRepository:
        """Framework checkpoints and their pending writes."""
        return self._checkpoints

    @property
    def heartbeats(self) -> r.HeartbeatRepository:
        """Heartbeats."""
        return self._heartbeats

    @property
    def lifecycle_events(self) -> r.LifecycleEventRepository:
        """Lifecycle events."""
        return self._lifecycle_events

    @property
    def task_metrics(self) -> r.TaskMetricRepository:
        """Task metrics."""
        return self._task_metrics

    @property
    def collaboration_metrics(self) -> r.CollaborationMetricRepository:
        """Collaboration metrics."""
        return self._collaboration_metrics
