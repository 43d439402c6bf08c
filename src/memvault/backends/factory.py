"""Build a backend from a storage URL or a configuration.

URL forms: a plain path or ``sqlite:///path.db`` (SQLite), ``memory://`` (in process),
``postgresql://user@host/db`` (PostgreSQL, extra ``memvault[postgres]``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from memvault.backends._base import BaseBackend
from memvault.config import MemvaultConfig
from memvault.errors import MemoryConfigError
from memvault.models import MemoryLevel
from memvault.protocols import Embedder

__all__ = ["create_memory_backend", "open_backend", "parse_url"]


def parse_url(url: str) -> tuple[str, str]:
    """Split a storage URL into ``(kind, target)``: kind is sqlite, memory or postgresql.

    Raises:
        MemoryConfigError: an unknown scheme (http URLs are for the remote client).
    """
    text = url.strip()
    if not text:
        msg = "empty storage URL"
        raise MemoryConfigError(msg)
    if text in ("memory://", "memory:", ":memory:") or text.startswith("memory://"):
        return "memory", ""
    if text.startswith("sqlite:///"):
        # sqlite:///rel.db is relative, sqlite:////abs/path.db absolute (as in SQLAlchemy).
        return "sqlite", text[len("sqlite:///") :]
    if text.startswith("sqlite://"):
        return "sqlite", text[len("sqlite://") :]
    if text.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return "postgresql", text
    if "://" in text:
        scheme = text.split("://", 1)[0]
        msg = (
            f"unsupported storage URL scheme {scheme!r} in {url!r}: use a file path, "
            "sqlite:///path.db, memory:// or postgresql://..."
        )
        raise MemoryConfigError(msg)
    return "sqlite", text


def open_backend(
    url: str,
    *,
    embedder: Embedder | None = None,
    config: MemvaultConfig | None = None,
    **kwargs: Any,
) -> BaseBackend:
    """A (not yet connected) backend for ``url``; the default embedder unless one is given."""
    cfg = config or MemvaultConfig()
    if embedder is None:
        from memvault.embeddings import create_embedder

        embedder = create_embedder(cfg.embedder)
    opts: dict[str, Any] = {
        "max_content_chars": cfg.options.max_content_chars,
        "max_memories_per_agent": cfg.options.max_memories_per_agent,
        "preset": cfg.retrieval.preset,
    }
    opts.update(kwargs)
    kind, target = parse_url(url)
    if kind == "memory":
        from memvault.backends.inmemory import InMemoryBackend

        return InMemoryBackend(embedder, **opts)
    if kind == "sqlite":
        from memvault.backends.sqlite import SQLiteBackend

        return SQLiteBackend(
            Path(target).expanduser(), embedder, synchronous=cfg.storage.synchronous, **opts
        )
    # postgresql: imported here so that psycopg stays an optional extra (the import raises a
    # MemoryConfigError naming ``memvault[postgres]`` when it is missing).
    from memvault.backends.postgres import PostgresBackend

    return PostgresBackend(target, embedder, **opts)


def create_memory_backend(
    config: MemvaultConfig, *, embedder: Embedder | None = None, tenant: str | None = None
) -> BaseBackend:
    """An isolated backend for one company (tenant) built from ``config``.

    With ``tenant`` set, a SQLite store lives in its own file next to the configured one
    (``<name>.<tenant>.db``), so no two tenants ever share a file.
    """
    if config.level is MemoryLevel.NONE:
        msg = "memory level 'none' stores nothing: no backend to create"
        raise MemoryConfigError(msg)
    url = config.resolved_url()
    if tenant is not None:
        from memvault.backends._base import check_agent

        tenant = check_agent(tenant)
        kind, target = parse_url(url)
        if kind == "sqlite":
            p = Path(target).expanduser()
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in tenant)
            if safe != tenant:
                # Distinct tenant names must never map to one file ("a/b" vs "a_b").
                safe += "-" + hashlib.sha256(tenant.encode()).hexdigest()[:10]
            url = str(p.with_name(f"{p.stem}.{safe}{p.suffix or '.db'}"))
    return open_backend(url, embedder=embedder, config=config)
