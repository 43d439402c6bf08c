"""Every injection strategy answers the same calls, so agent code need not know which it got.

An agent loop written against ``mem.injection_strategy()`` renders the strategy's tools and
routes the model's tool calls back to it; the configured strategy may be ``context`` (no tools),
``tool_based`` or ``self_editing``, and the same loop must work with each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from memvault import AsyncMemory
from memvault.errors import MemoryValidationError
from memvault.injection import ToolRegistry
from memvault.protocols import Embedder

STRATEGIES = ["context", "tool_based", "self_editing"]


@pytest.fixture
async def memory(minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory("memory://", embedder=minilm) as mem:
        await mem.add("Prefers tabs over spaces in every editor", agent_id="dev-1")
        yield mem


@pytest.mark.parametrize("name", STRATEGIES)
async def test_every_strategy_renders_and_dispatches_its_tools(
    memory: AsyncMemory, name: str
) -> None:
    strategy = memory.injection_strategy(name)
    assert strategy.strategy_name == name
    assert isinstance(strategy.registry, ToolRegistry)
    names = [d.name for d in strategy.get_tool_definitions()]
    assert [t["function"]["name"] for t in strategy.registry.openai_tools()] == names
    assert [t["name"] for t in strategy.registry.anthropic_tools()] == names
    # A tool the strategy does not have comes back to the model as an error string.
    answer = await strategy.handle_tool_call("dev-1", "no_such_tool", {})
    assert answer.startswith("error: unknown tool")
    with pytest.raises(MemoryValidationError):
        await strategy.handle_tool_call(" ", "no_such_tool", {})
    for tool in names:
        text = await strategy.handle_tool_call("dev-1", tool, "not json")
        assert text.startswith("error: ")


async def test_the_default_strategy_has_no_tools_and_says_so(memory: AsyncMemory) -> None:
    strategy = memory.injection_strategy()  # retrieval.strategy: context
    assert strategy.strategy_name == "context"
    assert strategy.get_tool_definitions() == ()
    answer = await strategy.handle_tool_call("dev-1", "search_memory", {"query": "editor"})
    assert answer == 'error: unknown tool "search_memory"; available tools: none'
    messages = await strategy.prepare_messages("dev-1", "which editor style?", 800)
    assert "tabs" in messages[0].content


async def test_tool_based_search_through_the_uniform_call(memory: AsyncMemory) -> None:
    strategy = memory.injection_strategy("tool_based")
    answer = await strategy.handle_tool_call("dev-1", "search_memory", {"query": "editor style"})
    assert "tabs" in answer
