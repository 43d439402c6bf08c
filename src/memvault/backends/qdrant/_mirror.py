"""A durable store in Qdrant collections, searched through an in-process mirror.

:class:`QdrantMirrorBackend` is the common part of the ``qdrant`` and ``mem0`` backends. Qdrant
holds the data: one point per memory (its vector bit for bit, the entry as canonical JSON, and
an insertion sequence number), plus the audit log and the archive (see :mod:`._points`). On
``connect`` everything is loaded into the structures of :class:`InMemoryBackend`, and every
write goes to Qdrant first and to the mirror only once Qdrant accepted it.

Why a mirror: memvault's ranking (dense plus BM25 with collection statistics, fusion, recency,
MMR, thread neighbours, metadata filters pushed before the cut) is the in-memory backend's,
so a Qdrant store ranks exactly like the reference backend on the same data, instead of with a
second implementation of BM25 and filters over Qdrant payloads. The cost is memory (every
vector is held in process, as on the in-memory backend) and freshness: writes made by another
process to the same server collection are seen after the next ``connect``. A local Qdrant
directory can only be opened by one client at a time anyway (Qdrant locks it).

Every Qdrant call runs in one worker thread per backend; writes hold the mirror's lock, so the
mirror changes only after the durable write succeeded and concurrent searches see all of a
write or none of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from abc import abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from memvault.backends._base import (
    Supersede,
    Vectors,
    append_only_error,
    check_agent,
    check_id,
    check_stored_model,
    check_times,
)
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.qdrant._points import PointStore
from memvault.errors import MemoryConnectionError, MemoryError, MemoryStoreError
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    MemoryCategory,
    MemoryEntry,
    MemoryScope,
)
from memvault.protocols import Embedder

__all__ = ["QdrantMirrorBackend"]

T = TypeVar("T")

_Row = tuple[str, np.ndarray[Any, Any] | None, dict[str, Any]]


class QdrantMirrorBackend(InMemoryBackend):
    """Qdrant collections as the durable store, the in-memory backend as the index."""

    backend_name = "qdrant"

    def __init__(self, embedder: Embedder, **kwargs: Any) -> None:
        super().__init__(embedder, **kwargs)
        self._base_kwargs = kwargs
        self._points: PointStore | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._seq = 0
        # Insertion sequence number of every memory (the order the mirror is rebuilt in).
        self._seqs: dict[str, int] = {}

    # -- reindex: not supported -----------------------------------------------------------------
    # The in-memory backend stages and swaps re-embedded vectors in process only; inherited
    # here, a reindex would change the mirror but not Qdrant. ``None`` marks the methods as not
    # implemented, so ``isinstance(store, ReindexableStore)`` is False and ``memvault reindex``
    # refuses the store with its MemoryCapabilityError (export and import into a new store).
    reindex_status = None  # type: ignore[assignment]
    reindex_begin = None  # type: ignore[assignment]
    reindex_pending = None  # type: ignore[assignment]
    reindex_stage = None  # type: ignore[assignment]
    reindex_swap = None  # type: ignore[assignment]

    # -- to be provided by the concrete backend -------------------------------------------------

    @abstractmethod
    def _open_points(self) -> PointStore:
        """Open the client and return the store's collections (runs in the worker thread)."""

    def _close_points(self, points: PointStore) -> None:
        """Release the client (runs in the worker thread)."""
        points.client.close()

    def _payload(self, entry: MemoryEntry, seq: int) -> dict[str, Any]:
        """The point payload of ``entry``; the mem0 backend adds mem0's own fields."""
        return {
            "memvault": entry.to_json(),
            "seq": seq,
            "agent_id": entry.agent_id,
            "scope": entry.scope.value,
        }

    def _insert_points(self, points: PointStore, rows: Sequence[_Row]) -> None:
        """Write new memory points (the mem0 backend goes through mem0's vector store)."""
        points.upsert_memories(rows)

    def _removed(self, entries: Sequence[MemoryEntry]) -> None:
        """Hook called in the worker thread after ``entries`` were deleted from Qdrant."""

    # -- lifecycle ------------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in the backend's thread; Qdrant failures become MemoryStoreError."""
        if self._executor is None:
            msg = f"{self.backend_name} backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args))
        except MemoryError:
            raise
        except Exception as exc:
            msg = f"{self.backend_name} store {self.location}: {type(exc).__name__}: {exc}"
            raise MemoryStoreError(msg) from exc

    async def connect(self) -> None:
        """Open the collections (created if missing) and load them into the mirror.

        Raises:
            MemoryConnectionError: the directory is in use or the server does not answer.
            DimensionMismatchError, EmbeddingModelChangedError: the stored vectors come from
                another embedding model.
        """
        if self._connected:
            return
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"memvault-{self.backend_name}")
        try:
            loaded = await self._run(self._open_and_load)
        except MemoryError as exc:
            await self._shutdown()
            if isinstance(exc, MemoryStoreError):
                raise MemoryConnectionError(str(exc)) from exc
            raise
        except BaseException:
            await self._shutdown()
            raise
        self._load_mirror(*loaded)
        self._connected = True

    def _open_and_load(
        self,
    ) -> tuple[list[tuple[dict[str, Any], Vectors]], list[dict[str, Any]], list[dict[str, Any]]]:
        points = self._open_points()
        self._points = points
        meta = points.read_meta()
        stored_dim = meta.get("dimension")
        check_stored_model(
            self.location,
            self._embedder,
            stored_model=meta.get("embedding_model"),
            stored_dimension=int(stored_dim) if stored_dim is not None else None,
            has_rows=points.has_memories(),
        )
        wanted = {"embedding_model": self._embedder.model_id, "dimension": self._embedder.dimension}
        if {k: meta.get(k) for k in wanted} != wanted:
            points.write_meta({**meta, **wanted})
        memories = list(points.scroll_memories())
        return (
            memories,
            list(points.scroll_rows(points.audit)),
            list(points.scroll_rows(points.archive)),
        )

    def _load_mirror(
        self,
        memories: list[tuple[dict[str, Any], Vectors]],
        audit: list[dict[str, Any]],
        archive: list[dict[str, Any]],
    ) -> None:
        self._reset_mirror()
        rows = sorted(memories, key=lambda pv: (int(pv[0].get("seq", 0)), pv[0]["memvault"]["id"]))
        for payload, vector in rows:
            entry = MemoryEntry.from_json(payload["memvault"])
            if vector.shape != (self._embedder.dimension,):
                msg = f"{self.location}: memory {entry.id} has a vector of shape {vector.shape}"
                raise MemoryConnectionError(msg)
            self._index(entry, vector)
            self._seqs[entry.id] = int(payload.get("seq", 0))
        self._seq = max(self._seqs.values(), default=0)
        self._audit = sorted(
            (AuditRecord.model_validate(r) for r in audit), key=lambda r: (r.at, r.id)
        )
        self._archive = [ArchivedEntry.model_validate(r) for r in archive]

    def _reset_mirror(self) -> None:
        # The in-memory backend's own constructor lists its structures; calling it again keeps
        # this class in step with it (configuration is passed again, unchanged).
        connected = self._connected
        InMemoryBackend.__init__(self, self._embedder, **self._base_kwargs)
        self._connected = connected
        self._seqs = {}
        self._seq = 0

    async def disconnect(self) -> None:
        """Close the client; the mirror is dropped (the data stays in Qdrant)."""
        if not self._connected and self._executor is None:
            return
        self._connected = False
        await self._shutdown()
        self._reset_mirror()

    async def _shutdown(self) -> None:
        executor, points = self._executor, self._points
        if executor is None:
            return
        if points is not None:
            loop = asyncio.get_running_loop()
            with contextlib.suppress(Exception):
                await loop.run_in_executor(executor, self._close_points, points)
        executor.shutdown(wait=True)
        self._executor = None
        self._points = None

    async def health_check(self) -> bool:
        """True if Qdrant answers."""
        if not self._connected or self._points is None:
            return False
        points = self._points
        try:
            await self._run(points.read_meta)
        except MemoryError:
            return False
        return True

    # -- write-through helpers ------------------------------------------------------------------

    def _pts(self) -> PointStore:
        if self._points is None:
            msg = f"{self.backend_name} backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)
        return self._points

    def _updated_row(self, entry: MemoryEntry) -> _Row:
        """The payload-only write of a changed entry (its vector stays)."""
        return (entry.id, None, self._payload(entry, self._seqs.get(entry.id, 0)))

    async def _persist_updates(self, updated: Sequence[MemoryEntry]) -> None:
        rows = [self._updated_row(e) for e in updated]
        if rows:
            await self._run(self._pts().upsert_memories, rows)

    def _superseded(self, supersedes: Sequence[Supersede]) -> list[MemoryEntry]:
        out: list[MemoryEntry] = []
        for s in supersedes:
            old = self._entries.get(s.old_id)
            if old is not None:
                out.append(old.model_copy(update={"valid_to": s.when, "superseded_by": s.new_id}))
        return out

    def _write_insert(
        self,
        points: PointStore,
        new: Sequence[_Row],
        changed: Sequence[_Row],
        audit: Sequence[AuditRecord],
    ) -> None:
        self._insert_points(points, new)
        points.upsert_memories(changed)
        points.put_audit([(r.id, r.model_dump(mode="json")) for r in audit])

    async def _durable_insert(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        """Write new entries, their supersessions and audit records to Qdrant, then the mirror.

        Called with the lock held.
        """
        seqs = {e.id: self._seq + i + 1 for i, e in enumerate(entries)}
        new = [
            (e.id, np.asarray(v, dtype=np.float32), self._payload(e, seqs[e.id]))
            for e, v in zip(entries, vectors, strict=True)
        ]
        changed = [self._updated_row(e) for e in self._superseded(supersedes)]
        await self._run(self._write_insert, self._pts(), new, changed, audit)
        self._seq += len(entries)
        self._seqs.update(seqs)
        self._apply_insert(entries, vectors, supersedes)

    # -- writes (each goes to Qdrant before the mirror) -----------------------------------------

    async def _insert(
        self, entries: Sequence[MemoryEntry], vectors: Vectors, supersedes: Sequence[Supersede]
    ) -> None:
        async with self._lock:
            await self._durable_insert(entries, vectors, supersedes, ())

    async def _insert_shared(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        async with self._lock:
            await self._durable_insert(entries, vectors, supersedes, audit)
            self._audit.extend(audit)

    def _delete_points(self, points: PointStore, doomed: Sequence[MemoryEntry]) -> None:
        points.delete_memories([e.id for e in doomed])
        self._removed(doomed)

    async def _durable_delete(self, doomed: Sequence[MemoryEntry]) -> None:
        """Delete entries from Qdrant, then from the mirror (lock held)."""
        if not doomed:
            return
        await self._run(self._delete_points, self._pts(), list(doomed))
        for e in doomed:
            self._unindex(e.id)
            self._seqs.pop(e.id, None)

    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory of the agent."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        async with self._lock:
            entry = self._entries.get(mid)
            if entry is None or entry.agent_id != agent:
                return False
            if entry.scope is not MemoryScope.PRIVATE:
                raise append_only_error(mid)
            await self._durable_delete([entry])
            return True

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category)."""
        agent = check_agent(agent_id)
        self._require_connected()
        async with self._lock:
            doomed = [
                e
                for e in self._entries.values()
                if e.agent_id == agent
                and e.scope is MemoryScope.PRIVATE
                and (category is None or e.category is category)
            ]
            await self._durable_delete(doomed)
            return len(doomed)

    async def _update_entries(
        self, agent: str, ids: Sequence[str], change: Callable[[MemoryEntry], dict[str, Any]]
    ) -> None:
        """Apply ``change`` to the agent's entries among ``ids``: Qdrant, then the mirror."""
        async with self._lock:
            updated: dict[str, MemoryEntry] = {}
            for entry_id in dict.fromkeys(ids):
                e = self._entries.get(entry_id)
                if e is not None and e.agent_id == agent:
                    updated[entry_id] = e.model_copy(update=change(e))
            await self._persist_updates(list(updated.values()))
            self._entries.update(updated)

    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Bump access counters."""
        agent = check_agent(agent_id)
        times = check_times(times)
        self._require_connected()
        await self._update_entries(
            agent,
            ids,
            lambda e: {"access_count": e.access_count + times, "last_accessed_at": when},
        )

    async def mark_consolidated(self, agent_id: str, ids: Sequence[str], when: datetime) -> None:
        """Set ``consolidated_at`` of the agent's entries among ``ids``."""
        agent = check_agent(agent_id)
        self._require_connected()
        await self._update_entries(agent, ids, lambda e: {"consolidated_at": when})

    # -- shared knowledge, audit log, archive ---------------------------------------------------

    def _write_retract(self, points: PointStore, row: _Row, record: AuditRecord) -> None:
        points.upsert_memories([row])
        points.put_audit([(record.id, record.model_dump(mode="json"))])

    async def _retract(
        self, agent_id: str, memory_id: str, when: datetime, record: AuditRecord
    ) -> bool:
        async with self._lock:
            entry = self._entries.get(memory_id)
            if (
                entry is None
                or entry.agent_id != agent_id
                or entry.scope is not MemoryScope.SHARED
                or entry.retracted_at is not None
            ):
                return False
            updated = entry.model_copy(update={"retracted_at": when, "updated_at": when})
            await self._run(self._write_retract, self._pts(), self._updated_row(updated), record)
            self._entries[memory_id] = updated
            self._shared_order.remove(memory_id)
            self._audit.append(record)
            return True

    async def _import_audit(self, records: Sequence[AuditRecord]) -> int:
        async with self._lock:
            known = {r.id for r in self._audit}
            fresh = list({r.id: r for r in records if r.id not in known}.values())
            if fresh:
                rows = [(r.id, r.model_dump(mode="json")) for r in fresh]
                await self._run(self._pts().put_audit, rows)
            self._audit.extend(fresh)
            self._audit.sort(key=lambda r: (r.at, r.id))
            return len(fresh)

    def _write_archive_move(
        self,
        points: PointStore,
        records: Sequence[ArchivedEntry],
        doomed: Sequence[MemoryEntry],
        audit: Sequence[AuditRecord],
    ) -> None:
        # Archive rows first: a failure after them leaves the memory in both places (restore
        # and a second archive are idempotent by id), never in neither.
        points.put_archive([(r.archive_id, r.model_dump(mode="json")) for r in records])
        self._delete_points(points, doomed)
        points.put_audit([(r.id, r.model_dump(mode="json")) for r in audit])

    async def _archive_move(
        self, agent_id: str, records: Sequence[ArchivedEntry], audit: Sequence[AuditRecord]
    ) -> None:
        async with self._lock:
            moved: list[ArchivedEntry] = []
            doomed: list[MemoryEntry] = []
            for r in records:
                entry = self._entries.get(r.memory_id)
                if entry is None or entry.agent_id != agent_id:
                    continue
                moved.append(r)
                doomed.append(entry)
            await self._run(self._write_archive_move, self._pts(), moved, doomed, audit)
            for e in doomed:
                self._unindex(e.id)
                self._seqs.pop(e.id, None)
            self._archive.extend(moved)
            self._audit.extend(audit)

    async def _archive_import(self, records: Sequence[ArchivedEntry]) -> int:
        async with self._lock:
            known = {r.archive_id for r in self._archive}
            fresh = list({r.archive_id: r for r in records if r.archive_id not in known}.values())
            if fresh:
                rows = [(r.archive_id, r.model_dump(mode="json")) for r in fresh]
                await self._run(self._pts().put_archive, rows)
            self._archive.extend(fresh)
            return len(fresh)

    async def _archive_drop(self, archive_id: str) -> None:
        async with self._lock:
            await self._run(self._pts().drop_archive, archive_id)
            self._archive = [r for r in self._archive if r.archive_id != archive_id]
