"""Which embedding model a PostgreSQL store was built with, read without changing anything."""

from __future__ import annotations

from memvault.backends.postgres._driver import psycopg, sql
from memvault.backends.postgres._dsn import check_schema, parse_dsn, scrub
from memvault.errors import MemoryConnectionError

__all__ = ["recorded_postgres_model"]


def recorded_postgres_model(url: str, *, connect_timeout: float = 10.0) -> str | None:
    """The ``embedding_model`` the store at ``url`` records, or None for a new or empty store.

    One short read-only transaction on one connection: no schema or table is created. The
    schema is the URL's ``schema=`` (default ``public``), as :class:`PostgresBackend` uses it.

    Raises:
        MemoryConfigError: a malformed URL.
        MemoryConnectionError: the server cannot be reached or refuses the login.
    """
    dsn = parse_dsn(url)
    schema = check_schema(dsn.schema or "public")
    try:
        conn = psycopg.connect(
            dsn.conninfo, autocommit=True, connect_timeout=max(1, int(connect_timeout))
        )
    except psycopg.Error as exc:
        msg = f"cannot connect to {dsn.location}: {scrub(str(exc), dsn.secrets)}"
        raise MemoryConnectionError(msg) from None
    try:
        with conn.transaction():
            conn.execute("SET TRANSACTION READ ONLY")
            row = conn.execute(
                "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = %s"
                " AND tablename IN ('store_meta', 'memories')",
                [schema],
            ).fetchone()
            if row is None or row[0] != 2:
                return None
            memories = sql.Identifier(schema, "memories")
            meta = sql.Identifier(schema, "store_meta")
            found = conn.execute(
                sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(memories)
            ).fetchone()
            if not found or not found[0]:
                return None  # an empty store adopts any model (no vectors to mix up)
            model = conn.execute(
                sql.SQL("SELECT value FROM {} WHERE key = 'embedding_model'").format(meta)
            ).fetchone()
    except psycopg.Error as exc:
        msg = f"cannot read {dsn.location}: {scrub(str(exc), dsn.secrets)}"
        raise MemoryConnectionError(msg) from None
    finally:
        conn.close()
    return str(model[0]) if model is not None and model[0] else None
