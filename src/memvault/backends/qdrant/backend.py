"""The Qdrant backend (extra ``memvault[qdrant]``): a local directory or a Qdrant server.

``QdrantBackend("path/to/dir", embedder)`` keeps the store in Qdrant's local on-disk mode (no
server; Qdrant locks the directory, so one process at a time). ``QdrantBackend(
"http://host:6333", embedder)`` uses a server; its API key comes from ``api_key`` or the
``QDRANT_API_KEY`` variable. Several stores share a server by ``collection`` prefix.

Storage layout and search: see :mod:`memvault.backends.qdrant._mirror` and
:mod:`memvault.backends.qdrant._points`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memvault.backends.qdrant._driver import QdrantClient
from memvault.backends.qdrant._mirror import QdrantMirrorBackend
from memvault.backends.qdrant._points import PointStore, open_local_client
from memvault.errors import MemoryConfigError, MemoryConnectionError
from memvault.protocols import Embedder

__all__ = ["DEFAULT_COLLECTION", "QdrantBackend", "check_collection"]

DEFAULT_COLLECTION = "memvault"
"""Prefix of the store's collections (``memvault_memories``, ``memvault_audit`` ...)."""

_COLLECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


def check_collection(name: str) -> str:
    """``name`` if it can prefix Qdrant collection names (letters, digits, ``_ . -``).

    Raises:
        MemoryConfigError: anything else.
    """
    if not isinstance(name, str) or not _COLLECTION.fullmatch(name):
        msg = (
            f"invalid qdrant collection {name!r}: use 1-200 letters, digits, '_', '.' or '-' "
            "starting with a letter or digit"
        )
        raise MemoryConfigError(msg)
    return name


def _is_server(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(("http://", "https://"))


class QdrantBackend(QdrantMirrorBackend):
    """Memories in Qdrant: local on-disk mode by default, a server when given a URL."""

    backend_name = "qdrant"

    def __init__(
        self,
        target: str | Path,
        embedder: Embedder,
        *,
        collection: str = DEFAULT_COLLECTION,
        api_key: str | None = None,
        create_dirs: bool = True,
        **kwargs: Any,
    ) -> None:
        """``target``: a directory (local mode) or an ``http(s)://host:port`` server URL.

        ``create_dirs=False`` refuses a directory whose parent does not exist (a mistyped
        path) instead of creating it.

        Raises:
            MemoryConfigError: a malformed server URL or collection name.
        """
        super().__init__(embedder, **kwargs)
        self._collection = check_collection(collection)
        self._api_key = api_key
        self._url: str | None = None
        self._path: Path | None = None
        if _is_server(target):
            parts = urlsplit(str(target))
            if not parts.hostname or parts.username or parts.password:
                msg = f"invalid qdrant server URL {target!r}: use http(s)://host:port"
                raise MemoryConfigError(msg)
            self._url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        else:
            self._path = Path(target).expanduser()
        self._create_dirs = create_dirs

    @property
    def location(self) -> str:
        """The store as a URL that opens it again: ``qdrant:///abs/dir`` (with ``?collection=``
        unless it is the default) or ``qdrant+http(s)://host:port?collection=NAME``."""
        if self._url is not None:
            return f"qdrant+{self._url}?collection={self._collection}"
        assert self._path is not None
        suffix = "" if self._collection == DEFAULT_COLLECTION else f"?collection={self._collection}"
        return f"qdrant://{self._path.absolute()}{suffix}"

    def _open_points(self) -> PointStore:
        if self._url is not None:
            key = self._api_key or os.environ.get("QDRANT_API_KEY") or None
            # No background version probe: its thread would outlive a failed connect.
            client = QdrantClient(url=self._url, api_key=key, check_compatibility=False)
        else:
            assert self._path is not None
            path = self._path
            if not path.parent.exists() and not self._create_dirs:
                msg = f"cannot create qdrant store {path}: directory {path.parent} does not exist"
                raise MemoryConfigError(msg)
            client = open_local_client(path, "qdrant store")
        points = PointStore(client, self._collection)
        try:
            points.ensure_collections(self._embedder.dimension)
        except Exception as exc:
            client.close()
            msg = f"cannot open qdrant store {self.location}: {type(exc).__name__}: {exc}"
            raise MemoryConnectionError(msg) from exc
        return points
