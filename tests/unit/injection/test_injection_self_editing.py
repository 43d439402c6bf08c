"""SelfEditingMemoryStrategy: core block in the prompt, six tools, write safety valves."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from memvault import AsyncMemory
from memvault.errors import MemoryValidationError
from memvault.injection import CORE_TAG, SelfEditingMemoryConfig, SelfEditingMemoryStrategy
from memvault.models import MemoryCategory
from memvault.protocols import Embedder, MemoryInjectionStrategy
from memvault.retrieval.packing import (
    MEMORY_BLOCK_END,
    MEMORY_BLOCK_START,
    MESSAGE_OVERHEAD_TOKENS,
    PREAMBLE,
    estimate_tokens,
)

NOW = datetime(2026, 3, 1, tzinfo=UTC)
TOOLS = [
    "core_memory_read",
    "core_memory_write",
    "archival_memory_search",
    "archival_memory_write",
    "recall_memory_read",
    "recall_memory_write",
]


@pytest.fixture
async def mem(minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory("memory://", embedder=minilm) as memory:
        await memory.add("The user's name is Dana", agent_id="dev-1", tags=[CORE_TAG])
        await memory.add("Dana works on the billing service", agent_id="dev-1", tags=[CORE_TAG])
        await memory.add("The team chose Litestar over Flask", agent_id="dev-1")
        await memory.add(
            "Rolled back v2.1 because of a memory leak", agent_id="dev-1", category="episodic"
        )
        await memory.add("Eve's secret core fact", agent_id="dev-2", tags=[CORE_TAG])
        yield memory


def _core_ids(text: str) -> list[str]:
    return re.findall(r"\[id=([^ |]+)", text)


def test_strategy_implements_the_protocol_with_six_tools(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    assert isinstance(strategy, MemoryInjectionStrategy)
    assert strategy.strategy_name == "self_editing"
    assert [t.name for t in strategy.get_tool_definitions()] == TOOLS
    assert [t["function"]["name"] for t in strategy.registry.openai_tools()] == TOOLS
    assert [t["name"] for t in strategy.registry.anthropic_tools()] == TOOLS


async def test_core_memories_are_in_the_system_prompt(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    (message,) = await strategy.prepare_messages("dev-1", "fix the invoice bug", 1000)
    assert message.role == "system"
    text = message.content
    assert "core_memory_write" in text
    assert f"{PREAMBLE}\n{MEMORY_BLOCK_START}\n" in text
    assert text.endswith(MEMORY_BLOCK_END)
    assert "The user's name is Dana" in text
    assert "Dana works on the billing service" in text
    assert "Litestar" not in text  # archival, not core
    assert "memory leak" not in text  # recall, not core
    assert "Eve" not in text  # another agent's core
    assert "tags: core" not in text  # the marker tag is not repeated on every line
    with pytest.raises(MemoryValidationError):
        await strategy.prepare_messages("dev-1", "q", 0)


async def test_core_block_stays_within_the_budget_keeping_the_newest(mem: AsyncMemory) -> None:
    for i in range(30):
        await mem.add(
            f"Core fact number {i}: the billing service retries webhook {i} times",
            agent_id="dev-9",
            tags=[CORE_TAG],
            created_at=NOW + timedelta(minutes=i),
        )
    strategy = SelfEditingMemoryStrategy(mem, SelfEditingMemoryConfig(core_token_budget=300))
    for budget in (1000, 250):
        (message,) = await strategy.prepare_messages("dev-9", "q", budget)
        cost = estimate_tokens(message.content) + MESSAGE_OVERHEAD_TOKENS
        assert cost <= min(budget, 300)
        assert "Core fact number 29:" in message.content
        assert "Core fact number 0:" not in message.content
    (small,) = await strategy.prepare_messages("dev-9", "q", 250)
    (large,) = await strategy.prepare_messages("dev-9", "q", 1000)
    assert 0 < len(_core_ids(small.content)) < len(_core_ids(large.content))
    assert await strategy.prepare_messages("dev-9", "q", 20) == ()
    written = await strategy.handle_tool_call(
        "dev-9", "core_memory_write", {"content": "One more core fact"}
    )
    assert "core memory exceeds its budget of 300 tokens" in written


async def test_empty_core_still_gives_the_instruction(mem: AsyncMemory) -> None:
    (message,) = await SelfEditingMemoryStrategy(mem).prepare_messages("new-agent", "q", 500)
    assert message.content.endswith("Core memory is empty.")
    assert MEMORY_BLOCK_START not in message.content


async def test_core_memory_write_and_read(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    result = await strategy.handle_tool_call(
        "dev-1", "core_memory_write", {"content": "Dana prefers short answers"}
    )
    assert result.startswith("ok: stored core memory ")
    new_id = result.removeprefix("ok: stored core memory ")
    stored = await mem.get(new_id, agent_id="dev-1")
    assert stored.category is MemoryCategory.SEMANTIC
    assert stored.metadata.tags == (CORE_TAG,)
    (message,) = await strategy.prepare_messages("dev-1", "q", 1000)
    assert "Dana prefers short answers" in message.content
    read = await strategy.handle_tool_call("dev-1", "core_memory_read", "")
    assert read.startswith("Core memory (3 entries, newest first):")
    assert f"[id={new_id} |" in read
    again = await strategy.handle_tool_call(
        "dev-1", "core_memory_write", {"content": "dana prefers  short answers"}
    )
    assert again == f"ok: already in core memory as {new_id}"


async def test_core_memory_write_replaces_an_entry_by_id(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    read = await strategy.handle_tool_call("dev-1", "core_memory_read", {})
    (old,) = [line for line in read.splitlines() if "billing service" in line]
    old_id = _core_ids(old)[0]
    result = await strategy.handle_tool_call(
        "dev-1",
        "core_memory_write",
        {"content": "Dana moved to the payments team", "replaces": old_id},
    )
    assert result.endswith(f", replacing {old_id}")
    (message,) = await strategy.prepare_messages("dev-1", "q", 1000)
    assert "payments team" in message.content
    assert "billing service" not in message.content
    assert (await mem.get(old_id, agent_id="dev-1")).superseded_by is not None


async def test_core_memory_write_only_replaces_own_core_entries(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    archival = (await mem.search("Litestar", agent_id="dev-1", limit=1))[0].id
    other = (await mem.list(agent_id="dev-2"))[0].id
    for target in (archival, other, "missing-id"):
        result = await strategy.handle_tool_call(
            "dev-1", "core_memory_write", {"content": "x is y", "replaces": target}
        )
        assert result == f"error: no core memory with id {target!r}; see core_memory_read"
    assert (await mem.list(agent_id="dev-2"))[0].superseded_by is None


async def test_core_writes_are_refused_when_disabled(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem, SelfEditingMemoryConfig(allow_core_writes=False))
    before = await mem.count(agent_id="dev-1")
    result = await strategy.handle_tool_call(
        "dev-1", "core_memory_write", {"content": "I am now an admin"}
    )
    assert result.startswith("error: core memory is read-only for this agent")
    assert await mem.count(agent_id="dev-1") == before
    (message,) = await strategy.prepare_messages("dev-1", "q", 1000)
    assert "core memory is read-only" in message.content
    # Reading still works.
    assert "The user's name is Dana" in await strategy.handle_tool_call(
        "dev-1", "core_memory_read", {}
    )


async def test_archival_write_and_search(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    result = await strategy.handle_tool_call(
        "dev-1",
        "archival_memory_write",
        '{"content": "To rotate keys, run make rotate then restart the API", '
        '"category": "procedural", "tags": ["ops"]}',
    )
    assert result.startswith("ok: stored archival memory ")
    new_id = result.removeprefix("ok: stored archival memory ")
    stored = await mem.get(new_id, agent_id="dev-1")
    assert stored.category is MemoryCategory.PROCEDURAL
    assert stored.metadata.tags == ("ops",)
    found = await strategy.handle_tool_call(
        "dev-1", "archival_memory_search", {"query": "how do I rotate keys", "limit": 1}
    )
    assert found.startswith("1 archival memories found:")
    assert f"[id={new_id} | procedural" in found
    everything = await strategy.handle_tool_call(
        "dev-1", "archival_memory_search", {"query": "Dana name", "limit": 20}
    )
    assert "Litestar" in everything
    assert "Dana" not in everything  # core memories sit in the prompt, not in archival results
    assert "memory leak" not in everything  # episodic is the recall block


async def test_archival_write_cannot_smuggle_core_memories(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    result = await strategy.handle_tool_call(
        "dev-1", "archival_memory_write", {"content": "I am root", "tags": ["Core"]}
    )
    assert result.startswith("error: invalid arguments for archival_memory_write")
    assert "reserved for core memory" in result
    episodic = await strategy.handle_tool_call(
        "dev-1", "archival_memory_write", {"content": "x happened", "category": "episodic"}
    )
    assert episodic.startswith("error: invalid arguments for archival_memory_write")


async def test_recall_write_and_read(mem: AsyncMemory) -> None:
    strategy = SelfEditingMemoryStrategy(mem)
    result = await strategy.handle_tool_call(
        "dev-1", "recall_memory_write", {"content": "Dana asked for a refund report today"}
    )
    assert result.startswith("ok: stored recall memory ")
    new_id = result.removeprefix("ok: stored recall memory ")
    assert (await mem.get(new_id, agent_id="dev-1")).category is MemoryCategory.EPISODIC
    recent = await strategy.handle_tool_call("dev-1", "recall_memory_read", {"limit": 1})
    assert recent.startswith("1 most recent events, newest first:")
    assert "refund report" in recent
    searched = await strategy.handle_tool_call(
        "dev-1", "recall_memory_read", {"query": "rollback memory leak"}
    )
    assert searched.startswith("2 recalled events, most relevant first:")
    assert searched.index("memory leak") < searched.index("refund report")
    assert "Litestar" not in searched
    none = await strategy.handle_tool_call("nobody", "recall_memory_read", {})
    assert none == "No events recalled."


async def test_writes_are_limited_to_writable_categories(mem: AsyncMemory) -> None:
    only_episodic = SelfEditingMemoryStrategy(
        mem, SelfEditingMemoryConfig(writable_categories=frozenset({MemoryCategory.EPISODIC}))
    )
    before = await mem.count(agent_id="dev-1")
    refused = await only_episodic.handle_tool_call(
        "dev-1", "archival_memory_write", {"content": "Payments use Stripe"}
    )
    assert refused == (
        "error: writing semantic memories is not allowed for this agent "
        "(writable categories: episodic)"
    )
    assert await mem.count(agent_id="dev-1") == before
    ok = await only_episodic.handle_tool_call(
        "dev-1", "recall_memory_write", {"content": "Deployed v2.2"}
    )
    assert ok.startswith("ok: stored recall memory")

    only_semantic = SelfEditingMemoryStrategy(
        mem, SelfEditingMemoryConfig(writable_categories=frozenset({MemoryCategory.SEMANTIC}))
    )
    assert (
        await only_semantic.handle_tool_call(
            "dev-1", "archival_memory_write", {"content": "x", "category": "social"}
        )
    ).startswith("error: writing social memories is not allowed")
    assert (
        await only_semantic.handle_tool_call("dev-1", "recall_memory_write", {"content": "x"})
    ).startswith("error: writing episodic memories is not allowed")
    assert (
        await only_semantic.handle_tool_call(
            "dev-1", "archival_memory_write", {"content": "Payments use Stripe"}
        )
    ).startswith("ok: stored archival memory")


def test_config_rejects_inconsistent_blocks() -> None:
    with pytest.raises(ValidationError, match="recall block"):
        SelfEditingMemoryConfig(
            archival_categories=frozenset({MemoryCategory.SEMANTIC, MemoryCategory.EPISODIC})
        )
    with pytest.raises(ValidationError, match="at least one category"):
        SelfEditingMemoryConfig(archival_categories=frozenset())
    with pytest.raises(ValidationError, match="exceeds max_search_limit"):
        SelfEditingMemoryConfig(archival_search_limit=50, max_search_limit=20)
    with pytest.raises(ValidationError):
        SelfEditingMemoryConfig(core_token_budget=0)
