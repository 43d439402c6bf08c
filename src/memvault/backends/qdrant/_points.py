"""Synchronous access to the Qdrant collections of one store (called from the backend's thread).

A store is four collections named ``<prefix>_memories`` (one point per memory: its vector and
the entry as JSON), ``<prefix>_audit`` and ``<prefix>_archive`` (payload-only points, one per
audit record or archive row) and ``<prefix>_meta`` (one payload-only point: the embedding model
the vectors come from). Payload-only collections keep the audit log and the archive in Qdrant
itself, so a server store needs nothing on the client's disk.

Memory vectors use the dot product: the embedder's vectors are already L2-normalised, and
Qdrant's cosine distance would normalise them again on insert, changing their last bits (a
``memvault migrate`` copy must keep them bit for bit).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memvault.backends.qdrant._driver import QdrantClient, models
from memvault.errors import MemoryConnectionError

__all__ = ["DENSE", "MEM0_SPARSE", "PointStore", "open_local_client", "point_id"]

DENSE = ""
"""The name of the dense vector (unnamed, as mem0 writes it)."""
MEM0_SPARSE = "bm25"
"""mem0's sparse vector slot; created so that mem0 accepts the collection as its own."""

_PAGE = 1024
_META_ID = "00000000-0000-0000-0000-00000000a11a"
_NAMESPACE = uuid.UUID("5f0d8f6e-8c44-4b8e-9a51-5b1a7d0e3c21")


def point_id(key: str) -> str:
    """The Qdrant point id of a memvault id: the UUID itself, or a UUIDv5 of other strings.

    memvault ids are UUIDv7 strings, so a point's id is the memory's id (mem0's ``get(id)``
    finds it); an imported id of another shape still maps to one stable point.
    """
    try:
        return str(uuid.UUID(key))
    except ValueError:
        return str(uuid.uuid5(_NAMESPACE, key))


def open_local_client(path: Path, what: str) -> QdrantClient:
    """A local on-disk Qdrant client on ``path`` (created if missing).

    Raises:
        MemoryConnectionError: another client holds the directory (Qdrant's local mode locks
            it). Checked before qdrant-client tries, because its own failed attempt leaves the
            lock file open.
    """
    import portalocker

    path.mkdir(parents=True, exist_ok=True)
    lock = path / ".lock"
    in_use = f"{what} {path} is in use by another client (a local Qdrant directory is opened by "
    in_use += "one client at a time; use a Qdrant server for concurrent access)"
    if lock.exists():
        with open(lock, "r+") as f:
            try:
                portalocker.lock(
                    f, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
                )
            except portalocker.exceptions.LockException:
                raise MemoryConnectionError(in_use) from None
            portalocker.unlock(f)
    try:
        return QdrantClient(path=str(path))
    except RuntimeError as exc:  # taken in between
        raise MemoryConnectionError(in_use) from exc


class PointStore:
    """The collections of one store in one Qdrant client (local directory or server)."""

    def __init__(self, client: QdrantClient, prefix: str) -> None:
        self.client = client
        self.memories = f"{prefix}_memories"
        self.audit = f"{prefix}_audit"
        self.archive = f"{prefix}_archive"
        self.meta = f"{prefix}_meta"

    # -- schema ---------------------------------------------------------------------------------

    def ensure_collections(self, dimension: int, *, mem0_slot: bool = False) -> None:
        """Create the missing collections (dense dot-product vectors of ``dimension``)."""
        if not self.client.collection_exists(self.memories):
            sparse = (
                {MEM0_SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
                if mem0_slot
                else None
            )
            self.client.create_collection(
                self.memories,
                vectors_config=models.VectorParams(size=dimension, distance=models.Distance.DOT),
                sparse_vectors_config=sparse,
            )
        for name in (self.audit, self.archive, self.meta):
            if not self.client.collection_exists(name):
                self.client.create_collection(name, vectors_config={})

    def read_meta(self) -> dict[str, Any]:
        """The store's metadata (embedding model and dimension), or {} for a new store."""
        points = self.client.retrieve(self.meta, ids=[_META_ID], with_payload=True)
        return dict(points[0].payload or {}) if points else {}

    def write_meta(self, values: Mapping[str, Any]) -> None:
        """Replace the store's metadata."""
        self._put_rows(self.meta, [(_META_ID, dict(values))])

    def has_memories(self) -> bool:
        """True if the store holds at least one memory."""
        return self.client.count(self.memories, exact=True).count > 0

    # -- memories -------------------------------------------------------------------------------

    def upsert_memories(
        self, rows: Sequence[tuple[str, np.ndarray[Any, Any] | None, dict[str, Any]]]
    ) -> None:
        """Write points ``(memory id, vector, payload)``; a None vector keeps the stored one."""
        if not rows:
            return
        full = [
            models.PointStruct(id=point_id(mid), vector={DENSE: vec.tolist()}, payload=payload)
            for mid, vec, payload in rows
            if vec is not None
        ]
        if full:
            self.client.upsert(self.memories, points=full, wait=True)
        ops: list[Any] = [
            models.OverwritePayloadOperation(
                overwrite_payload=models.SetPayload(payload=payload, points=[point_id(mid)])
            )
            for mid, vec, payload in rows
            if vec is None
        ]
        if ops:
            self.client.batch_update_points(self.memories, update_operations=ops, wait=True)

    def delete_memories(self, ids: Sequence[str]) -> None:
        """Delete the points of ``ids`` (absent ones are ignored)."""
        if ids:
            selector = models.PointIdsList(points=[point_id(i) for i in ids])
            self.client.delete(self.memories, points_selector=selector, wait=True)

    def scroll_memories(self) -> Iterator[tuple[dict[str, Any], np.ndarray[Any, Any]]]:
        """Every memory point as ``(payload, float32 vector)``, in no particular order."""
        offset: Any = None
        while True:
            points, offset = self.client.scroll(
                self.memories, limit=_PAGE, offset=offset, with_payload=True, with_vectors=True
            )
            for p in points:
                raw = p.vector
                vec = raw.get(DENSE) if isinstance(raw, dict) else raw
                yield dict(p.payload or {}), np.asarray(vec, dtype=np.float32)
            if offset is None:
                return

    # -- payload-only rows (audit, archive) -----------------------------------------------------

    def put_audit(self, rows: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Write audit records ``(id, JSON)``."""
        self._put_rows(self.audit, rows)

    def put_archive(self, rows: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Write archive rows ``(archive id, JSON)``."""
        self._put_rows(self.archive, rows)

    def drop_archive(self, archive_id: str) -> None:
        """Delete one archive row."""
        selector = models.PointIdsList(points=[point_id(archive_id)])
        self.client.delete(self.archive, points_selector=selector, wait=True)

    def scroll_rows(self, collection: str) -> Iterator[dict[str, Any]]:
        """Every payload of a payload-only collection, in no particular order."""
        offset: Any = None
        while True:
            points, offset = self.client.scroll(
                collection, limit=_PAGE, offset=offset, with_payload=True, with_vectors=False
            )
            for p in points:
                yield dict(p.payload or {})
            if offset is None:
                return

    def _put_rows(self, collection: str, rows: Sequence[tuple[str, dict[str, Any]]]) -> None:
        if rows:
            points = [
                models.PointStruct(id=point_id(key), vector={}, payload=payload)
                for key, payload in rows
            ]
            self.client.upsert(collection, points=points, wait=True)
