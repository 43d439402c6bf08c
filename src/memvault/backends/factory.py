"""Build a backend from a storage URL or a configuration.

URL forms: a plain path or ``sqlite:///path.db`` (SQLite), ``memory://`` (in process),
``postgresql://user@host/db`` (PostgreSQL, extra ``memvault[postgres]``), ``composite://``
(children by category from ``memory.composite`` in the configuration), ``qdrant://DIR`` (local
on-disk Qdrant, extra ``memvault[qdrant]``), ``qdrant+http://host:port`` and
``qdrant+https://host:port`` (a Qdrant server), ``mem0://DIR`` (mem0's local store, extra
``memvault[mem0]``). For ``qdrant://`` and ``mem0://`` everything after ``//`` is the directory,
so ``qdrant:///abs/dir`` is absolute and ``qdrant://rel/dir`` relative; ``?collection=NAME``
picks the collection prefix (default ``memvault``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from memvault.backends._urls import _split_collection, parse_url
from memvault.config import COMPOSITE_URL, DEFAULT_DB_PATH, PROJECT_DB_PATH, MemvaultConfig
from memvault.errors import MemoryConfigError
from memvault.models import MemoryCategory, MemoryLevel
from memvault.protocols import Embedder, MemoryStore

__all__ = [
    "check_tenant",
    "create_memory_backend",
    "keep_working_in_process",
    "open_backend",
    "open_memory_store",
    "parse_url",
    "side_store_url",
    "tenant_schema",
    "tenant_slug",
    "tenant_url",
    "working_routed",
]


def open_backend(
    url: str,
    *,
    embedder: Embedder | None = None,
    config: MemvaultConfig | None = None,
    **kwargs: Any,
) -> MemoryStore:
    """A (not yet connected) backend for ``url``.

    Without ``embedder``: the one ``config`` names, or, naming none, the model the store at
    ``url`` records (:func:`memvault.backends.embedder.build_embedder`), else the default.

    ``composite://`` builds a :class:`~memvault.backends.composite.CompositeBackend` from
    ``config.composite``; its children share one embedder (and ``kwargs``).
    """
    cfg = config or MemvaultConfig()
    if embedder is None:
        # The ``embeddings`` section (an OpenAI-compatible endpoint) or the ``embedder`` spec;
        # naming neither, the model the store at ``url`` was built with (else the default).
        from memvault.backends.embedder import build_embedder

        embedder = build_embedder(cfg, url=url)
    opts: dict[str, Any] = {
        "max_content_chars": cfg.options.max_content_chars,
        "max_memories_per_agent": cfg.options.max_memories_per_agent,
        "preset": cfg.retrieval.preset,
        "shared_knowledge": cfg.options.shared_knowledge_base,
    }
    opts.update(kwargs)
    kind, target = parse_url(url)
    if kind == "composite":
        return _open_composite(cfg, embedder, kwargs)
    if kind in ("qdrant", "mem0"):
        return _open_adapter(kind, target, embedder, cfg, opts)
    if kind == "memory":
        from memvault.backends.inmemory import InMemoryBackend

        return InMemoryBackend(embedder, **opts)
    if kind == "sqlite":
        from memvault.backends.sqlite import SQLiteBackend

        path = Path(target).expanduser()
        return SQLiteBackend(
            path,
            embedder,
            synchronous=cfg.storage.synchronous,
            create_dirs=_managed_dir(path, cfg),
            **opts,
        )
    # postgresql: imported here so that psycopg stays an optional extra (the import raises a
    # MemoryConfigError naming ``memvault[postgres]`` when it is missing).
    from memvault.backends.postgres import PostgresBackend

    read_url = _replica_of(cfg, target)
    if read_url is not None:
        opts["read_url"] = read_url
    return PostgresBackend(target, embedder, **opts)


def _replica_of(cfg: MemvaultConfig, target: str) -> str | None:
    """``storage.read_url`` when ``target`` is the configured database (any schema of it).

    A replica replicates a whole cluster, so a tenant's schema is read from it too; another
    database opened with the same configuration (a migration target) is not.

    Raises:
        MemoryConfigError: ``read_url`` is not a PostgreSQL URL.
    """
    read_url = cfg.storage.read_url
    if not read_url:
        return None
    from memvault.backends.postgres._dsn import parse_dsn

    kind, replica = parse_url(read_url)
    if kind != "postgresql":
        msg = (
            f"storage.read_url must be a postgresql:// URL (a streaming replica), got {read_url!r}"
        )
        raise MemoryConfigError(msg)
    own_kind, own = parse_url(cfg.resolved_url())
    if own_kind != "postgresql" or parse_dsn(own).conninfo != parse_dsn(target).conninfo:
        return None
    return replica


def _open_adapter(
    kind: str, target: str, embedder: Embedder, cfg: MemvaultConfig, opts: dict[str, Any]
) -> MemoryStore:
    """A Qdrant or mem0 store; their packages are optional extras, imported only here (the
    import raises a MemoryConfigError naming ``memvault[qdrant]`` / ``memvault[mem0]``)."""
    where, extra = _split_collection(target)
    collection = extra.get("collection", "memvault")
    if kind == "qdrant":
        from memvault.backends.qdrant import QdrantBackend

        if where.startswith(("http://", "https://")):
            return QdrantBackend(where, embedder, collection=collection, **opts)
        path = Path(where).expanduser()
        managed = _managed_dir(path, cfg)
        return QdrantBackend(path, embedder, collection=collection, create_dirs=managed, **opts)
    from memvault.backends.mem0 import Mem0Backend

    path = Path(where).expanduser()
    managed = _managed_dir(path, cfg)
    return Mem0Backend(path, embedder, collection=collection, create_dirs=managed, **opts)


SIDE_DB_NAME = "memvault-side.db"
"""The SQLite file beside a local qdrant or mem0 store for memvault's side tables."""


def side_store_url(url: str) -> str:
    """Where the side tables of the store at ``url`` live (sessions, learning records, API keys,
    maintenance runs): the store itself for SQLite, PostgreSQL and ``memory://``; for a local
    ``qdrant://DIR`` or ``mem0://DIR`` store, a SQLite file in that directory
    (``DIR/memvault-side.db``, one per collection prefix other than the default).

    Raises:
        MemoryConfigError: a Qdrant server store (it has no directory; keep those tables in a
            SQLite or PostgreSQL store of their own), or a malformed URL.
    """
    kind, target = parse_url(url)
    if kind not in ("qdrant", "mem0"):
        return url
    where, extra = _split_collection(target)
    if where.startswith(("http://", "https://")):
        msg = (
            f"a Qdrant server store ({url!r}) has no directory for memvault's side tables "
            "(sessions, learning records, API keys, maintenance runs): use a local qdrant:///dir "
            "or mem0:///dir store, or SQLite/PostgreSQL, for them"
        )
        raise MemoryConfigError(msg)
    name = SIDE_DB_NAME
    if extra.get("collection", "memvault") != "memvault":
        name = f"memvault-side.{extra['collection']}.db"
    return str(Path(where).expanduser() / name)


def _managed_dir(path: Path, cfg: MemvaultConfig) -> bool:
    """True if ``path`` lies directly in a directory memvault creates on demand.

    Those are ``~/.memvault`` and ``./.memvault`` (the default stores, their tenant files
    beside them) and the configured ``storage.data_dir``. Any other missing directory means a
    mistyped path, which the SQLite store refuses rather than starting an empty store there.
    """
    managed = [Path(DEFAULT_DB_PATH).expanduser().parent, Path(PROJECT_DB_PATH).parent]
    if cfg.storage.data_dir:
        managed.append(Path(cfg.storage.data_dir).expanduser())
    parent = path.parent.absolute()
    return any(parent == d.absolute() for d in managed)


def create_memory_backend(
    config: MemvaultConfig, *, embedder: Embedder | None = None, tenant: str | None = None
) -> MemoryStore:
    """An isolated backend for one company (tenant) built from ``config``.

    With ``tenant`` set, a SQLite store lives in its own file next to the configured one
    (``<name>.<tenant slug>.db``, see :func:`tenant_slug`) and a PostgreSQL store in its own
    schema (:func:`tenant_schema`), so no two tenants ever share a file or a schema; an
    in-memory store is a fresh object anyway. Shared knowledge is per store, hence per tenant.

    Raises:
        MemoryConfigError: level ``none``, or an invalid tenant name (:func:`check_tenant`).
    """
    if config.level is MemoryLevel.NONE:
        msg = "memory level 'none' stores nothing: no backend to create"
        raise MemoryConfigError(msg)
    url = config.resolved_url()
    if tenant is not None:
        tenant = check_tenant(tenant)
        if parse_url(url)[0] == "composite":
            # Every child gets the tenant treatment a plain store of its URL would get.
            comp = config.composite
            config = config.model_copy(
                update={
                    "composite": comp.model_copy(
                        update={
                            "default": tenant_url(config.composite_default_url(), tenant),
                            "routes": {c: tenant_url(u, tenant) for c, u in comp.routes.items()},
                        }
                    )
                }
            )
        url = tenant_url(url, tenant)
    return open_backend(url, embedder=embedder, config=config)


def open_memory_store(
    url: str, *, embedder: Embedder | None = None, config: MemvaultConfig | None = None
) -> MemoryStore:
    """The store a memory (``AsyncMemory``, a service tenant) uses at ``url``.

    That is :func:`open_backend`'s store with WORKING memories kept in process
    (:func:`keep_working_in_process`). Tools that copy stores as they are (``memvault
    migrate``) use :func:`open_backend` directly.
    """
    cfg = config or MemvaultConfig()
    store = open_backend(url, embedder=embedder, config=working_routed(cfg))
    return keep_working_in_process(store, cfg)


def working_routed(config: MemvaultConfig) -> MemvaultConfig:
    """``config`` with WORKING routed to ``memory://`` in a composite that does not route it.

    A composite the user did not route WORKING in gets an in-process child for it, like every
    other durable store gets one from :func:`keep_working_in_process`. Any other
    configuration is returned as it is.
    """
    if config.backend != "composite" or MemoryCategory.WORKING in config.composite.routes:
        return config
    routes = {**config.composite.routes, MemoryCategory.WORKING: "memory://"}
    composite = config.composite.model_copy(update={"routes": routes})
    return config.model_copy(update={"composite": composite})


def keep_working_in_process(store: MemoryStore, config: MemvaultConfig) -> MemoryStore:
    """``store`` with its WORKING memories kept in process, never persisted.

    The design documents give WORKING memory (the current task's context) no persistence. A
    store that already lives in process (``memory://``) or a composite (whose routes say where
    WORKING goes) is returned as it is; any other store is wrapped in a
    :class:`~memvault.backends.working.WorkingOverlay` with a fresh in-process child of its own,
    so each memory object has its own working memory. To persist WORKING memories, route them
    explicitly: ``backend: composite`` with ``composite.routes: {working: <url>}``.
    """
    from memvault.backends.composite import CompositeBackend
    from memvault.backends.inmemory import InMemoryBackend
    from memvault.backends.working import WorkingOverlay

    # By location, not by class: the qdrant and mem0 backends are InMemoryBackend subclasses
    # (their search index is an in-process mirror) but persist everything.
    if isinstance(store, CompositeBackend) or store.location == "memory://":
        return store
    scratch = InMemoryBackend(
        store.embedder,
        max_content_chars=config.options.max_content_chars,
        max_memories_per_agent=config.options.max_memories_per_agent,
        preset=config.retrieval.preset,
        shared_knowledge=config.options.shared_knowledge_base,
    )
    return WorkingOverlay(store, scratch, preset=config.retrieval.preset)


def tenant_url(url: str, tenant: str) -> str:
    """``url`` for one tenant: its own SQLite file or PostgreSQL schema (memory:// is fresh).

    A local Qdrant or mem0 store gets its own directory beside the configured one
    (``<dir>.<tenant slug>``: Qdrant locks a directory per client, and mem0's history is per
    directory); a Qdrant server store its own collections (``<prefix>_<tenant slug>``).
    """
    kind, target = parse_url(url)
    if kind == "postgresql":
        return _tenant_postgres_url(target, tenant)
    if kind in ("qdrant", "mem0"):
        return _tenant_adapter_url(kind, target, tenant)
    if kind != "sqlite":
        return url
    p = Path(target).expanduser()
    return str(p.with_name(f"{p.stem}.{tenant_slug(tenant)}{p.suffix or '.db'}"))


def _tenant_adapter_url(kind: str, target: str, tenant: str) -> str:
    where, extra = _split_collection(target)
    slug = tenant_slug(tenant)
    if where.startswith(("http://", "https://")):
        base = extra.get("collection", "memvault")
        return f"qdrant+{where}?collection={quote(f'{base}_{slug}', safe='')}"
    query = f"?collection={quote(extra['collection'], safe='')}" if "collection" in extra else ""
    return f"{kind}://{where.rstrip('/')}.{slug}{query}"


# -- tenants --------------------------------------------------------------------------------------

_TENANT_MAX_CHARS = 100
_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def check_tenant(tenant: str) -> str:
    """``tenant`` stripped, if it can name a tenant: 1-100 printable characters.

    Raises:
        MemoryConfigError: not a string, blank, too long, or with control characters.
    """
    if not isinstance(tenant, str):
        msg = f"tenant must be a string, got {type(tenant).__name__}"
        raise MemoryConfigError(msg)
    name = tenant.strip()
    if not name or len(name) > _TENANT_MAX_CHARS or not name.isprintable():
        msg = f"invalid tenant {tenant!r}: use 1-{_TENANT_MAX_CHARS} printable characters"
        raise MemoryConfigError(msg)
    return name


def _tenant_hash(tenant: str) -> str:
    return hashlib.sha256(tenant.encode()).hexdigest()[:10]


def tenant_slug(tenant: str) -> str:
    """The file-name part of a tenant: the name itself if it is lowercase ASCII letters, digits,
    ``-`` and ``_``; otherwise those characters of it plus ``.`` and a hash of the exact name.

    Distinct tenants never share a slug: hashed slugs contain a ``.``, which plain ones cannot,
    and the hash separates names that clean up alike ("a/b" and "a_b"), or that differ only in
    case, which a case-insensitive file system (macOS, Windows) would otherwise merge.
    """
    if set(tenant) <= _SAFE_CHARS:
        return tenant
    clean = "".join(ch if ch in _SAFE_CHARS else "_" for ch in tenant.lower())[:40]
    return f"{clean}.{_tenant_hash(tenant)}"


def tenant_schema(tenant: str, base: str | None = None) -> str:
    """The PostgreSQL schema of a tenant: ``<base or t>_<cleaned name>_<hash of the name>``.

    Always hashed (so never shared by two tenants), lowercase (no quoting surprises) and at most
    63 bytes (PostgreSQL would truncate longer names).
    """
    prefix = base if base is not None else "t"
    budget = 63 - len(prefix.encode()) - 12  # two underscores and ten hex digits
    if budget < 1:
        msg = f"PostgreSQL schema {prefix!r} is too long to derive tenant schemas from"
        raise MemoryConfigError(msg)
    clean = "".join(ch if ch.isascii() and ch.isalnum() else "_" for ch in tenant.lower())
    return f"{prefix}_{clean[:budget]}_{_tenant_hash(tenant)}"


def _tenant_postgres_url(url: str, tenant: str) -> str:
    # parse_url only calls postgresql:// URLs PostgreSQL, so there is a query string to edit.
    from memvault.backends.postgres._dsn import parse_dsn

    schema = tenant_schema(tenant, parse_dsn(url).schema)
    head, _, query = url.strip().partition("?")
    # Edited piece by piece, as parse_dsn reads it: any schema= of the URL is the base, replaced.
    kept = [p for p in query.split("&") if p and unquote(p.partition("=")[0]) != "schema"]
    kept.append(f"schema={quote(schema, safe='')}")
    return f"{head}?{'&'.join(kept)}"


# -- composite ------------------------------------------------------------------------------------


def _open_composite(cfg: MemvaultConfig, embedder: Embedder, kwargs: dict[str, Any]) -> MemoryStore:
    """The composite store ``cfg.composite`` describes (children opened with ``open_backend``)."""
    from memvault.backends.composite import CompositeBackend

    children: dict[str, MemoryStore] = {}

    def child(url: str, role: str) -> MemoryStore:
        kind, _ = parse_url(url)
        if kind == "composite":
            msg = f"memory.composite.{role}: a composite store cannot contain {COMPOSITE_URL}"
            raise MemoryConfigError(msg)
        # One store per URL: two categories routed to the same URL share one child (two
        # objects on one SQLite file would work, but two memory:// objects would not share).
        key = "memory://" if kind == "memory" else url.strip()
        if key not in children:
            children[key] = open_backend(key, embedder=embedder, config=cfg, **kwargs)
        return children[key]

    default = child(cfg.composite_default_url(), "default")
    routes = {cat: child(u, f"routes.{cat.value}") for cat, u in cfg.composite.routes.items()}
    return CompositeBackend(routes, default, preset=kwargs.get("preset", cfg.retrieval.preset))
