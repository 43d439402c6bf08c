"""``Memory.conversations`` and ``Memory.response_cache``: the public API of issue 18 (part B)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import AsyncMemory, Memory
from memvault.config import MemvaultConfig
from memvault.errors import MemoryValidationError
from memvault.llm.cache import CachingLLM
from memvault.llm.metered import MeteredLLM
from memvault.llm.scripted import ScriptedLLM
from memvault.sessions import SessionManager

ON = MemvaultConfig.model_validate(
    {
        "conversation": {
            "embedding_queue": {"enabled": True, "batch_timeout_ms": 10},
            "compaction": {"token_budget": 120, "keep_recent": 1},
        },
        "response_cache": {"enabled": True},
    }
)


async def test_async_memory_conversations_store_queue_search_and_compact(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    config = ON.model_copy(update={"storage": ON.storage.model_copy(update={"url": str(path)})})
    async with AsyncMemory(str(path), config=config) as memory:
        conv = memory.conversations
        assert conv is memory.conversations
        stored = await conv.append(
            "s1",
            [
                {"role": "user", "content": "Our staging database is db-staging-07."},
                {"role": "assistant", "content": "Noted: staging uses db-staging-07."},
            ],
            agent_id="dev",
        )
        assert [m.position for m in stored] == [1, 2]
        hits = await conv.search("staging database", agent_id="dev")
        assert hits[0].message.message_id == stored[0].message_id
        await conv.flush()
        stats = conv.queue_stats()
        assert stats is not None and stats.embedded == 2
        assert (await conv.stats()).unembedded == 0
        dense = await conv.search("which server hosts the test environment", agent_id="dev")
        assert dense and dense[0].dense
        for i in range(6):
            await conv.append(
                "s1", [{"role": "user", "content": f"more chatter number {i} " * 6}], agent_id="dev"
            )
        assert (await conv.pressure("s1", agent_id="dev")).level == "hard"
        context = await conv.context("s1", agent_id="dev")
        assert any(m.name == "conversation_summary" for m in context)
        assert "db-staging-07" in "\n".join(m.content for m in context)
        assert len(await conv.messages("s1", agent_id="dev", view="all")) > len(context)
        manager = SessionManager(conv.sessions(), "dev")
        resumed = await manager.resume()
        assert resumed is not None and resumed[0] == "s1"
    # The messages are in the memory file: a new process sees them (and nothing to backfill).
    async with AsyncMemory(str(path)) as memory:
        assert len(await memory.conversations.messages("s1", agent_id="dev", view="all")) >= 8
        assert await memory.conversations.backfill() == 0


def test_sync_memory_conversations(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "m.db")) as memory:
        conv = memory.conversations
        conv.append("s", [{"role": "user", "content": "hello there"}], agent_id="dev")
        assert [m.content for m in conv.history("s", agent_id="dev")] == ["hello there"]
        assert conv.search("hello", agent_id="dev")[0].lexical
        assert conv.queue_stats() is None  # the queue is off by default
        assert conv.stats().unembedded == 1
        assert conv.backfill() == 1  # on demand, with the queue off
        assert conv.compact("s", agent_id="dev").before.level == "ok"
        with pytest.raises(MemoryValidationError):
            conv.append("s", [{"role": "nobody", "content": "x"}], agent_id="dev")
        assert memory.response_cache is None


async def test_the_response_cache_wraps_memvaults_own_llm_and_follows_memory_changes() -> None:
    llm = ScriptedLLM(["first", "second"], repeat_last=True)
    async with AsyncMemory("memory://", config=ON, llm=llm) as memory:
        cache = memory.response_cache
        assert isinstance(cache, CachingLLM)
        assert memory.llm is cache
        memory_id = await memory.add("the user likes tea", agent_id="dev")
        from memvault.models import ChatMessage

        ask = [ChatMessage(role="user", content="what does the user drink?")]
        assert (await cache.cached(ask, memory_ids=[memory_id])).text == "first"
        assert (await cache.complete(ask)).text == "first"
        assert len(llm.calls) == 1
        await memory.update(memory_id, agent_id="dev", content="the user likes coffee")
        assert cache.stats().invalidated == 1
        assert (await cache.complete(ask)).text == "second"
    async with AsyncMemory("memory://", llm=llm) as plain:
        assert plain.response_cache is None
        # memory.llm is the metered view of the given LLM (cost records, budgets).
        assert isinstance(plain.llm, MeteredLLM) and plain.llm.inner is llm
