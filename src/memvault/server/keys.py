"""API keys of the memvault server: hashed secrets with scopes, a tenant and an optional agent.

A key has a public id (``k_`` + 12 hex digits, shown by ``memvault keys list``) and a secret,
``mvk_<the id's 12 hex digits>_<43 url-safe base64 characters>``, that is returned once by
:meth:`KeyStore.create` and never stored: a store keeps only the SHA-256 of the secret. To
authenticate, the key id is read from the secret, the key's row is looked up by that id and the
hashes are compared in constant time (:func:`hmac.compare_digest`).

Keys live next to the memories, in the store a memvault storage URL names
(:func:`open_key_store`): an ``api_keys`` table in the (default tenant's) SQLite file, or in the
PostgreSQL schema the URL selects, or in process for ``memory://``. Every key belongs to one
tenant and may be pinned to one agent. The API is synchronous; the server calls it through
:func:`asyncio.to_thread`, and every store is safe to use from several threads.

Every store takes, keyword-only, a ``clock`` (the current UTC time, default the system clock)
and ``key_ids`` (makes the id of each new key, default ``k_`` + 12 random hex digits; an id
that is already taken is replaced by the next one it makes), so tests can fix both.

Bad input (a blank name, an unknown scope, an invalid tenant or agent id, a malformed key id)
raises :class:`~memvault.errors.MemoryValidationError` before any storage is touched. Storage
failures raise :class:`~memvault.errors.MemoryStoreError` (writes),
:class:`~memvault.errors.MemoryRetrievalError` (reads) or
:class:`~memvault.errors.MemoryConnectionError` (unreachable, not a memvault store, or closed).
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError, field_serializer, field_validator

from memvault._sidetables import (
    Migration,
    SideSchema,
    SQLiteSide,
    advisory_key,
    from_us,
    migrate_postgres,
    to_us,
)
from memvault.backends.sqlite._connect import immediate
from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
    MemoryValidationError,
)

# One scope vocabulary for keys and service actors (ADMIN implies WRITE implies READ).
from memvault.service import Scope, covers, parse_scopes, scope_rank

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import TupleRow

__all__ = [
    "KEY_TABLES",
    "ApiKey",
    "InMemoryKeyStore",
    "KeyStore",
    "PostgresKeyStore",
    "SQLiteKeyStore",
    "Scope",
    "open_key_store",
]

T = TypeVar("T")
Clock = Callable[[], datetime]


_DEFAULT_SCOPES = (Scope.READ, Scope.WRITE)

_NAME_MAX_CHARS = 100
_KEY_ID_RE = re.compile(r"k_[0-9a-f]{12}")
_SECRET_PREFIX = "mvk_"
# secrets.token_urlsafe(32): 32 random bytes, 43 base64url characters without padding.
_TOKEN_BYTES = 32
_TOKEN_CHARS = 43
_SECRET_RE = re.compile(r"mvk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
_SECRET_CHARS = len(_SECRET_PREFIX) + 12 + 1 + _TOKEN_CHARS
# Compared against when the key id is unknown, so both paths do the same work.
_NO_HASH = "0" * 64
# A fresh id collides with an existing one with probability n / 2**48; retrying is enough.
_ID_ATTEMPTS = 5


def _utc_now() -> datetime:
    return datetime.now(UTC)


# -- validation ------------------------------------------------------------------------------------


def _check_name(name: str) -> str:
    if not isinstance(name, str):
        msg = f"key name must be a string, got {type(name).__name__}"
        raise MemoryValidationError(msg)
    text = name.strip()
    if not text or len(text) > _NAME_MAX_CHARS or not text.isprintable():
        msg = f"invalid key name {name!r}: use 1-{_NAME_MAX_CHARS} printable characters"
        raise MemoryValidationError(msg)
    return text


def _check_tenant(tenant: str) -> str:
    from memvault.backends.factory import check_tenant

    try:
        return check_tenant(tenant)
    except MemoryConfigError as exc:
        raise MemoryValidationError(str(exc)) from None


def _check_agent(agent_id: str | None) -> str | None:
    if agent_id is None:
        return None
    from memvault.validation import check_agent

    return check_agent(agent_id)


def _check_scopes(scopes: Iterable[Scope | str] | Scope | str) -> frozenset[Scope]:
    return parse_scopes(scopes, owner="a key")


def _check_key_id(key_id: str) -> str:
    if not isinstance(key_id, str) or not _KEY_ID_RE.fullmatch(key_id):
        msg = f"malformed key id {key_id!r}: expected k_ followed by 12 lowercase hex digits"
        raise MemoryValidationError(msg)
    return key_id


def _check_time(value: datetime | None, field: str) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset() is None:
        msg = f"{field} must be timezone-aware, got {value!r}"
        raise MemoryValidationError(msg)
    return value.astimezone(UTC)


def _sorted_scopes(scopes: Iterable[Scope]) -> builtins.list[str]:
    return [s.value for s in sorted(scopes, key=scope_rank)]


# -- secrets ---------------------------------------------------------------------------------------


def _new_key_id() -> str:
    return "k_" + secrets.token_hex(6)


def _new_secret(key_id: str) -> str:
    return f"{_SECRET_PREFIX}{key_id.removeprefix('k_')}_{secrets.token_urlsafe(_TOKEN_BYTES)}"


def _hash_secret(secret: str) -> str:
    # A plain SHA-256, no salt or key stretching: the secrets are 256-bit random tokens, not
    # passwords people choose, so there is no dictionary to try and nothing to precompute; a
    # slow KDF (bcrypt, argon2) would add nothing but latency to every authenticated request.
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _key_id_of(secret: object) -> str | None:
    """The key id a secret names, or ``None`` if it is not shaped like a memvault secret."""
    if not isinstance(secret, str) or len(secret) != _SECRET_CHARS:
        return None
    match = _SECRET_RE.fullmatch(secret)
    return None if match is None else "k_" + match.group(1)


# -- the key ---------------------------------------------------------------------------------------


class ApiKey(BaseModel):
    """An API key as stores and callers see it: never the secret, never its hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """The public key id (``k_`` + 12 hex digits)."""
    name: str
    """A human label, 1-100 printable characters."""
    tenant: str
    """The tenant (company) whose memories the key reaches."""
    scopes: frozenset[Scope]
    """What the key may do (never empty); see :meth:`allows`."""
    agent_id: str | None = None
    """If set, the key acts as this agent only."""
    created_at: datetime
    """When the key was created (aware, UTC)."""
    revoked_at: datetime | None = None
    """When the key was revoked (aware, UTC), or ``None`` while it is valid."""

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return _check_key_id(value)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("tenant")
    @classmethod
    def _valid_tenant(cls, value: str) -> str:
        return _check_tenant(value)

    @field_validator("scopes", mode="before")
    @classmethod
    def _valid_scopes(cls, value: Any) -> frozenset[Scope]:
        return _check_scopes(value)

    @field_validator("agent_id")
    @classmethod
    def _valid_agent(cls, value: str | None) -> str | None:
        return _check_agent(value)

    @field_validator("created_at", "revoked_at")
    @classmethod
    def _aware_utc(cls, value: datetime | None) -> datetime | None:
        return _check_time(value, "key timestamps")

    @field_serializer("scopes", when_used="json")
    def _scopes_json(self, value: frozenset[Scope]) -> builtins.list[str]:
        return _sorted_scopes(value)

    @property
    def revoked(self) -> bool:
        """True once the key has been revoked."""
        return self.revoked_at is not None

    def allows(self, scope: Scope) -> bool:
        """True if the key's scopes cover ``scope`` (``admin`` ⊃ ``write`` ⊃ ``read``).

        Revocation is not considered here: a store never authenticates a revoked key.
        """
        return covers(self.scopes, scope)


# -- the protocol ----------------------------------------------------------------------------------


@runtime_checkable
class KeyStore(Protocol):
    """Storage of API keys. Synchronous and thread-safe.

    Read methods raise :class:`~memvault.errors.MemoryRetrievalError` and write methods
    :class:`~memvault.errors.MemoryStoreError` when storage fails;
    :class:`~memvault.errors.MemoryConnectionError` when the store cannot be opened or was closed.
    """

    @property
    def location(self) -> str:
        """Where the keys live (a path or a URL without password)."""
        ...

    def create(
        self,
        *,
        name: str,
        tenant: str = "default",
        scopes: Iterable[Scope | str] = _DEFAULT_SCOPES,
        agent_id: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key; returns it with its secret, which is shown once and never stored.

        Raises:
            MemoryValidationError: a bad name, tenant, scope (or no scope) or agent id.
        """
        ...

    def authenticate(self, secret: str) -> ApiKey | None:
        """The valid key ``secret`` belongs to; ``None`` for unknown, malformed or revoked.

        Never raises for a bad secret (any string, or not a string at all); storage failures
        still raise.
        """
        ...

    def get(self, key_id: str) -> ApiKey | None:
        """One key (revoked or not) by id, or ``None`` if there is none.

        Raises:
            MemoryValidationError: ``key_id`` is not a key id (``k_`` + 12 hex digits).
        """
        ...

    def list(
        self, *, tenant: str | None = None, include_revoked: bool = False
    ) -> builtins.list[ApiKey]:
        """The keys (of ``tenant`` if given), oldest first; revoked ones only if asked for."""
        ...

    def revoke(self, key_id: str) -> bool:
        """Revoke a key; ``False`` if it does not exist or was already revoked.

        The store refuses the key at once; a running server that authenticated it moments ago
        trusts it for at most ``memvault.server.rest.KEY_CACHE_SECONDS`` (0.5 s) more, in every
        worker and process sharing this store.

        Raises:
            MemoryValidationError: ``key_id`` is not a key id.
        """
        ...

    def close(self) -> None:
        """Release the store; later calls raise :class:`MemoryConnectionError`."""
        ...


# -- shared logic ----------------------------------------------------------------------------------


def _scopes_text(scopes: Iterable[Scope]) -> str:
    return ",".join(_sorted_scopes(scopes))


class _KeyStoreBase:
    """Validation, secrets and hashing; subclasses store rows."""

    def __init__(self, clock: Clock | None, key_ids: Callable[[], str] | None) -> None:
        self._clock = clock or _utc_now
        self._key_ids = key_ids or _new_key_id

    def _now(self) -> datetime:
        now = _check_time(self._clock(), "the key store's clock")
        assert now is not None
        return now

    # storage hooks

    def _insert(self, key: ApiKey, secret_hash: str) -> bool:
        """Store a new key; ``False`` if its id is taken."""
        raise NotImplementedError

    def _lookup(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and its secret hash."""
        raise NotImplementedError

    def _select(self, tenant: str | None, include_revoked: bool) -> builtins.list[ApiKey]:
        raise NotImplementedError

    def _mark_revoked(self, key_id: str, when: datetime) -> bool:
        raise NotImplementedError

    def _row_key(self, row: Sequence[Any], where: str) -> ApiKey:
        key_id, name, tenant, scopes, agent_id, created, revoked = row
        try:
            return ApiKey(
                id=key_id,
                name=name,
                tenant=tenant,
                scopes=str(scopes).split(","),
                agent_id=agent_id,
                created_at=created,
                revoked_at=revoked,
            )
        except ValidationError as exc:
            msg = f"key {key_id!r} in {where} is unreadable: {exc.errors()[0]['msg']}"
            raise MemoryRetrievalError(msg) from None

    # the KeyStore protocol

    def create(
        self,
        *,
        name: str,
        tenant: str = "default",
        scopes: Iterable[Scope | str] = _DEFAULT_SCOPES,
        agent_id: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Create a key; returns it with its secret, which is shown once and never stored.

        Raises:
            MemoryValidationError: a bad name, tenant, scope (or no scope) or agent id.
        """
        clean_name = _check_name(name)
        clean_tenant = _check_tenant(tenant)
        clean_scopes = _check_scopes(scopes)
        clean_agent = _check_agent(agent_id)
        for _ in range(_ID_ATTEMPTS):
            key_id = _check_key_id(self._key_ids())
            secret = _new_secret(key_id)
            key = ApiKey(
                id=key_id,
                name=clean_name,
                tenant=clean_tenant,
                scopes=clean_scopes,
                agent_id=clean_agent,
                created_at=self._now(),
            )
            if self._insert(key, _hash_secret(secret)):
                return key, secret
        msg = f"could not find an unused key id in {_ID_ATTEMPTS} attempts"  # pragma: no cover
        raise MemoryStoreError(msg)  # pragma: no cover

    def authenticate(self, secret: str) -> ApiKey | None:
        """The valid key ``secret`` belongs to; ``None`` for unknown, malformed or revoked.

        Never raises for a bad secret (any string, or not a string at all); storage failures
        still raise.
        """
        key_id = _key_id_of(secret)
        if key_id is None:
            return None
        digest = _hash_secret(secret)
        found = self._lookup(key_id)
        if found is None:
            hmac.compare_digest(digest, _NO_HASH)
            return None
        key, stored = found
        if not hmac.compare_digest(digest, stored) or key.revoked:
            return None
        return key

    def get(self, key_id: str) -> ApiKey | None:
        """One key (revoked or not) by id, or ``None`` if there is none.

        Raises:
            MemoryValidationError: ``key_id`` is not a key id (``k_`` + 12 hex digits).
        """
        found = self._lookup(_check_key_id(key_id))
        return None if found is None else found[0]

    def list(
        self, *, tenant: str | None = None, include_revoked: bool = False
    ) -> builtins.list[ApiKey]:
        """The keys (of ``tenant`` if given), oldest first; revoked ones only if asked for."""
        clean = None if tenant is None else _check_tenant(tenant)
        return self._select(clean, bool(include_revoked))

    def revoke(self, key_id: str) -> bool:
        """Revoke a key; ``False`` if it does not exist or was already revoked.

        The store refuses the key at once; a running server that authenticated it moments ago
        trusts it for at most ``memvault.server.rest.KEY_CACHE_SECONDS`` (0.5 s) more, in every
        worker and process sharing this store.

        Raises:
            MemoryValidationError: ``key_id`` is not a key id.
        """
        return self._mark_revoked(_check_key_id(key_id), self._now())


# -- in process ------------------------------------------------------------------------------------


class InMemoryKeyStore(_KeyStoreBase):
    """Keys in a dict of this process (``memory://``): gone when the process ends."""

    def __init__(
        self, *, clock: Clock | None = None, key_ids: Callable[[], str] | None = None
    ) -> None:
        super().__init__(clock, key_ids)
        self._rows: dict[str, tuple[ApiKey, str]] = {}  # insertion order is creation order
        self._lock = threading.Lock()
        self._closed = False

    @property
    def location(self) -> str:
        """Always ``memory://``."""
        return "memory://"

    def _check_open(self) -> None:
        if self._closed:
            msg = "key store memory:// is closed"
            raise MemoryConnectionError(msg)

    def _insert(self, key: ApiKey, secret_hash: str) -> bool:
        with self._lock:
            self._check_open()
            if key.id in self._rows:
                return False
            self._rows[key.id] = (key, secret_hash)
            return True

    def _lookup(self, key_id: str) -> tuple[ApiKey, str] | None:
        with self._lock:
            self._check_open()
            return self._rows.get(key_id)

    def _select(self, tenant: str | None, include_revoked: bool) -> builtins.list[ApiKey]:
        with self._lock:
            self._check_open()
            return [
                key
                for key, _ in self._rows.values()
                if (tenant is None or key.tenant == tenant) and (include_revoked or not key.revoked)
            ]

    def _mark_revoked(self, key_id: str, when: datetime) -> bool:
        with self._lock:
            self._check_open()
            found = self._rows.get(key_id)
            if found is None or found[0].revoked:
                return False
            key, digest = found
            self._rows[key_id] = (key.model_copy(update={"revoked_at": when}), digest)
            return True

    def close(self) -> None:
        """Forget every key; later calls raise :class:`MemoryConnectionError`."""
        with self._lock:
            self._closed = True
            self._rows.clear()


# -- SQLite ----------------------------------------------------------------------------------------

_KEY_COLUMNS = "id, name, tenant, scopes, agent_id, created_at, revoked_at"

# The ``api_keys`` table of both drivers. Migration names are recorded in the database: never
# rename or edit one, append a new one (memvault._sidetables.SideSchema). Timestamps are INTEGER
# microseconds since the epoch (UTC) on SQLite, as in the memories table; seq keeps creation order
# independent of the clock.
KEY_TABLES = SideSchema(
    store="keys",
    sqlite=(
        Migration(
            "keys_0001_api_keys",
            (
                "CREATE TABLE IF NOT EXISTS api_keys ("
                " seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,"
                " tenant TEXT NOT NULL, scopes TEXT NOT NULL, agent_id TEXT,"
                " secret_hash TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER)",
                "CREATE INDEX IF NOT EXISTS idx_api_keys_tenant_seq ON api_keys (tenant, seq)",
            ),
        ),
    ),
    postgres=(
        Migration(
            "keys_0001_api_keys",
            (
                "CREATE TABLE IF NOT EXISTS api_keys ("
                ' seq bigint GENERATED ALWAYS AS IDENTITY, id text COLLATE "C" PRIMARY KEY,'
                " name text NOT NULL, tenant text NOT NULL, scopes text NOT NULL, agent_id text,"
                " secret_hash text NOT NULL, created_at timestamptz NOT NULL,"
                " revoked_at timestamptz)",
                "CREATE INDEX IF NOT EXISTS api_keys_tenant_seq ON api_keys (tenant, seq)",
            ),
        ),
    ),
    table="api_keys",
    columns=frozenset(
        {
            "seq",
            "id",
            "name",
            "tenant",
            "scopes",
            "agent_id",
            "secret_hash",
            "created_at",
            "revoked_at",
        }
    ),
)


def _from_us(value: int | None) -> datetime | None:
    return None if value is None else from_us(value)


class SQLiteKeyStore(_KeyStoreBase):
    """Keys in the ``api_keys`` table of a memvault SQLite file (the default tenant's store).

    The store has its own connection (WAL, ``busy_timeout``), so it works next to an open memory
    backend on the same file, or in another process. A file that does not exist yet is created
    with the memory store's schema first, so the memory backend accepts it afterwards; a SQLite
    file of another application (tables but no ``store_meta``) is refused and left untouched.
    The file is opened on first use, and opening is retried on the next call after a failure.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 10_000,
        clock: Clock | None = None,
        key_ids: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(clock, key_ids)
        self._path = Path(path).expanduser()
        self._db = SQLiteSide(
            self._path,
            what="key store",
            busy_timeout_ms=busy_timeout_ms,
            migrations=KEY_TABLES,
            clock=self._now,
        )

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    def _call(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        return self._db.call(fn, write=write)

    _transaction = staticmethod(immediate)

    def _key(self, row: Sequence[Any]) -> ApiKey:
        *head, created, revoked = row
        return self._row_key((*head, _from_us(created), _from_us(revoked)), str(self._path))

    def _insert(self, key: ApiKey, secret_hash: str) -> bool:
        def run(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "INSERT INTO api_keys (id, name, tenant, scopes, agent_id, secret_hash,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (
                    key.id,
                    key.name,
                    key.tenant,
                    _scopes_text(key.scopes),
                    key.agent_id,
                    secret_hash,
                    to_us(key.created_at),
                ),
            )
            return cur.rowcount > 0

        return self._call(run, write=True)

    def _lookup(self, key_id: str) -> tuple[ApiKey, str] | None:
        def run(conn: sqlite3.Connection) -> tuple[ApiKey, str] | None:
            row = conn.execute(
                f"SELECT {_KEY_COLUMNS}, secret_hash FROM api_keys WHERE id = ?", (key_id,)
            ).fetchone()
            return None if row is None else (self._key(row[:-1]), str(row[-1]))

        return self._call(run, write=False)

    def _select(self, tenant: str | None, include_revoked: bool) -> builtins.list[ApiKey]:
        def run(conn: sqlite3.Connection) -> builtins.list[ApiKey]:
            rows = conn.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys"
                " WHERE (? IS NULL OR tenant = ?) AND (? OR revoked_at IS NULL) ORDER BY seq",
                (tenant, tenant, include_revoked),
            ).fetchall()
            return [self._key(r) for r in rows]

        return self._call(run, write=False)

    def _mark_revoked(self, key_id: str, when: datetime) -> bool:
        def run(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (to_us(when), key_id),
            )
            return cur.rowcount > 0

        return self._call(run, write=True)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        self._db.close()


# -- PostgreSQL ------------------------------------------------------------------------------------

_PG_CREATE_LOCK = advisory_key(b"memvault.api_keys")


class PostgresKeyStore(_KeyStoreBase):
    """Keys in an ``api_keys`` table of the schema a ``postgresql://`` URL selects.

    The schema is ``public`` unless the URL (``?schema=name``) or the ``schema`` argument names
    another, as for the memories and the sessions. psycopg (extra ``memvault[postgres]``) is
    imported when the store is built, not with this module. One connection of its own is opened
    on first use and reopened after it is lost; psycopg errors are translated into the memvault
    error tree with the password scrubbed.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        connect_timeout: float = 10.0,
        clock: Clock | None = None,
        key_ids: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(clock, key_ids)
        try:
            from memvault.backends.postgres._dsn import check_schema, parse_dsn
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            msg = 'PostgreSQL key stores need psycopg 3: pip install "memvault[postgres]"'
            raise MemoryConfigError(msg) from exc
        from psycopg import sql

        self._dsn = parse_dsn(url)
        if schema is not None and self._dsn.schema is not None and schema != self._dsn.schema:
            msg = f"schema {schema!r} conflicts with schema={self._dsn.schema!r} in the URL"
            raise MemoryConfigError(msg)
        self._schema = check_schema(self._dsn.schema or schema or "public")
        self._table = sql.Identifier(self._schema, "api_keys")
        self._connect_timeout = connect_timeout
        self._conn: psycopg.Connection[TupleRow] | None = None
        self._lock = threading.Lock()
        self._closed = False
        if self._dsn.schema is None and self._schema != "public":
            sep = "&" if "?" in self._dsn.location else "?"
            self._location = f"{self._dsn.location}{sep}schema={self._schema}"
        else:
            self._location = self._dsn.location

    @property
    def location(self) -> str:
        """The URL without password (with ``schema=`` unless it is ``public``)."""
        return self._location

    def _connect(self) -> psycopg.Connection[TupleRow]:
        import psycopg

        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = psycopg.connect(
            self._dsn.conninfo,
            autocommit=True,
            connect_timeout=max(2, int(self._connect_timeout)),
        )
        try:
            self._create_table(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _create_table(self, conn: psycopg.Connection[TupleRow]) -> None:
        migrate_postgres(
            conn, schema=self._schema, lock=_PG_CREATE_LOCK, migrations=KEY_TABLES.postgres
        )

    def _call(self, op: str, fn: Callable[[psycopg.Connection[TupleRow]], T], *, write: bool) -> T:
        import psycopg

        from memvault.backends.postgres._dsn import scrub

        with self._lock:
            if self._closed:
                msg = f"key store {self.location} is closed"
                raise MemoryConnectionError(msg)
            try:
                conn = self._connect()
                if write:
                    with conn.transaction():
                        return fn(conn)
                return fn(conn)
            except MemoryError:
                raise
            except (psycopg.Error, OSError) as exc:
                text = scrub(str(exc), self._dsn.secrets)
                lost = isinstance(exc, psycopg.OperationalError | OSError)
                if self._conn is not None and (lost or self._conn.broken):
                    with contextlib.suppress(Exception):
                        self._conn.close()
                    self._conn = None  # reconnect on the next call
                if lost:
                    msg = f"PostgreSQL key store {self.location} unreachable: {text}"
                    raise MemoryConnectionError(msg) from exc
                msg = f"PostgreSQL key {op} in {self.location} failed: {text}"
                raise (MemoryStoreError if write else MemoryRetrievalError)(msg) from exc

    def _insert(self, key: ApiKey, secret_hash: str) -> bool:
        from psycopg import sql

        def run(conn: psycopg.Connection[TupleRow]) -> bool:
            cur = conn.execute(
                sql.SQL(
                    "INSERT INTO {} (id, name, tenant, scopes, agent_id, secret_hash, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING"
                ).format(self._table),
                [
                    key.id,
                    key.name,
                    key.tenant,
                    _scopes_text(key.scopes),
                    key.agent_id,
                    secret_hash,
                    key.created_at,
                ],
            )
            return cur.rowcount > 0

        return self._call("create", run, write=True)

    def _lookup(self, key_id: str) -> tuple[ApiKey, str] | None:
        from psycopg import sql

        def run(conn: psycopg.Connection[TupleRow]) -> tuple[ApiKey, str] | None:
            row = conn.execute(
                sql.SQL("SELECT " + _KEY_COLUMNS + ", secret_hash FROM {} WHERE id = %s").format(
                    self._table
                ),
                [key_id],
            ).fetchone()
            if row is None:
                return None
            return self._row_key(row[:-1], self.location), str(row[-1])

        return self._call("lookup", run, write=False)

    def _select(self, tenant: str | None, include_revoked: bool) -> builtins.list[ApiKey]:
        from psycopg import sql

        def run(conn: psycopg.Connection[TupleRow]) -> builtins.list[ApiKey]:
            rows = conn.execute(
                sql.SQL(
                    "SELECT " + _KEY_COLUMNS + " FROM {} WHERE (%s::text IS NULL OR tenant = %s)"
                    " AND (%s OR revoked_at IS NULL) ORDER BY seq"
                ).format(self._table),
                [tenant, tenant, include_revoked],
            ).fetchall()
            return [self._row_key(r, self.location) for r in rows]

        return self._call("list", run, write=False)

    def _mark_revoked(self, key_id: str, when: datetime) -> bool:
        from psycopg import sql

        def run(conn: psycopg.Connection[TupleRow]) -> bool:
            cur = conn.execute(
                sql.SQL(
                    "UPDATE {} SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL"
                ).format(self._table),
                [when, key_id],
            )
            return cur.rowcount > 0

        return self._call("revoke", run, write=True)

    def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


# -- the factory -----------------------------------------------------------------------------------


def open_key_store(url: str) -> KeyStore:
    """The key store for a memvault storage URL (the URL the server's memories use).

    A plain path or ``sqlite:///path.db`` gives a :class:`SQLiteKeyStore` on that file (for a
    multi-tenant SQLite server, the default tenant's file: keys of every tenant live there),
    ``postgresql://...`` a :class:`PostgresKeyStore` in the schema the URL selects,
    ``memory://`` an :class:`InMemoryKeyStore`. Nothing is opened until the first call.

    Raises:
        MemoryConfigError: an ``http(s)://`` URL (keys are managed on the server's own store),
            ``composite://`` (name the child store instead) or another unsupported URL.
    """
    from memvault.backends.factory import parse_url, side_store_url

    text = url.strip() if isinstance(url, str) else url
    if isinstance(text, str) and text.lower().startswith(("http://", "https://")):
        msg = (
            "API keys are managed on the server's own store, not through its HTTP API: run "
            "`memvault --db <the server's storage URL> keys ...` where that store is reachable "
            "(a path, sqlite:///x.db or postgresql://...)"
        )
        raise MemoryConfigError(msg)
    kind, target = parse_url(side_store_url(text))
    if kind == "memory":
        return InMemoryKeyStore()
    if kind == "sqlite":
        return SQLiteKeyStore(Path(target).expanduser())
    if kind == "postgresql":
        return PostgresKeyStore(target)
    msg = f"API keys cannot be stored in {url!r}: use a file path, sqlite://, postgresql:// or memory://"
    raise MemoryConfigError(msg)
