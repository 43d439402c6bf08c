"""The embedding queue: admitted messages are embedded in batches, after their write returned.

Seed 004's embedding pipeline over the conversation store. :meth:`EmbeddingQueue.append`
stores the messages (one transaction: from then on nothing is lost) and hands their ids to the
queue; the call returns without waiting for a vector. A worker task embeds the queue in batches
of ``batch_size``, or whatever arrived within ``batch_timeout_ms`` of a batch's first message,
and stores the vectors. Search sees a message lexically as soon as it is stored and densely as
soon as its vector is (:meth:`~memvault.conversation.store.SQLConversationStore.search`).

**Crash safety.** The store is the queue's source of truth: a row without a vector is work to
do, whether it is in the in-process queue or not. :meth:`EmbeddingQueue.backfill` (run at
:meth:`~EmbeddingQueue.start` with ``backfill_on_start``) embeds every such row a previous
process left behind, so a crash loses no admitted message. Nothing is embedded twice: rows the
queue holds are skipped by the backfill (and the other way round), and a vector is stored only
where none is (``WHERE embedded_at IS NULL``), so even a batch embedded again after a crash
between embedding and commit is stored once. A full queue does not block or fail a write: the
message waits in the store for the next backfill.

Queue depth, batch and backfill progress are in :meth:`EmbeddingQueue.stats` (``memvault stats``,
``/metrics`` via :func:`live_queues`, the CLI progress bar via the ``progress`` callback).

Scope: the conversation store's messages only. Memory writes (``Memory.add``) keep embedding
synchronously: their dedup and supersession decisions need the vector before the write returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from memvault.config.conversation import EmbeddingQueueConfig
from memvault.conversation.models import MessageMetadata, StoredMessage
from memvault.conversation.session_store import MessageLike
from memvault.conversation.store import SQLConversationStore
from memvault.errors import MemoryError
from memvault.protocols import Embedder

__all__ = ["EmbeddingQueue", "QueueStats", "live_queues"]

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after every backfill batch."""

_LIVE: weakref.WeakSet[EmbeddingQueue] = weakref.WeakSet()


def live_queues() -> list[EmbeddingQueue]:
    """The embedding queues of this process that are running (for ``/metrics``)."""
    return [q for q in list(_LIVE) if q.running]


class QueueStats(BaseModel):
    """A snapshot of an embedding queue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    depth: int
    in_flight: int
    embedded: int
    batches: int
    failures: int
    backfill_running: bool
    backfill_done: int
    backfill_total: int
    last_batch_size: int
    last_batch_seconds: float


class EmbeddingQueue:
    """Batched background embedding of a conversation store's messages.

    Use as ``async with EmbeddingQueue(store, embedder, config) as queue:`` (or
    :meth:`start` / :meth:`close`); :meth:`flush` waits until everything queued is embedded.
    """

    def __init__(
        self,
        store: SQLConversationStore,
        embedder: Embedder,
        config: EmbeddingQueueConfig | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._config = config or EmbeddingQueueConfig(enabled=True)
        self._pending: list[tuple[int, str]] = []
        self._claimed: set[int] = set()
        self._wake: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._backfill_task: asyncio.Task[int] | None = None
        self._in_flight = 0
        self._embedded = 0
        self._batches = 0
        self._failures = 0
        self._backfill_done = 0
        self._backfill_total = 0
        self._backfilling = False
        self._last_size = 0
        self._last_seconds = 0.0
        self._closed = False
        self._flushing = 0  # flush() callers waiting: batches go out without their timeout

    @property
    def store(self) -> SQLConversationStore:
        """The conversation store whose messages are embedded."""
        return self._store

    @property
    def running(self) -> bool:
        """Whether the worker is running."""
        return self._worker is not None and not self._worker.done()

    def stats(self) -> QueueStats:
        """Depth (queued, not yet embedding), in flight, totals and backfill progress."""
        return QueueStats(
            depth=len(self._pending),
            in_flight=self._in_flight,
            embedded=self._embedded,
            batches=self._batches,
            failures=self._failures,
            backfill_running=self._backfilling,
            backfill_done=self._backfill_done,
            backfill_total=self._backfill_total,
            last_batch_size=self._last_size,
            last_batch_seconds=self._last_seconds,
        )

    async def start(self, *, progress: Progress | None = None) -> None:
        """Start the worker, and the backfill when ``backfill_on_start`` (in the background)."""
        if self._closed:
            msg = "this embedding queue is closed"
            raise MemoryError(msg)
        if self.running:
            return
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker = asyncio.create_task(self._work(), name="memvault-embedding-queue")
        _LIVE.add(self)
        if self._config.backfill_on_start:
            self._backfill_task = asyncio.create_task(
                self.backfill(progress=progress), name="memvault-embedding-backfill"
            )

    async def __aenter__(self) -> EmbeddingQueue:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def submit(self, messages: Sequence[StoredMessage]) -> int:
        """Queue stored messages for embedding; returns how many were queued.

        Never blocks: messages already queued (or being backfilled) are skipped, and beyond
        ``max_queue`` a message stays in the store for the next backfill.
        """
        queued = 0
        for m in messages:
            if m.embedded or m.message_id in self._claimed:
                continue
            if len(self._pending) >= self._config.max_queue:
                break
            self._claimed.add(m.message_id)
            self._pending.append((m.message_id, m.content))
            queued += 1
        if queued and self._wake is not None:
            assert self._idle is not None
            self._idle.clear()
            self._wake.set()
        return queued

    async def append(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        metadata: MessageMetadata | Sequence[MessageMetadata] | None = None,
    ) -> list[StoredMessage]:
        """Store the messages (durably) and queue them; returns before they are embedded."""
        stored = await self._store.append(agent_id, session_id, messages, metadata=metadata)
        self.submit(stored)
        return stored

    async def flush(self) -> None:
        """Wait until every queued message is embedded (and the start-up backfill is done)."""
        if self._backfill_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._backfill_task)
        if self._idle is not None and self._wake is not None and self.running:
            self._flushing += 1
            self._wake.set()
            try:
                await self._idle.wait()
            finally:
                self._flushing -= 1

    async def close(self) -> None:
        """Embed what is queued, then stop (idempotent). Unembedded rows stay for a backfill."""
        if self._closed:
            return
        with contextlib.suppress(Exception):
            await self.flush()
        self._closed = True
        for task in (self._backfill_task, self._worker):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        _LIVE.discard(self)

    # -- the worker -----------------------------------------------------------------------------

    async def _work(self) -> None:
        assert self._wake is not None and self._idle is not None
        timeout = self._config.batch_timeout_ms / 1000
        while True:
            if not self._pending:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            # A batch waits for batch_size messages, at most batch_timeout_ms after its first.
            deadline = time.monotonic() + timeout
            while len(self._pending) < self._config.batch_size and not self._flushing:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), left)
            batch = self._pending[: self._config.batch_size]
            del self._pending[: len(batch)]
            await self._embed(batch)

    async def _embed(self, batch: Sequence[tuple[int, str]]) -> int:
        self._in_flight += len(batch)
        started = time.perf_counter()
        try:
            vectors = await asyncio.to_thread(
                self._embedder.embed_documents, [text for _, text in batch]
            )
            pairs: list[tuple[int, np.ndarray[Any, Any]]] = [
                (mid, np.asarray(vectors[i], dtype=np.float32)) for i, (mid, _) in enumerate(batch)
            ]
            stored = await self._store.store_vectors(pairs, self._embedder.model_id)
        except Exception as exc:
            # The rows stay unembedded in the store; the next backfill retries them.
            self._failures += 1
            logger.warning(
                "conversation.embed.failed: %d message(s): %s",
                len(batch),
                exc,
                exc_info=not isinstance(exc, MemoryError),
                extra={"event": "conversation.embed.failed"},
            )
            return 0
        finally:
            self._in_flight -= len(batch)
            for mid, _ in batch:
                self._claimed.discard(mid)
        self._embedded += stored
        self._batches += 1
        self._last_size = len(batch)
        self._last_seconds = time.perf_counter() - started
        return stored

    async def backfill(self, *, progress: Progress | None = None) -> int:
        """Embed every stored row without a vector (the queue's own rows aside).

        Runs at :meth:`start` with ``backfill_on_start``; callable any time (``memvault
        conversations backfill``). ``progress(done, total)`` is called after each batch.
        Returns how many vectors it stored.
        """
        self._backfilling = True
        self._backfill_done = 0
        total = await self._store.count_unembedded()
        self._backfill_total = total
        if progress is not None:
            progress(0, total)
        stored = 0
        after = 0
        size = self._config.backfill_batch_size
        try:
            while True:
                rows = await self._store.unembedded(limit=size, after_id=after)
                if not rows:
                    break
                after = rows[-1][0]
                mine = [(mid, text) for mid, text in rows if mid not in self._claimed]
                self._claimed.update(mid for mid, _ in mine)
                if mine:
                    stored += await self._embed(mine)
                self._backfill_done += len(rows)
                if progress is not None:
                    progress(min(self._backfill_done, total), total)
        finally:
            self._backfilling = False
        return stored
