"""memvault_toolset and memvault_instructions in real pydantic-ai agents (Function/TestModel)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from memvault import AsyncMemory, MemoryCategory, MemoryConfigError
from memvault.integrations.pydantic_ai import memvault_instructions, memvault_toolset


def _tool_returns(messages: list[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in messages
        for part in message.parts
        if getattr(part, "part_kind", "") == "tool-return"
    ]


async def test_function_model_calls_remember_then_recall(amemory: AsyncMemory) -> None:
    seen_tools: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen_tools[:] = [t.name for t in info.function_tools]
        returns = _tool_returns(messages)
        if not returns:
            args = {"content": "the staging server is on port 8080", "category": "infra"}
            return ModelResponse(parts=[ToolCallPart("remember", json.dumps(args))])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "staging port"})])
        return ModelResponse(parts=[TextPart(returns[-1])])

    agent = Agent(FunctionModel(model), toolsets=[memvault_toolset(amemory, agent_id="dev-1")])
    result = await agent.run("remember where staging runs")
    assert "port 8080" in result.output
    assert set(seen_tools) == {
        "remember",
        "recall",
        "list_memories",
        "learn_procedure",
        "record_episode",
    }
    (stored,) = await amemory.list(agent_id="dev-1")
    assert stored.category is MemoryCategory.SEMANTIC and stored.metadata.label == "infra"


async def test_bad_arguments_come_back_as_an_error_result(amemory: AsyncMemory) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = _tool_returns(messages)
        if not returns:
            # Passes pydantic-ai (it does not validate from_schema tools), fails memvault's schema.
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "x", "top_k": 500})])
        return ModelResponse(parts=[TextPart(returns[-1])])

    agent = Agent(FunctionModel(model), toolsets=[memvault_toolset(amemory, agent_id="a")])
    result = await agent.run("go")
    assert result.output.startswith("error: invalid arguments for recall")


async def test_test_model_exercises_every_self_editing_tool(amemory: AsyncMemory) -> None:
    toolset = memvault_toolset(amemory, agent_id="a", memory_tools=False, self_editing=True)
    agent = Agent(TestModel(), toolsets=[toolset])
    result = await agent.run("hello")
    called = {
        part.tool_name
        for message in result.all_messages()
        for part in message.parts
        if getattr(part, "part_kind", "") == "tool-call"
    }
    assert called == {
        "core_memory_read",
        "core_memory_write",
        "archival_memory_search",
        "archival_memory_write",
        "recall_memory_read",
        "recall_memory_write",
    }


async def test_agent_id_from_deps(amemory: AsyncMemory) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not _tool_returns(messages):
            return ModelResponse(parts=[ToolCallPart("record_episode", {"content": "shipped v2"})])
        return ModelResponse(parts=[TextPart("ok")])

    toolset = memvault_toolset(amemory, agent_id=lambda ctx: f"user-{ctx.deps}")
    agent = Agent(FunctionModel(model), deps_type=int, toolsets=[toolset])
    await agent.run("x", deps=7)
    (episode,) = await amemory.list(agent_id="user-7")
    assert episode.category is MemoryCategory.EPISODIC


async def test_instructions_inject_procedures_and_relevant_memories(amemory: AsyncMemory) -> None:
    tools = amemory.memory_tools()
    await tools.learn_procedure("dev-1", "always run the linter before committing")
    await amemory.add("the user's favourite database is PostgreSQL", agent_id="dev-1")
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["instructions"] = info.instructions
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(model), instructions=memvault_instructions(amemory, agent_id="dev-1")
    )
    await agent.run("which database should I use?")
    text = seen["instructions"] or ""
    assert "## Learned Procedures and Policies" in text
    assert "always run the linter" in text
    assert "PostgreSQL" in text


def test_a_sync_memory_is_a_config_error(tmp_path: Any) -> None:
    from memvault import Memory

    with Memory("memory://") as mem, pytest.raises(MemoryConfigError, match="AsyncMemory"):
        memvault_toolset(mem, agent_id="a")  # type: ignore[arg-type]
