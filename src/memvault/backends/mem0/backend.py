"""The Mem0 backend (extra ``memvault[mem0]``): a mem0 ``Memory`` in local mode as the store.

``Mem0Backend("data/dir", embedder)`` opens mem0's local stack under the directory: its
embedded Qdrant vector store in ``<dir>/qdrant`` and its SQLite history store in
``<dir>/history.db``. Memories are stored verbatim (mem0's ``infer=False``): every memvault
write becomes one mem0 memory point, written through mem0's vector store with mem0's payload
fields (``data``, ``hash``, ``created_at``, ``updated_at``, ``agent_id`` = the memvault agent),
and every insert and delete is recorded in mem0's history (``ADD`` / ``DELETE``), so mem0's own
API reads the same store: ``backend.mem0.get(id)``, ``get_all(agent_id=...)``,
``history(id)``. The point id is the memvault id.

mem0 runs with telemetry off, no LLM and memvault's embedder in place of its own (see
:mod:`._driver`): nothing is downloaded or sent, and no API key is needed. Search, filters and
ranking are memvault's, over an in-process mirror of the store (as for the Qdrant backend:
:mod:`memvault.backends.qdrant._mirror`); the audit log and the archive live in extra
collections of the same embedded Qdrant.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memvault._ids import utc_now
from memvault.backends.mem0._driver import Mem0Memory, MemvaultEmbedding, NoLLM
from memvault.backends.qdrant._mirror import QdrantMirrorBackend
from memvault.backends.qdrant._points import PointStore, open_local_client, point_id
from memvault.backends.qdrant.backend import DEFAULT_COLLECTION, check_collection
from memvault.errors import MemoryConfigError, MemoryConnectionError
from memvault.models import MemoryEntry
from memvault.protocols import Embedder

__all__ = ["Mem0Backend"]

_NO_KEY = "memvault-no-api-key"
"""Placeholder key for the OpenAI objects mem0 builds by default and memvault replaces at once
(no request is ever made with it)."""


class Mem0Backend(QdrantMirrorBackend):
    """Memories in a local mem0 store (embedded Qdrant plus SQLite history)."""

    backend_name = "mem0"

    def __init__(
        self,
        directory: str | Path,
        embedder: Embedder,
        *,
        infer: bool = False,
        collection: str = DEFAULT_COLLECTION,
        create_dirs: bool = True,
        **kwargs: Any,
    ) -> None:
        """``directory`` holds the vector store (``qdrant/``) and the history (``history.db``).

        Raises:
            MemoryConfigError: ``infer=True`` (mem0's LLM fact extraction decides what to
                store, so one write would not be one memory; memvault stores verbatim and
                consolidates with its own LLM strategies), or a bad collection name.
        """
        if infer:
            msg = (
                "the mem0 backend stores memories verbatim (infer=False): mem0's LLM fact "
                "extraction is not supported; use memvault's consolidation strategies instead"
            )
            raise MemoryConfigError(msg)
        super().__init__(embedder, **kwargs)
        self._dir = Path(directory).expanduser()
        self._collection = check_collection(collection)
        self._create_dirs = create_dirs
        self._mem0: Any = None

    @property
    def location(self) -> str:
        """``mem0://`` and the data directory."""
        suffix = "" if self._collection == DEFAULT_COLLECTION else f"?collection={self._collection}"
        return f"mem0://{self._dir.absolute()}{suffix}"

    @property
    def mem0(self) -> Any:
        """The underlying ``mem0.Memory`` while connected (mem0's own API over the same store).

        Raises:
            MemoryConnectionError: not connected.
        """
        if self._mem0 is None:
            msg = "mem0 backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        return self._mem0

    @property
    def history_path(self) -> Path:
        """mem0's SQLite history store."""
        return self._dir / "history.db"

    # -- opening (in the worker thread) ---------------------------------------------------------

    def _open_points(self) -> PointStore:
        path = self._dir
        if not path.parent.exists() and not self._create_dirs:
            msg = f"cannot create mem0 store {path}: directory {path.parent} does not exist"
            raise MemoryConfigError(msg)
        client = open_local_client(path / "qdrant", "mem0 store")
        points = PointStore(client, self._collection)
        dim = self._embedder.dimension
        try:
            # Created before mem0 sees it, with dot-product vectors (mem0 would create cosine
            # ones, which Qdrant re-normalises on insert) and mem0's sparse slot.
            points.ensure_collections(dim, mem0_slot=True)
            config = {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": points.memories,
                        "embedding_model_dims": dim,
                        "client": client,
                    },
                },
                "embedder": {
                    "provider": "openai",
                    "config": {"api_key": _NO_KEY, "embedding_dims": dim},
                },
                "llm": {"provider": "openai", "config": {"api_key": _NO_KEY}},
                "history_db_path": str(self.history_path),
            }
            with warnings.catch_warnings():
                # mem0 asks the shared client for payload indexes, which local Qdrant ignores
                # with a UserWarning.
                warnings.simplefilter("ignore")
                memory = Mem0Memory.from_config(config)
        except Exception as exc:
            client.close()
            msg = f"cannot open mem0 store {path}: {type(exc).__name__}: {exc}"
            raise MemoryConnectionError(msg) from exc
        memory.embedding_model = MemvaultEmbedding(self._embedder)
        memory.llm = NoLLM()
        # False is mem0's "tried and unavailable" mark: its fastembed BM25 encoder would
        # download a model; memvault ranks BM25 itself.
        memory.vector_store._bm25_encoder = False
        self._mem0 = memory
        return points

    def _close_points(self, points: PointStore) -> None:
        memory, self._mem0 = self._mem0, None
        if memory is not None:
            memory.close()
        points.client.close()

    # -- mem0's view of the writes --------------------------------------------------------------

    def _payload(self, entry: MemoryEntry, seq: int) -> dict[str, Any]:
        payload = super()._payload(entry, seq)
        payload.update(
            {
                "data": entry.content,
                "hash": hashlib.md5(entry.content.encode(), usedforsecurity=False).hexdigest(),
                "created_at": entry.created_at.isoformat(),
                "updated_at": entry.updated_at.isoformat(),
            }
        )
        return payload

    def _insert_points(
        self, points: PointStore, rows: Sequence[tuple[str, Any, dict[str, Any]]]
    ) -> None:
        if not rows:
            return
        memory = self.mem0
        memory.vector_store.insert(
            vectors=[vec.tolist() for _, vec, _ in rows],
            payloads=[payload for _, _, payload in rows],
            ids=[point_id(mid) for mid, _, _ in rows],
        )
        for mid, _, payload in rows:
            memory.db.add_history(
                point_id(mid),
                None,
                payload["data"],
                "ADD",
                created_at=payload["created_at"],
                updated_at=payload["updated_at"],
            )

    def _removed(self, entries: Sequence[MemoryEntry]) -> None:
        memory = self.mem0
        now = utc_now().isoformat()
        for e in entries:
            memory.db.add_history(
                point_id(e.id),
                e.content,
                None,
                "DELETE",
                created_at=e.created_at.isoformat(),
                updated_at=now,
                is_deleted=1,
            )
