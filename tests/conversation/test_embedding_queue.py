"""The embedding queue with the real bundled model: batches, backfill, crash safety, search."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conversation_helpers import MakeStore

from memvault.conversation import EmbeddingQueueConfig, SQLConversationStore
from memvault.conversation.queue import EmbeddingQueue, live_queues
from memvault.conversation.sqlite import SQLiteConversationStore
from memvault.protocols import Embedder

FACTS = [
    "The deployment pipeline pushes containers to the staging cluster every night.",
    "Alice prefers green tea over coffee in the morning.",
    "The invoice service stores amounts in cents to avoid rounding errors.",
]


async def test_a_write_returns_before_its_vector_and_search_sees_it_lexically_then_densely(
    store: SQLConversationStore, minilm: Embedder
) -> None:
    # A long batch timeout keeps the batch open, so the state right after the write is visible
    # (no start-up backfill: it would race the queue for the filler message below).
    config = EmbeddingQueueConfig(
        enabled=True, batch_size=64, batch_timeout_ms=60_000, backfill_on_start=False
    )
    async with EmbeddingQueue(store, minilm, config) as queue:
        stored = await queue.append(
            "dev", "s", [{"role": "user", "content": text} for text in FACTS]
        )
        assert not any(m.embedded for m in stored)
        assert queue.stats().depth + queue.stats().in_flight == 3
        lexical = await store.search("dev", "green tea", embedder=minilm)
        assert lexical[0].message.content == FACTS[1]
        assert lexical[0].lexical and not lexical[0].dense
        # Nothing shares a word with this query: only the dense signal can find the fact.
        assert await store.search("dev", "beverage habits", embedder=minilm) == []
        queue.submit([])  # no-op
        await store.append("dev", "s", [{"role": "user", "content": "filler"}])
    # close() flushed the queue: the three queued messages are embedded, the filler is not
    # (it was written past the queue: the next backfill's work).
    assert (await store.stats()).unembedded == 1
    dense = await store.search("dev", "beverage habits", embedder=minilm)
    assert dense[0].message.content == FACTS[1]
    assert dense[0].dense
    assert all(m.embedded for m in (await store.messages("dev", "s"))[:3])


async def test_batches_follow_size_and_timeout(
    store: SQLConversationStore, minilm: Embedder
) -> None:
    config = EmbeddingQueueConfig(enabled=True, batch_size=2, batch_timeout_ms=20)
    async with EmbeddingQueue(store, minilm, config) as queue:
        await queue.append("dev", "s", [{"role": "user", "content": t} for t in FACTS])
        await queue.flush()
        stats = queue.stats()
        assert stats.embedded == 3
        assert stats.batches == 2  # 2 by size, then 1 by timeout
        assert stats.depth == 0
        assert queue in live_queues()
    assert queue not in live_queues()


async def test_backfill_at_start_embeds_rows_left_unembedded_with_progress(
    store: SQLConversationStore, minilm: Embedder
) -> None:
    for i in range(7):
        await store.append(
            "dev", f"s{i % 2}", [{"role": "user", "content": f"note {i} {FACTS[i % 3]}"}]
        )
    assert await store.count_unembedded() == 7
    seen: list[tuple[int, int]] = []
    config = EmbeddingQueueConfig(enabled=True, backfill_batch_size=3)
    queue = EmbeddingQueue(store, minilm, config)
    await queue.start(progress=lambda done, total: seen.append((done, total)))
    await queue.flush()
    assert await store.count_unembedded() == 0
    assert seen[0] == (0, 7)
    assert seen[-1] == (7, 7)
    assert len(seen) == 4  # 0, 3, 6, 7
    assert queue.stats().backfill_done == 7
    await queue.close()


async def test_a_crash_loses_nothing_and_embeds_nothing_twice(
    tmp_path: Path, minilm: Embedder
) -> None:
    path = tmp_path / "c.db"
    store = SQLiteConversationStore(path)
    config = EmbeddingQueueConfig(enabled=True, batch_size=64, batch_timeout_ms=60_000)
    queue = EmbeddingQueue(store, minilm, config.model_copy(update={"backfill_on_start": False}))
    await queue.start()
    await queue.append("dev", "s", [{"role": "user", "content": t} for t in FACTS])
    # The "crash": the worker dies and the connection goes before the batch was embedded.
    assert queue._worker is not None
    queue._worker.cancel()
    await asyncio.gather(queue._worker, return_exceptions=True)
    await store.close()

    reopened = SQLiteConversationStore(path)
    try:
        assert await reopened.count_unembedded() == 3  # admitted, so stored
        counted: list[int] = []

        class Counting:
            model_id = minilm.model_id
            dimension = minilm.dimension

            def embed_documents(self, texts: list[str]) -> object:
                counted.extend([1] * len(texts))
                return minilm.embed_documents(texts)

            def embed_query(self, text: str) -> object:
                return minilm.embed_query(text)

        async with EmbeddingQueue(reopened, Counting(), config) as again:  # type: ignore[arg-type]
            await again.flush()
            assert len(counted) == 3
            # A second backfill finds nothing, and a repeated store of a vector is refused.
            assert await again.backfill() == 0
        assert len(counted) == 3
        first = (await reopened.messages("dev", "s"))[0]
        vector = minilm.embed_documents([first.content])[0]
        assert await reopened.store_vectors([(first.message_id, vector)], minilm.model_id) == 0
        assert await reopened.count_unembedded() == 0
    finally:
        await reopened.close()


async def test_a_full_queue_leaves_messages_for_the_backfill(
    make_store: MakeStore, minilm: Embedder
) -> None:
    store = make_store()
    config = EmbeddingQueueConfig(
        enabled=True, max_queue=2, batch_size=64, batch_timeout_ms=60_000, backfill_on_start=False
    )
    async with EmbeddingQueue(store, minilm, config) as queue:
        await queue.append("dev", "s", [{"role": "user", "content": t} for t in FACTS])
        assert queue.stats().depth == 2
    assert await store.count_unembedded() == 1
    async with EmbeddingQueue(store, minilm, EmbeddingQueueConfig(enabled=True)) as queue:
        await queue.flush()
    assert await store.count_unembedded() == 0
