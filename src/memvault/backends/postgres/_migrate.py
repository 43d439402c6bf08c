"""Opening the PostgreSQL store: schema creation, migrations and the embedding-model check.

What ``connect`` runs on its first connection, in one transaction under a database-wide
advisory lock: the pgvector extension, the schema, the migrations of :mod:`.schema`, the
refusal to touch another application's tables, the stored embedding model (and the vector
column's dimension), and the HNSW index. This is :class:`PostgresMigrateMixin`, mixed into
:class:`~memvault.backends.postgres.PostgresBackend`; it is a separate module only to keep each
file readable.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from memvault.backends._base import BaseBackend, check_stored_model
from memvault.backends.postgres._driver import Conn, psycopg, sql
from memvault.backends.postgres._dsn import SCHEMA_LOCK
from memvault.backends.postgres.schema import (
    HNSW_INDEX,
    MIGRATIONS,
    SCHEMA_VERSION,
    hnsw_index_sql,
    migration_sql,
)
from memvault.errors import MemoryConnectionError

__all__ = ["PostgresMigrateMixin"]

# The log records keep the logger name they had before this module was split out of backend.
logger = logging.getLogger("memvault.backends.postgres.backend")

# One key for every memvault migration in the database: CREATE EXTENSION is database-wide, and
# migrations are rare and quick, so serialising them all costs nothing.
_MIGRATE_LOCK = int.from_bytes(
    hashlib.sha256(b"memvault:postgres:migrate").digest()[:8], "big", signed=True
)

if TYPE_CHECKING:
    _MixinBase = BaseBackend
else:
    _MixinBase = object


class PostgresMigrateMixin(_MixinBase):
    """Schema creation, migrations and store checks of the PostgreSQL backend."""

    if TYPE_CHECKING:
        # Provided by PostgresBackend (memvault.backends.postgres.backend).
        _schema: str
        _hnsw: bool
        _index_build_memory: str
        _search_path: sql.Composable | None

        def _message(self, exc: BaseException) -> str: ...

    async def _migrate(self, conn: Conn) -> None:
        """Create or upgrade the store in one transaction under a database-wide advisory lock.

        Concurrent connects (several processes starting at once) queue on the lock, and the
        second finds everything done. Creating the HNSW index on a large existing table (first
        connect with ``hnsw=True`` after running without) holds the lock while it builds.
        """
        schema = sql.Identifier(self._schema)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATE_LOCK])
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
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
