"""Where the maintenance scheduler keeps its last-run times and its lease: in the store itself.

One small side table, ``maintenance_runs``, in the SQLite file or PostgreSQL schema of the store
it maintains (each tenant has its own store, so its own table). A row per ``(job, agent_id)``
holds the job's last successful run (``agent_id`` is ``""`` for an org-wide job such as the skill
evolver). The row ``(LEASE_JOB, "")`` is the lease: the holder's id and when the lease expires.
Taking the lease is one atomic step in the database (SQLite: ``BEGIN IMMEDIATE``, read, write,
commit; PostgreSQL: an upsert whose update only happens when the lease is free, expired or
already ours), so two servers on one file or database never both run a pass; a crashed holder's
lease simply expires.

``memory://`` (and a memory given a backend object) keeps the same records in process.
"""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memvault._sidetables import Migration, SideSchema, SQLiteSide, from_us, to_us
from memvault.backends.sqlite._connect import immediate
from memvault.errors import MemoryConfigError

__all__ = [
    "LEASE_JOB",
    "MAINTENANCE_TABLES",
    "InMemoryMaintenanceState",
    "Lease",
    "MaintenanceState",
    "PostgresMaintenanceState",
    "SQLiteMaintenanceState",
    "open_maintenance_state",
]

LEASE_JOB = "lease"
"""The job name of the lease row (no job is named so; PostgreSQL text cannot hold NUL)."""

_WHAT = "maintenance state"
# The ``maintenance_runs`` table of both drivers. Migration names are recorded in the database:
# never rename or edit one, append a new one (memvault._sidetables.SideSchema).
MAINTENANCE_TABLES = SideSchema(
    store="maintenance",
    sqlite=(
        Migration(
            "maintenance_0001_runs",
            (
                "CREATE TABLE IF NOT EXISTS maintenance_runs ("
                " job TEXT NOT NULL, agent_id TEXT NOT NULL, at INTEGER NOT NULL, holder TEXT,"
                " PRIMARY KEY (job, agent_id)) WITHOUT ROWID",
            ),
        ),
    ),
    postgres=(
        Migration(
            "maintenance_0001_runs",
            (
                "CREATE TABLE IF NOT EXISTS maintenance_runs ("
                ' job text COLLATE "C" NOT NULL, agent_id text COLLATE "C" NOT NULL,'
                " at timestamptz NOT NULL, holder text, PRIMARY KEY (job, agent_id))",
            ),
        ),
    ),
    table="maintenance_runs",
    columns=frozenset({"job", "agent_id", "at", "holder"}),
)


class Lease:
    """Who holds a store's maintenance lease and until when (``expires_at``, UTC)."""

    __slots__ = ("expires_at", "holder")

    def __init__(self, holder: str, expires_at: datetime) -> None:
        self.holder = holder
        self.expires_at = expires_at

    def __repr__(self) -> str:
        """Show the holder and the expiry."""
        return f"Lease(holder={self.holder!r}, expires_at={self.expires_at.isoformat()})"


@runtime_checkable
class MaintenanceState(Protocol):
    """Last-run times per job (and agent) and the lease of one store."""

    @property
    def location(self) -> str:
        """Where the records live (a path, a URL without password, ``memory://``)."""
        ...

    async def last_run(self, job: str, agent_id: str = "") -> datetime | None:
        """When ``job`` last ran for ``agent_id`` (``""``: an org-wide job), if it did."""
        ...

    async def last_runs(self, job: str) -> dict[str, datetime]:
        """Every agent's last run of ``job``."""
        ...

    async def record_run(self, job: str, agent_id: str, when: datetime) -> None:
        """Remember that ``job`` ran for ``agent_id`` at ``when``."""
        ...

    async def acquire(self, holder: str, now: datetime, lease_seconds: float) -> bool:
        """Take (or renew) the lease for ``lease_seconds`` from ``now``; False if another
        holder's lease has not expired yet."""
        ...

    async def release(self, holder: str) -> None:
        """Give the lease up if ``holder`` holds it (anyone may take it at once)."""
        ...

    async def lease(self) -> Lease | None:
        """The current lease row, expired or not (None: never taken, or released)."""
        ...

    async def close(self) -> None:
        """Release the connection(s)."""
        ...


def _expiry(now: datetime, lease_seconds: float) -> datetime:
    return now + timedelta(seconds=lease_seconds)


class InMemoryMaintenanceState:
    """The records in process (``memory://`` stores, tests)."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], datetime] = {}
        self._lease: Lease | None = None
        self._lock = asyncio.Lock()

    @property
    def location(self) -> str:
        """``memory://``."""
        return "memory://"

    async def last_run(self, job: str, agent_id: str = "") -> datetime | None:
        """When ``job`` last ran for ``agent_id``, if it did."""
        return self._runs.get((job, agent_id))

    async def last_runs(self, job: str) -> dict[str, datetime]:
        """Every agent's last run of ``job``."""
        return {agent: at for (j, agent), at in self._runs.items() if j == job}

    async def record_run(self, job: str, agent_id: str, when: datetime) -> None:
        """Remember the run."""
        self._runs[(job, agent_id)] = when

    async def acquire(self, holder: str, now: datetime, lease_seconds: float) -> bool:
        """Take or renew the lease unless another holder's is still running."""
        async with self._lock:
            current = self._lease
            if current is not None and current.holder != holder and current.expires_at > now:
                return False
            self._lease = Lease(holder, _expiry(now, lease_seconds))
            return True

    async def release(self, holder: str) -> None:
        """Drop the lease if ``holder`` holds it."""
        async with self._lock:
            if self._lease is not None and self._lease.holder == holder:
                self._lease = None

    async def lease(self) -> Lease | None:
        """The current lease."""
        return self._lease

    async def close(self) -> None:
        """Nothing to release."""


class SQLiteMaintenanceState:
    """The records in the ``maintenance_runs`` table of a SQLite store file."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self._path = Path(path).expanduser()
        self._db = SQLiteSide(
            self._path,
            what=_WHAT,
            busy_timeout_ms=busy_timeout_ms,
            migrations=MAINTENANCE_TABLES,
        )

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    async def last_run(self, job: str, agent_id: str = "") -> datetime | None:
        """When ``job`` last ran for ``agent_id``, if it did."""

        def run(conn: sqlite3.Connection) -> datetime | None:
            row = conn.execute(
                "SELECT at FROM maintenance_runs WHERE job = ? AND agent_id = ?", (job, agent_id)
            ).fetchone()
            return None if row is None else from_us(row[0])

        return await self._db.run(run, write=False)

    async def last_runs(self, job: str) -> dict[str, datetime]:
        """Every agent's last run of ``job``."""

        def run(conn: sqlite3.Connection) -> dict[str, datetime]:
            rows = conn.execute(
                "SELECT agent_id, at FROM maintenance_runs WHERE job = ?", (job,)
            ).fetchall()
            return {str(agent): from_us(at) for agent, at in rows}

        return await self._db.run(run, write=False)

    async def record_run(self, job: str, agent_id: str, when: datetime) -> None:
        """Remember the run (the newest time wins)."""
        stamp = to_us(when)

        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                conn.execute(
                    "INSERT INTO maintenance_runs (job, agent_id, at, holder)"
                    " VALUES (?, ?, ?, NULL)"
                    " ON CONFLICT (job, agent_id) DO UPDATE SET at = excluded.at",
                    (job, agent_id, stamp),
                )

        await self._db.run(run, write=True)

    async def acquire(self, holder: str, now: datetime, lease_seconds: float) -> bool:
        """Take or renew the lease in one write transaction (``BEGIN IMMEDIATE``).

        The write lock is taken before the lease row is read, so two processes cannot both see
        it free: the second waits (``busy_timeout``) and then sees the first one's lease.
        """
        now_us, until_us = to_us(now), to_us(_expiry(now, lease_seconds))

        def run(conn: sqlite3.Connection) -> bool:
            with immediate(conn):
                row = conn.execute(
                    "SELECT holder, at FROM maintenance_runs WHERE job = ? AND agent_id = ''",
                    (LEASE_JOB,),
                ).fetchone()
                if row is not None and row[0] not in (None, holder) and row[1] > now_us:
                    return False
                conn.execute(
                    "INSERT INTO maintenance_runs (job, agent_id, at, holder) VALUES (?, '', ?, ?)"
                    " ON CONFLICT (job, agent_id) DO UPDATE SET at = excluded.at,"
                    " holder = excluded.holder",
                    (LEASE_JOB, until_us, holder),
                )
                return True

        return await self._db.run(run, write=True)

    async def release(self, holder: str) -> None:
        """Drop the lease if ``holder`` holds it."""

        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                conn.execute(
                    "DELETE FROM maintenance_runs WHERE job = ? AND agent_id = '' AND holder = ?",
                    (LEASE_JOB, holder),
                )

        await self._db.run(run, write=True)

    async def lease(self) -> Lease | None:
        """The current lease row."""

        def run(conn: sqlite3.Connection) -> Lease | None:
            row = conn.execute(
                "SELECT holder, at FROM maintenance_runs WHERE job = ? AND agent_id = ''",
                (LEASE_JOB,),
            ).fetchone()
            return None if row is None or row[0] is None else Lease(str(row[0]), from_us(row[1]))

        return await self._db.run(run, write=False)

    async def close(self) -> None:
        """Close the connection."""
        await self._db.aclose()


class PostgresMaintenanceState:
    """The records in a ``maintenance_runs`` table of the store's PostgreSQL schema."""

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        pool_max: int = 2,
        connect_timeout: float = 10.0,
    ) -> None:
        try:
            from psycopg import sql
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            msg = (
                'the PostgreSQL maintenance state needs psycopg 3: pip install "memvault[postgres]"'
            )
            raise MemoryConfigError(msg) from exc
        from memvault._sidetables import PostgresSide
        from memvault.backends.postgres._dsn import check_schema, parse_dsn

        self._sql = sql
        self._dsn = parse_dsn(url)
        self._schema = check_schema(self._dsn.schema or schema or "public")
        self._table = sql.Identifier(self._schema, "maintenance_runs")
        self._db = PostgresSide(
            self._dsn,
            schema=self._schema,
            location=self._dsn.location,
            noun="maintenance",
            lock_name=b"memvault.maintenance",
            migrations=MAINTENANCE_TABLES,
            pool_name=f"memvault-maintenance:{self._schema}",
            pool_max=max(1, pool_max),
            connect_timeout=connect_timeout,
        )

    @property
    def location(self) -> str:
        """The URL without password."""
        return self._dsn.location

    def _q(self, text: str) -> Any:
        return self._sql.SQL(text).format(t=self._table)

    async def last_run(self, job: str, agent_id: str = "") -> datetime | None:
        """When ``job`` last ran for ``agent_id``, if it did."""

        async def run(conn: Any) -> datetime | None:
            cur = await conn.execute(
                self._q("SELECT at FROM {t} WHERE job = %s AND agent_id = %s"), [job, agent_id]
            )
            row = await cur.fetchone()
            return None if row is None else _aware(row[0])

        result: datetime | None = await self._db.read("read", run)
        return result

    async def last_runs(self, job: str) -> dict[str, datetime]:
        """Every agent's last run of ``job``."""

        async def run(conn: Any) -> dict[str, datetime]:
            cur = await conn.execute(self._q("SELECT agent_id, at FROM {t} WHERE job = %s"), [job])
            return {str(a): _aware(at) for a, at in await cur.fetchall()}

        result: dict[str, datetime] = await self._db.read("read", run)
        return result

    async def record_run(self, job: str, agent_id: str, when: datetime) -> None:
        """Remember the run."""

        async def run(conn: Any) -> None:
            await conn.execute(
                self._q(
                    "INSERT INTO {t} (job, agent_id, at, holder) VALUES (%s, %s, %s, NULL)"
                    " ON CONFLICT (job, agent_id) DO UPDATE SET at = excluded.at"
                ),
                [job, agent_id, when],
            )

        await self._db.write("record", run)

    async def acquire(self, holder: str, now: datetime, lease_seconds: float) -> bool:
        """Take or renew the lease with one conditional upsert.

        ``ON CONFLICT ... DO UPDATE ... WHERE`` locks the lease row and updates it only when
        it is free, expired or already ours; ``RETURNING`` tells whether it did. Two servers
        racing both reach the row lock; the second sees the first one's fresh lease.
        """

        async def run(conn: Any) -> bool:
            cur = await conn.execute(
                self._q(
                    "INSERT INTO {t} AS l (job, agent_id, at, holder) VALUES (%s, '', %s, %s)"
                    " ON CONFLICT (job, agent_id) DO UPDATE SET at = excluded.at,"
                    " holder = excluded.holder"
                    " WHERE l.holder IS NULL OR l.holder = excluded.holder OR l.at <= %s"
                    " RETURNING holder"
                ),
                [LEASE_JOB, _expiry(now, lease_seconds), holder, now],
            )
            return await cur.fetchone() is not None

        result: bool = await self._db.write("lease", run)
        return result

    async def release(self, holder: str) -> None:
        """Drop the lease if ``holder`` holds it."""

        async def run(conn: Any) -> None:
            await conn.execute(
                self._q("DELETE FROM {t} WHERE job = %s AND agent_id = '' AND holder = %s"),
                [LEASE_JOB, holder],
            )

        await self._db.write("release", run)

    async def lease(self) -> Lease | None:
        """The current lease row."""

        async def run(conn: Any) -> Lease | None:
            cur = await conn.execute(
                self._q("SELECT holder, at FROM {t} WHERE job = %s AND agent_id = ''"),
                [LEASE_JOB],
            )
            row = await cur.fetchone()
            return None if row is None or row[0] is None else Lease(str(row[0]), _aware(row[1]))

        result: Lease | None = await self._db.read("read", run)
        return result

    async def close(self) -> None:
        """Close the pool."""
        await self._db.close()


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def open_maintenance_state(url: str | None, *, schema: str | None = None) -> MaintenanceState:
    """The maintenance records beside the memories at ``url`` (None: in process).

    A path or ``sqlite:///`` gives the ``maintenance_runs`` table of that file, ``postgresql://``
    the one of the store's schema, ``memory://`` (or None) in-process records.

    Raises:
        MemoryConfigError: an URL the records cannot be kept in.
    """
    if url is None:
        return InMemoryMaintenanceState()
    from memvault.backends.factory import parse_url, side_store_url

    kind, target = parse_url(side_store_url(url))
    if kind == "memory":
        return InMemoryMaintenanceState()
    if kind == "sqlite":
        return SQLiteMaintenanceState(Path(target).expanduser())
    if kind == "postgresql":
        return PostgresMaintenanceState(target, schema=schema)
    msg = (
        f"maintenance records cannot be kept in {url!r}: use a file path, sqlite://, "
        "postgresql:// or memory://"
    )
    raise MemoryConfigError(msg)
