"""Conversations in: add(messages) stores turns by default and extracted facts with infer=True."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import AsyncMemory, Memory
from memvault.errors import MemoryStoreError, MemoryValidationError
from memvault.llm.errors import ProviderError
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder

CHAT = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "I'm vegetarian and I live in Lyon."},
    {"role": "assistant", "content": "Noted! Any favourite cuisine?"},
    {"role": "user", "content": [{"type": "text", "text": "Thai food; my budget is 30 EUR."}]},
    {"role": "tool", "content": '{"results": []}'},
]


def test_each_turn_becomes_an_episodic_memory_in_one_thread(
    tmp_path: Path, minilm: Embedder
) -> None:
    with Memory(str(tmp_path / "m.db"), embedder=minilm) as mem:
        ids = mem.add(CHAT, agent_id="travel", session_id="s-1", user_id="u-42")
        assert isinstance(ids, list) and len(ids) == 3  # system and tool messages are skipped
        turns = [mem.get(i, agent_id="travel") for i in ids]
        assert [t.metadata.extra["role"] for t in turns] == ["user", "assistant", "user"]
        assert turns[2].content == "Thai food; my budget is 30 EUR."
        assert all(t.category.value == "episodic" for t in turns)
        assert all(t.metadata.extra["session_id"] == "s-1" for t in turns)
        assert all(t.metadata.extra["user_id"] == "u-42" for t in turns)
        # The same conversation again is recognised (dedup), not stored twice.
        assert mem.add(CHAT, agent_id="travel", session_id="s-1", user_id="u-42") == ids
        # add_many takes a conversation too; ChatMessage objects work like dicts.
        more = mem.add_many(
            [ChatMessage(role="user", content="Also, I am allergic to peanuts.")], agent_id="travel"
        )
        assert mem.get(more[0], agent_id="travel").metadata.extra["role"] == "user"
        hits = mem.search("is the user allergic to peanuts?", agent_id="travel")
        assert more[0] in [h.id for h in hits[:2]]


def test_bad_conversations_are_refused_with_one_line(tmp_path: Path, minilm: Embedder) -> None:
    with Memory(str(tmp_path / "m.db"), embedder=minilm) as mem:
        for bad, match in [
            ([{"role": "system", "content": "only a prompt"}], "no user or assistant"),
            ([{"role": "narrator", "content": "x"}], "unknown role"),
            ([{"role": "user", "content": 42}], "message 0"),
            (["just a string"], "message 0"),
            ([{"role": "user", "content": "x", "created_at": "yesterday"}], "ISO 8601"),
        ]:
            with pytest.raises(MemoryValidationError, match=match):
                mem.add(bad, agent_id="a")  # type: ignore[arg-type]
        with pytest.raises(MemoryValidationError, match="infer"):
            mem.add("a plain text", agent_id="a", infer=True)
        with pytest.raises(MemoryValidationError, match="user_id"):
            mem.add("x", agent_id="a", user_id="")
        assert mem.count(agent_id="a") == 0


async def test_infer_stores_the_llm_facts_through_the_write_path(
    tmp_path: Path, minilm: Embedder
) -> None:
    llm = ScriptedLLM(
        [
            "semantic: The user is vegetarian\npreferences: The user likes Thai food",
            "preferences: The user now prefers Indian food",
        ]
    )
    mem = AsyncMemory(str(tmp_path / "m.db"), embedder=minilm, llm=llm)
    try:
        ids = await mem.add(CHAT, agent_id="travel", infer=True, user_id="u-42")
        facts = [await mem.get(i, agent_id="travel") for i in ids]
        assert [f.content for f in facts] == [
            "The user is vegetarian",
            "The user likes Thai food",
        ]
        assert facts[1].metadata.label == "preferences"
        assert all(f.metadata.extra["user_id"] == "u-42" for f in facts)
        assert "episode_ids" not in facts[0].metadata.extra  # the turns were not stored
        # The prompt shows who said what, wrapped as data.
        prompt = llm.calls[0][-1].content
        assert "user: I'm vegetarian and I live in Lyon." in prompt
        assert "You are a travel assistant" not in prompt
        assert await mem.count(agent_id="travel") == 2
    finally:
        await mem.close()


async def test_infer_without_an_llm_keeps_key_facts_and_an_llm_failure_stores_nothing(
    tmp_path: Path, minilm: Embedder
) -> None:
    plain = AsyncMemory(str(tmp_path / "plain.db"), embedder=minilm)
    failing = AsyncMemory(
        str(tmp_path / "failing.db"),
        embedder=minilm,
        llm=ScriptedLLM([ProviderError("upstream down", retryable=True)]),
    )
    trip = [{"role": "user", "content": "My flight to Tokyo leaves on 12 March at 08:40."}]
    try:
        ids = await plain.add(trip, agent_id="a", infer=True)
        assert [(await plain.get(i, agent_id="a")).content for i in ids] == [
            "My flight to Tokyo leaves on 12 March at 08:40."
        ]
        with pytest.raises(MemoryStoreError, match="nothing was stored"):
            await failing.add(trip, agent_id="a", infer=True)
        assert await failing.count(agent_id="a") == 0
    finally:
        await plain.close()
        await failing.close()
