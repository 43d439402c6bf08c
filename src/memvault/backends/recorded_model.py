"""Which embedding model a store was built with: a cheap, read-only look before opening it.

Every store records the model of its vectors (``store_meta.embedding_model`` in SQLite and
PostgreSQL, the ``<prefix>_meta`` point in Qdrant and mem0) and refuses another one
(:class:`~memvault.errors.EmbeddingModelChangedError`). :func:`recorded_model` reads that record
without creating or changing anything, so that a caller who named no embedder can open the store
with the model it was built with (:func:`memvault.backends.embedder.build_embedder`).
"""

from __future__ import annotations

from pathlib import Path

from memvault.backends._urls import _split_collection, parse_url
from memvault.config import MemvaultConfig

__all__ = ["recorded_model"]


def recorded_model(url: str, *, config: MemvaultConfig | None = None) -> str | None:
    """The embedding model id the store at ``url`` records, or None for a new or empty store.

    ``memory://`` is always None (nothing persists). ``composite://`` asks the children
    ``config.composite`` routes to (they share one embedder): their one recorded model, or None
    when none records one or they disagree (then each child checks its own, as before). Nothing
    is created: a missing SQLite file, Qdrant or mem0 directory, or PostgreSQL schema is None.

    Raises:
        MemoryConfigError: a malformed URL (or a missing optional extra for its backend).
        MemoryConnectionError: the store exists but cannot be read (a server that does not
            answer, a local Qdrant directory held by another client).
    """
    kind, target = parse_url(url)
    if kind == "memory":
        return None
    if kind == "sqlite":
        from memvault.backends.sqlite._model import recorded_sqlite_model

        return recorded_sqlite_model(Path(target))
    if kind == "postgresql":
        from memvault.backends.postgres._model import recorded_postgres_model

        return recorded_postgres_model(target)
    if kind in ("qdrant", "mem0"):
        where, extra = _split_collection(target)
        collection = extra.get("collection", "memvault")
        if kind == "qdrant":
            from memvault.backends.qdrant._model import recorded_qdrant_model

            return recorded_qdrant_model(where, collection)
        from memvault.backends.mem0._model import recorded_mem0_model

        return recorded_mem0_model(where, collection)
    cfg = config or MemvaultConfig()
    urls = {cfg.composite_default_url(), *cfg.composite.routes.values()}
    found = {
        m
        for m in (recorded_model(u, config=cfg) for u in sorted(urls) if not _is_composite(u))
        if m
    }
    return found.pop() if len(found) == 1 else None


def _is_composite(url: str) -> bool:
    return parse_url(url)[0] == "composite"
