"""Which embedding model a Qdrant (or mem0) store was built with, read without changing it."""

from __future__ import annotations

import os
from pathlib import Path

from memvault.backends.qdrant._driver import QdrantClient
from memvault.backends.qdrant._points import PointStore, open_local_client
from memvault.errors import MemoryConnectionError

__all__ = ["recorded_qdrant_model"]

_LOCAL_META = "meta.json"
"""The file local Qdrant keeps its collection list in: present once a client has used the
directory."""


def recorded_qdrant_model(
    where: str | Path, collection: str = "memvault", *, api_key: str | None = None
) -> str | None:
    """The ``embedding_model`` the store ``where`` records, or None for a new or empty store.

    ``where`` is a local directory (a missing one stays missing: None) or an
    ``http(s)://host:port`` server; ``collection`` the store's collection prefix. No collection
    is created.

    Raises:
        MemoryConnectionError: the directory is in use by another client, or the server does
            not answer.
    """
    text = str(where)
    if text.startswith(("http://", "https://")):
        key = api_key or os.environ.get("QDRANT_API_KEY") or None
        client = QdrantClient(url=text.rstrip("/"), api_key=key, check_compatibility=False)
        what = f"qdrant store {text}"
    else:
        path = Path(text).expanduser()
        if not (path / _LOCAL_META).is_file():
            return None  # no local Qdrant storage there yet (opening it would create one)
        client = open_local_client(path, "qdrant store")
        what = f"qdrant store {path}"
    try:
        return _read(client, collection)
    except MemoryConnectionError:
        raise
    except Exception as exc:
        msg = f"cannot read {what}: {type(exc).__name__}: {exc}"
        raise MemoryConnectionError(msg) from exc
    finally:
        client.close()


def _read(client: QdrantClient, collection: str) -> str | None:
    points = PointStore(client, collection)
    if not client.collection_exists(points.meta) or not client.collection_exists(points.memories):
        return None
    if not points.has_memories():
        return None  # an empty store adopts any model (no vectors to mix up)
    model = points.read_meta().get("embedding_model")
    return str(model) if model else None
