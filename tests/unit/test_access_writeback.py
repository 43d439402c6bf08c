"""Access counts of searches are written behind the search, exactly, without starving readers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memvault import AsyncMemory
from memvault.embeddings.hashing import HashingEmbedder


async def test_counts_are_exact_and_reads_are_not_starved(tmp_path: Path) -> None:
    mem = AsyncMemory(str(tmp_path / "a.db"), embedder=HashingEmbedder())
    try:
        ids = await mem.add_many(
            [{"content": f"fact number {i} about zebras"} for i in range(20)], agent_id="a1"
        )
        hits: dict[str, int] = dict.fromkeys(ids, 0)
        stop = asyncio.Event()
        searches = 0
        streaming = asyncio.Event()  # 16 searches done, and more still streaming in

        async def searcher() -> None:
            nonlocal searches
            while not stop.is_set():
                for entry in await mem.search("zebras fact", agent_id="a1", limit=5):
                    hits[entry.id] += 1
                searches += 1
                if searches >= 16:
                    streaming.set()

        tasks = [asyncio.create_task(searcher()) for _ in range(8)]
        await asyncio.wait_for(streaming.wait(), timeout=30)
        # A read while searches keep streaming in waits only for the counts before it: it must
        # finish while the searchers are still running (it used to wait for them to stop).
        assert await asyncio.wait_for(mem.count(agent_id="a1"), timeout=30) == 20
        assert not stop.is_set()
        stop.set()
        await asyncio.gather(*tasks)
        # Every hit counted once, none lost or doubled (reads settle pending counts first).
        for entry in await mem.list(agent_id="a1", limit=100):
            assert entry.access_count == hits[entry.id], entry.id
        assert sum(hits.values()) > 0
    finally:
        await mem.close()


async def test_close_writes_pending_counts(tmp_path: Path) -> None:
    path = str(tmp_path / "b.db")
    mem = AsyncMemory(path, embedder=HashingEmbedder())
    mid = await mem.add("the only memory", agent_id="a1")
    for _ in range(3):
        await mem.search("only memory", agent_id="a1")
    await mem.close()
    again = AsyncMemory(path, embedder=HashingEmbedder())
    try:
        assert (await again.get(mid, agent_id="a1")).access_count == 3
    finally:
        await again.close()
