"""Build the :class:`~memvault.persistence.PersistenceBackend` of one company (tenant)."""

from __future__ import annotations

from pathlib import Path

from memvault.config import COMPOSITE_URL, MemvaultConfig
from memvault.config.persistence import PersistenceConfig
from memvault.errors import MemoryConfigError
from memvault.persistence.backend import PostgresDatabase, SQLiteDatabase, SQLPersistence

__all__ = ["create_persistence", "persistence_url"]

OPERATIONS_FILE = "operations.db"
"""The file of operational records beside a store that is not SQLite (Qdrant, mem0)."""


def persistence_url(
    config: MemvaultConfig, *, tenant: str | None = None, memory_url: str | None = None
) -> str:
    """Where a tenant's operational records live, as a storage URL (path or postgresql://).

    ``persistence.backend`` and its ``sqlite.path`` / ``postgresql.url`` win; unset, the
    records follow the memories: the memory store's SQLite file or PostgreSQL schema (for
    another tenant, that tenant's file or schema); an in-process store keeps them in process
    (``memory://``); a Qdrant or mem0 store in ``operations.db`` in its directory.
    ``memory_url`` is the memory store's URL when it is not the configuration's (``Memory(url)``).
    """
    from memvault.backends._urls import parse_url
    from memvault.backends.factory import tenant_url

    p = config.persistence
    if p.backend == "postgresql" or (p.backend is None and p.postgresql.url):
        url = p.postgresql.url or _memory_url(config, memory_url)
        if not url.startswith(("postgresql://", "postgres://")):
            msg = (
                "persistence.backend is postgresql but no postgresql.url is set and the memory "
                f"store is not PostgreSQL ({url!r})"
            )
            raise MemoryConfigError(msg)
        return url if tenant is None else tenant_url(url, tenant)
    if p.sqlite.path:
        path = p.sqlite.path
        if "{tenant}" in path:
            return str(Path(path.replace("{tenant}", tenant or "default")).expanduser())
        path = str(Path(path).expanduser())
        return path if tenant is None else tenant_url(path, tenant)
    url = _memory_url(config, memory_url)
    kind, target = parse_url(url)
    if kind == "memory":
        return "memory://"
    if p.backend == "sqlite" and kind == "postgresql":
        msg = (
            "persistence.backend is sqlite: set persistence.sqlite.path (the memories are on "
            "PostgreSQL)"
        )
        raise MemoryConfigError(msg)
    if kind in ("qdrant", "mem0"):
        where = target.split("?", 1)[0]
        if where.startswith(("http://", "https://")):
            msg = (
                "operational records cannot live in a Qdrant server: set persistence.sqlite.path "
                "or persistence.postgresql.url"
            )
            raise MemoryConfigError(msg)
        url = str(Path(where) / OPERATIONS_FILE)
    return url if tenant is None else tenant_url(url, tenant)


def _memory_url(config: MemvaultConfig, given: str | None = None) -> str:
    url = given or config.resolved_url()
    return config.composite_default_url() if url == COMPOSITE_URL else url


def create_persistence(
    config: MemvaultConfig | None = None,
    *,
    url: str | None = None,
    tenant: str | None = None,
    persistence: PersistenceConfig | None = None,
) -> SQLPersistence:
    """An isolated, not yet connected operational store for one company (tenant).

    ``url`` names the place outright (a SQLite path, ``sqlite:///``, ``postgresql://``,
    ``memory://``); else it comes from ``config`` (:func:`persistence_url`). Each tenant gets
    its own file or schema, so no state is shared between companies. Call ``connect()`` (or
    use ``async with``) before the repositories.

    Raises:
        MemoryConfigError: an unusable URL or ``persistence:`` section.
    """
    from memvault.backends._urls import parse_url

    config = config if config is not None else MemvaultConfig()
    settings = persistence or config.persistence
    target_url = url if url is not None else persistence_url(config, tenant=tenant)
    kind, target = parse_url(target_url)
    if kind == "memory":
        return SQLPersistence(SQLiteDatabase.in_process(), location="memory://")
    if kind == "sqlite":
        path = Path(target).expanduser()
        if not settings.sqlite.wal_mode and _is_memory_file(config, path):
            msg = (
                "persistence.sqlite.wal_mode: false needs a file of its own (set "
                "persistence.sqlite.path): the memory store's file stays in WAL mode"
            )
            raise MemoryConfigError(msg)
        db = SQLiteDatabase(
            path,
            wal_mode=settings.sqlite.wal_mode,
            journal_size_limit=settings.sqlite.journal_size_limit,
            synchronous=config.storage.synchronous,
        )
        return SQLPersistence(db, location=str(path))
    if kind == "postgresql":
        from memvault.backends.postgres._dsn import check_schema, parse_dsn

        dsn = parse_dsn(target)
        schema = check_schema(dsn.schema or "public")
        pg = PostgresDatabase(
            dsn, schema=schema, location=dsn.location, pool_size=settings.postgresql.pool_size
        )
        return SQLPersistence(pg, location=dsn.location)
    msg = (
        f"operational records cannot be stored in {target_url!r}: use a file path, sqlite://, "
        "postgresql:// or memory://"
    )
    raise MemoryConfigError(msg)


def _is_memory_file(config: MemvaultConfig, path: Path) -> bool:
    try:
        from memvault.backends._urls import parse_url

        kind, target = parse_url(_memory_url(config))
    except MemoryConfigError:
        return False
    return kind == "sqlite" and Path(target).expanduser().resolve() == path.resolve()
