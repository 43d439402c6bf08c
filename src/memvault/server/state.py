"""What every instance of a server shares: dashboard sessions and (opt-in) rate-limit buckets.

Several ``memvault serve`` processes (workers of one host, or hosts behind a load balancer)
over one store must behave as one service, so nothing a later request depends on may live in
one process's memory. This module keeps the two pieces of server state that are not already
in the store's own tables, next to the API keys (the default tenant's SQLite file, or the
PostgreSQL schema the storage URL selects; :func:`open_server_state`):

* **dashboard sessions** (``server_ui_sessions``): a row per logged-in browser, holding the
  SHA-256 of the session id (a database reader cannot ride a session), the id of the API key
  it acts with (never the secret: the key is checked again on every page, so a revocation ends
  the session everywhere), its CSRF token and when it was last used. There is no row before a
  login (the login form's CSRF token is a double-submit cookie), so anonymous requests cannot
  fill or churn the table; idle rows are deleted after :data:`IDLE_SECONDS`.
* **rate-limit buckets** (``server_rate_buckets``), used when ``serve --shared-rate-limit``:
  a token bucket per caller updated by one atomic upsert, so the limit holds across every
  instance instead of per process. Off by default: it costs a write per request.

``memory://`` (and a server without API keys) keeps the same state in process.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memvault._sidetables import Migration, PostgresSide, SideSchema, SQLiteSide
from memvault.backends.sqlite._connect import immediate
from memvault.errors import MemoryConfigError

if TYPE_CHECKING:
    from memvault.backends.postgres._dsn import ParsedDsn

__all__ = [
    "IDLE_SECONDS",
    "SERVER_TABLES",
    "InMemoryServerState",
    "PostgresServerState",
    "SQLiteServerState",
    "ServerState",
    "TokenBucket",
    "UiSession",
    "open_server_state",
]

IDLE_SECONDS = 8 * 3600.0
"""A dashboard session unused for this long is forgotten (the user logs in again)."""
_TOUCH_SECONDS = 60.0
# last_seen is rewritten at most once a minute per session: a page view is then a read, not a
# write, and the idle timeout is still exact to a minute.
_PRUNE_EVERY = 500
# Expired sessions and full buckets are deleted every this many writes (one indexed DELETE).

# Migration names are recorded in the database: never rename or edit one, append a new one.
SERVER_TABLES = SideSchema(
    store="server",
    sqlite=(
        Migration(
            "server_0001_state",
            (
                "CREATE TABLE IF NOT EXISTS server_ui_sessions ("
                " id_hash TEXT PRIMARY KEY, key_id TEXT, csrf TEXT NOT NULL,"
                " created_at REAL NOT NULL, last_seen REAL NOT NULL) WITHOUT ROWID",
                "CREATE INDEX IF NOT EXISTS server_ui_sessions_last_seen"
                " ON server_ui_sessions (last_seen)",
                "CREATE TABLE IF NOT EXISTS server_rate_buckets ("
                " name TEXT PRIMARY KEY, tokens REAL NOT NULL, stamp REAL NOT NULL,"
                " granted INTEGER NOT NULL) WITHOUT ROWID",
                "CREATE INDEX IF NOT EXISTS server_rate_buckets_stamp"
                " ON server_rate_buckets (stamp)",
            ),
        ),
    ),
    postgres=(
        Migration(
            "server_0001_state",
            (
                "CREATE TABLE IF NOT EXISTS server_ui_sessions ("
                ' id_hash text COLLATE "C" PRIMARY KEY, key_id text, csrf text NOT NULL,'
                " created_at double precision NOT NULL, last_seen double precision NOT NULL)",
                "CREATE INDEX IF NOT EXISTS server_ui_sessions_last_seen"
                " ON server_ui_sessions (last_seen)",
                "CREATE TABLE IF NOT EXISTS server_rate_buckets ("
                ' name text COLLATE "C" PRIMARY KEY, tokens double precision NOT NULL,'
                " stamp double precision NOT NULL, granted boolean NOT NULL)",
                "CREATE INDEX IF NOT EXISTS server_rate_buckets_stamp"
                " ON server_rate_buckets (stamp)",
            ),
        ),
    ),
    table="server_ui_sessions",
    columns=frozenset({"id_hash", "key_id", "csrf", "created_at", "last_seen"}),
)


class TokenBucket:
    """``rate`` tokens a second up to ``burst``; a request takes one token or waits for it."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = now

    def _refill(self, now: float) -> None:
        # Never negative: a wall clock (the in-process server state's) may step back.
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.stamp) * self.rate)
        self.stamp = max(self.stamp, now)

    def take(self, now: float) -> float:
        """Take a token: 0.0 if one was there, else the seconds until one will be."""
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate

    def full(self, now: float) -> bool:
        """True when the bucket has refilled completely (forgetting it changes nothing)."""
        self._refill(now)
        return self.tokens >= self.burst


@dataclass(frozen=True, slots=True)
class UiSession:
    """A logged-in dashboard session: its id (the cookie), CSRF token and API key id."""

    id: str
    csrf: str
    key_id: str | None
    """The API key the session acts with (None without authentication: ``--no-auth``)."""

    def csrf_ok(self, token: str | None) -> bool:
        """True if ``token`` is this session's CSRF token (constant-time comparison)."""
        return bool(token) and hmac.compare_digest(
            str(token).encode("utf-8", "replace"), self.csrf.encode("ascii")
        )


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()


def _wait(tokens: float, granted: bool, rate: float) -> float:
    return 0.0 if granted else max(0.0, (1.0 - tokens) / rate)


@runtime_checkable
class ServerState(Protocol):
    """Dashboard sessions and shared rate-limit buckets (see the module docstring)."""

    @property
    def location(self) -> str:
        """Where the state lives (a path, a URL without password, or ``memory://``)."""
        ...

    async def open_session(self, key_id: str | None) -> UiSession:
        """A new logged-in session acting with ``key_id``."""
        ...

    async def session(self, session_id: str | None) -> UiSession | None:
        """The live session with this id (its idle clock restarts), or None."""
        ...

    async def drop_session(self, session_id: str | None) -> None:
        """Forget a session (logout, revoked key)."""
        ...

    async def count_sessions(self) -> int:
        """How many sessions are live."""
        ...

    async def take_token(self, name: str, rate: float, burst: float) -> float:
        """Take one token from bucket ``name``: 0.0 if there was one, else seconds to wait."""
        ...

    async def close(self) -> None:
        """Release the connection(s)."""
        ...


class _Base:
    """Session ids, expiry and pruning cadence shared by every engine."""

    def __init__(self, idle_seconds: float, clock: Any) -> None:
        self._idle = idle_seconds
        self._clock = clock or time.time
        self._writes = 0

    def _new(self, key_id: str | None) -> UiSession:
        return UiSession(secrets.token_urlsafe(32), secrets.token_urlsafe(32), key_id)

    def _prune_due(self) -> bool:
        self._writes += 1
        return self._writes % _PRUNE_EVERY == 1


class InMemoryServerState(_Base):
    """The state in this process (``memory://``, ``--no-auth``): one instance only."""

    def __init__(self, *, idle_seconds: float = IDLE_SECONDS, clock: Any = None) -> None:
        super().__init__(idle_seconds, clock)
        self._sessions: dict[str, tuple[UiSession, float]] = {}
        self._buckets: dict[str, TokenBucket] = {}

    @property
    def location(self) -> str:
        """Always ``memory://``."""
        return "memory://"

    async def open_session(self, key_id: str | None) -> UiSession:
        """A new session, kept in this process."""
        now = self._clock()
        if self._prune_due():
            oldest = now - self._idle
            self._sessions = {k: v for k, v in self._sessions.items() if v[1] >= oldest}
        session = self._new(key_id)
        self._sessions[_digest(session.id)] = (session, now)
        return session

    async def session(self, session_id: str | None) -> UiSession | None:
        """The live session, or None."""
        if not session_id:
            return None
        digest = _digest(session_id)
        found = self._sessions.get(digest)
        now = self._clock()
        if found is None:
            return None
        if now - found[1] > self._idle:
            del self._sessions[digest]
            return None
        self._sessions[digest] = (found[0], now)
        return found[0]

    async def drop_session(self, session_id: str | None) -> None:
        """Forget the session."""
        if session_id:
            self._sessions.pop(_digest(session_id), None)

    async def count_sessions(self) -> int:
        """Live sessions (expired ones not yet pruned included)."""
        return len(self._sessions)

    async def take_token(self, name: str, rate: float, burst: float) -> float:
        """A :class:`TokenBucket` per name (single-threaded event loop: no lock needed)."""
        now = self._clock()
        bucket = self._buckets.get(name)
        if bucket is None:
            bucket = self._buckets[name] = TokenBucket(rate, burst, now)
        wait = bucket.take(now)
        if self._prune_due():
            # A full bucket carries no state (a new one starts full).
            self._buckets = {k: b for k, b in self._buckets.items() if not b.full(now)}
        return wait

    async def close(self) -> None:
        """Forget everything."""
        self._sessions.clear()
        self._buckets.clear()


# -- SQL ------------------------------------------------------------------------------------------

# The token bucket in one statement: refill by the time since the last take (never negative,
# whichever instance's clock is behind), take a token if one is there, and say whether it did.
# ``server_rate_buckets.x`` is the row before the update in both engines.
_REFILL = {
    "sqlite": "min(:burst, server_rate_buckets.tokens"
    " + max(0.0, :now - server_rate_buckets.stamp) * :rate)",
    "postgres": "LEAST(%(burst)s, server_rate_buckets.tokens"
    " + GREATEST(0.0, %(now)s - server_rate_buckets.stamp) * %(rate)s)",
}


def _take_sql(engine: str) -> str:
    refill = _REFILL[engine]
    if engine == "sqlite":
        values = "(:name, :burst - 1.0, :now, 1)"
        stamp = "max(server_rate_buckets.stamp, :now)"
        yes, no = "1", "0"
    else:
        values = "(%(name)s, %(burst)s - 1.0, %(now)s, true)"
        stamp = "GREATEST(server_rate_buckets.stamp, %(now)s)"
        yes, no = "true", "false"
    return (
        f"INSERT INTO server_rate_buckets (name, tokens, stamp, granted) VALUES {values}"
        " ON CONFLICT (name) DO UPDATE SET"
        f" tokens = CASE WHEN {refill} >= 1.0 THEN {refill} - 1.0 ELSE {refill} END,"
        f" stamp = {stamp},"
        f" granted = CASE WHEN {refill} >= 1.0 THEN {yes} ELSE {no} END"
        " RETURNING tokens, granted"
    )


class SQLiteServerState(_Base):
    """The state in a memvault SQLite file (the default tenant's, beside the API keys)."""

    def __init__(
        self,
        path: str | Path,
        *,
        idle_seconds: float = IDLE_SECONDS,
        busy_timeout_ms: int = 10_000,
        clock: Any = None,
    ) -> None:
        super().__init__(idle_seconds, clock)
        self._path = Path(path).expanduser()
        self._db = SQLiteSide(
            self._path,
            what="server state",
            busy_timeout_ms=busy_timeout_ms,
            migrations=SERVER_TABLES,
        )
        self._take = _take_sql("sqlite")

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    async def open_session(self, key_id: str | None) -> UiSession:
        """Insert a session row (and, now and then, delete the expired ones)."""
        session, now = self._new(key_id), self._clock()
        prune = self._prune_due()

        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                if prune:
                    conn.execute(
                        "DELETE FROM server_ui_sessions WHERE last_seen < ?", (now - self._idle,)
                    )
                conn.execute(
                    "INSERT INTO server_ui_sessions (id_hash, key_id, csrf, created_at,"
                    " last_seen) VALUES (?, ?, ?, ?, ?)",
                    (_digest(session.id), key_id, session.csrf, now, now),
                )

        await self._db.run(run, write=True)
        return session

    async def session(self, session_id: str | None) -> UiSession | None:
        """The session row, touched at most once a minute."""
        if not session_id:
            return None
        digest, now = _digest(session_id), self._clock()

        def run(conn: sqlite3.Connection) -> UiSession | None:
            row = conn.execute(
                "SELECT key_id, csrf, last_seen FROM server_ui_sessions WHERE id_hash = ?",
                (digest,),
            ).fetchone()
            if row is None:
                return None
            if now - float(row[2]) > self._idle:
                with immediate(conn):
                    conn.execute("DELETE FROM server_ui_sessions WHERE id_hash = ?", (digest,))
                return None
            if now - float(row[2]) > _TOUCH_SECONDS:
                with immediate(conn):
                    conn.execute(
                        "UPDATE server_ui_sessions SET last_seen = ? WHERE id_hash = ?",
                        (now, digest),
                    )
            return UiSession(session_id, str(row[1]), row[0])

        return await self._db.run(run, write=False)

    async def drop_session(self, session_id: str | None) -> None:
        """Delete the session row."""
        if not session_id:
            return
        digest = _digest(session_id)

        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                conn.execute("DELETE FROM server_ui_sessions WHERE id_hash = ?", (digest,))

        await self._db.run(run, write=True)

    async def count_sessions(self) -> int:
        """Rows in the sessions table."""

        def run(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT count(*) FROM server_ui_sessions").fetchone()[0])

        return await self._db.run(run, write=False)

    async def take_token(self, name: str, rate: float, burst: float) -> float:
        """One upsert in a write transaction."""
        now = self._clock()
        params = {"name": name, "rate": rate, "burst": burst, "now": now}
        prune = self._prune_due()

        def run(conn: sqlite3.Connection) -> tuple[float, bool]:
            with immediate(conn):
                if prune:
                    # A bucket that would be full again carries no state.
                    conn.execute(
                        "DELETE FROM server_rate_buckets WHERE stamp < ?", (now - burst / rate,)
                    )
                row = conn.execute(self._take, params).fetchone()
            return float(row[0]), bool(row[1])

        tokens, granted = await self._db.run(run, write=True)
        return _wait(tokens, granted, rate)

    async def close(self) -> None:
        """Close the connection."""
        await self._db.aclose()


class PostgresServerState(_Base):
    """The state in the PostgreSQL schema a ``postgresql://`` URL selects (a small pool)."""

    def __init__(
        self,
        url: str,
        *,
        idle_seconds: float = IDLE_SECONDS,
        pool_max: int = 4,
        clock: Any = None,
    ) -> None:
        super().__init__(idle_seconds, clock)
        from memvault.backends.postgres._dsn import check_schema, parse_dsn

        dsn: ParsedDsn = parse_dsn(url)
        schema = check_schema(dsn.schema or "public")
        self._location = dsn.location
        self._db = PostgresSide(
            dsn,
            schema=schema,
            location=dsn.location,
            noun="server state",
            lock_name=b"memvault.server_state",
            migrations=SERVER_TABLES,
            pool_name="memvault-server-state",
            pool_max=pool_max,
            connect_timeout=10.0,
        )
        from psycopg import sql

        self._path = sql.SQL("SET search_path TO {}").format(sql.Identifier(schema))
        self._take = _take_sql("postgres")

    @property
    def location(self) -> str:
        """The URL without password."""
        return self._location

    async def _run(self, op: str, text: str, params: Any, *, write: bool) -> list[Any]:
        async def run(conn: Any) -> list[Any]:
            await conn.execute(self._path)
            cur = await conn.execute(text, params)
            return list(await cur.fetchall()) if cur.description else []

        if write:
            return await self._db.write(op, run)
        return await self._db.read(op, run)

    async def open_session(self, key_id: str | None) -> UiSession:
        """Insert a session row (and, now and then, delete the expired ones)."""
        session, now = self._new(key_id), self._clock()
        if self._prune_due():
            await self._run(
                "session prune",
                "DELETE FROM server_ui_sessions WHERE last_seen < %s",
                [now - self._idle],
                write=True,
            )
        await self._run(
            "session open",
            "INSERT INTO server_ui_sessions (id_hash, key_id, csrf, created_at, last_seen)"
            " VALUES (%s, %s, %s, %s, %s)",
            [_digest(session.id), key_id, session.csrf, now, now],
            write=True,
        )
        return session

    async def session(self, session_id: str | None) -> UiSession | None:
        """The session row, touched at most once a minute."""
        if not session_id:
            return None
        digest, now = _digest(session_id), self._clock()
        rows = await self._run(
            "session read",
            "SELECT key_id, csrf, last_seen FROM server_ui_sessions WHERE id_hash = %s",
            [digest],
            write=False,
        )
        if not rows:
            return None
        key_id, csrf, seen = rows[0]
        if now - float(seen) > self._idle:
            await self.drop_session(session_id)
            return None
        if now - float(seen) > _TOUCH_SECONDS:
            await self._run(
                "session touch",
                "UPDATE server_ui_sessions SET last_seen = %s WHERE id_hash = %s",
                [now, digest],
                write=True,
            )
        return UiSession(session_id, str(csrf), key_id)

    async def drop_session(self, session_id: str | None) -> None:
        """Delete the session row."""
        if session_id:
            await self._run(
                "session drop",
                "DELETE FROM server_ui_sessions WHERE id_hash = %s",
                [_digest(session_id)],
                write=True,
            )

    async def count_sessions(self) -> int:
        """Rows in the sessions table."""
        rows = await self._run(
            "session count", "SELECT count(*) FROM server_ui_sessions", [], write=False
        )
        return int(rows[0][0])

    async def take_token(self, name: str, rate: float, burst: float) -> float:
        """One upsert (the row lock serialises concurrent takes of one bucket)."""
        now = self._clock()
        if self._prune_due():
            await self._run(
                "bucket prune",
                "DELETE FROM server_rate_buckets WHERE stamp < %s",
                [now - burst / rate],
                write=True,
            )
        rows = await self._run(
            "rate limit",
            self._take,
            {"name": name, "rate": rate, "burst": burst, "now": now},
            write=True,
        )
        return _wait(float(rows[0][0]), bool(rows[0][1]), rate)

    async def close(self) -> None:
        """Close the pool."""
        await self._db.close()


def open_server_state(url: str) -> ServerState:
    """The server state for a storage URL, beside its API keys (:func:`open_key_store`).

    Raises:
        MemoryConfigError: a URL that cannot hold it (``http(s)://``, another scheme).
    """
    from memvault.backends.factory import parse_url, side_store_url

    kind, target = parse_url(side_store_url(url))
    if kind == "memory":
        return InMemoryServerState()
    if kind == "sqlite":
        return SQLiteServerState(Path(target).expanduser())
    if kind == "postgresql":
        return PostgresServerState(target)
    msg = f"server state cannot be stored in {url!r}: use a file path, sqlite:// or postgresql://"
    raise MemoryConfigError(msg)
