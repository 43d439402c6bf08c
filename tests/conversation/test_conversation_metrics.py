"""Queue depth, backfill progress and cache hits on ``/metrics`` of the real server (real HTTP)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from memvault.config import load_config
from memvault.conversation import EmbeddingQueueConfig, InMemoryConversationStore
from memvault.conversation.queue import EmbeddingQueue
from memvault.llm.cache import CachingLLM
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder
from memvault.server.rest import create_app
from memvault.service import MemoryService
from server.conftest import run_app


def _value(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


async def test_metrics_show_queue_depth_backfill_progress_and_cache_hits(
    tmp_path: Path, minilm: Embedder
) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "s.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None))
    store = InMemoryConversationStore()
    try:
        for i in range(5):
            await store.append("dev", "s", [{"role": "user", "content": f"old note {i}"}])
        config = EmbeddingQueueConfig(enabled=True, batch_size=100, batch_timeout_ms=60_000)
        cache = CachingLLM(ScriptedLLM(["ok"], repeat_last=True))
        ask = [ChatMessage(role="user", content="status?")]
        for _ in range(4):
            await cache.complete(ask)
        async with EmbeddingQueue(store, minilm, config) as queue:
            await queue.flush()  # the start-up backfill of the five old notes
            await queue.append("dev", "s", [{"role": "user", "content": "new"}] * 3)
            async with httpx.AsyncClient() as client:
                text = (await client.get(url + "/metrics")).text
            assert _value(text, "memvault_embedding_queue_depth") >= 3
            assert _value(text, "memvault_embedding_backfill_done") >= 5
            assert _value(text, "memvault_embedding_backfill_total") >= 5
            assert _value(text, "memvault_response_cache_hits_total") >= 3
            assert 0 < _value(text, "memvault_response_cache_hit_ratio") <= 1
            await queue.flush()
            async with httpx.AsyncClient() as client:
                text = (await client.get(url + "/metrics")).text
            assert _value(text, "memvault_embedding_queue_embedded_total") >= 8
        await asyncio.sleep(0)
    finally:
        await store.close()
        stop()
        await service.close()
