"""Which embedding model a mem0 store was built with, read without changing anything."""

from __future__ import annotations

from pathlib import Path

from memvault.backends.qdrant._model import recorded_qdrant_model

__all__ = ["recorded_mem0_model"]


def recorded_mem0_model(directory: str | Path, collection: str = "memvault") -> str | None:
    """The ``embedding_model`` the mem0 store in ``directory`` records (its Qdrant collections
    live in ``directory/qdrant``), or None for a new or empty store.

    Raises:
        MemoryConnectionError: the store is in use by another client.
    """
    return recorded_qdrant_model(Path(directory).expanduser() / "qdrant", collection)
