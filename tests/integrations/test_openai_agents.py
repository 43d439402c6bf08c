"""memvault_function_tools and MemvaultSession in the real OpenAI Agents SDK, scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents_scripted import ScriptedModel, call, say

from memvault import AsyncMemory, MemoryCategory, MemoryValidationError
from memvault.integrations.openai_agents import MemvaultSession, memvault_function_tools
from memvault.sessions import SQLiteSessionStore

set_tracing_disabled(True)


def _last_tool_output(items: Any) -> str:
    outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return str(outputs[-1]["output"])


async def test_tools_store_and_recall_through_the_runner(amemory: AsyncMemory) -> None:
    model = ScriptedModel(
        [
            call("learn_procedure", {"content": "tag releases as vX.Y.Z", "category": "release"}),
            call("recall", {"query": "how are releases tagged?"}, call_id="call-2"),
            lambda items: say(_last_tool_output(items)),
        ]
    )
    agent = Agent(name="dev", model=model, tools=memvault_function_tools(amemory, agent_id="dev-1"))
    result = await Runner.run(agent, "how do we tag releases?")
    assert "tag releases as vX.Y.Z" in result.final_output
    (stored,) = await amemory.list(agent_id="dev-1")
    assert stored.category is MemoryCategory.PROCEDURAL


async def test_malformed_arguments_reach_the_model_as_an_error(amemory: AsyncMemory) -> None:
    model = ScriptedModel(
        [call("remember", "{not json"), lambda items: say(_last_tool_output(items))]
    )
    agent = Agent(name="dev", model=model, tools=memvault_function_tools(amemory, agent_id="a"))
    result = await Runner.run(agent, "x")
    assert result.final_output.startswith("error: the arguments of remember are not valid JSON")


async def test_session_keeps_the_history_across_runs(amemory: AsyncMemory, tmp_path: Path) -> None:
    db = str(tmp_path / "sessions.db")
    model = ScriptedModel(
        [
            call("remember", {"content": "my cat is called Miso"}),
            say("noted"),
            lambda items: say(f"I saw {len(items)} items"),
        ]
    )
    tools = memvault_function_tools(amemory, agent_id="u1")
    agent = Agent(name="dev", model=model, tools=tools)
    await Runner.run(
        agent, "my cat is Miso", session=MemvaultSession("t-1", agent_id="u1", store=db)
    )
    # A new session object on the same store: the second run sees the first run's history,
    # tool call and tool output included.
    session = MemvaultSession("t-1", agent_id="u1", store=db)
    result = await Runner.run(agent, "what is my cat called?", session=session)
    items = await session.get_items()
    kinds = [i.get("type", i.get("role")) for i in items]
    assert kinds == [
        "user",
        "function_call",
        "function_call_output",
        "assistant",
        "user",
        "assistant",
    ]
    assert result.final_output == "I saw 5 items"
    # Plain turns are ordinary chat messages in memvault's store.
    record = await SQLiteSessionStore(db).get("u1", "t-1")
    assert record is not None
    assert [m.role for m in record.messages if m.name is None] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_session_protocol_limit_pop_clear(tmp_path: Path) -> None:
    session = MemvaultSession("s", agent_id="a", store=str(tmp_path / "s.db"))
    assert await session.get_items() == []
    assert await session.pop_item() is None
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)])
    assert [i["content"] for i in await session.get_items(limit=2)] == ["m3", "m4"]  # type: ignore[typeddict-item]
    popped = await session.pop_item()
    assert popped == {"role": "user", "content": "m4"}
    assert len(await session.get_items()) == 4
    await session.clear_session()
    assert await session.get_items() == []
    other = MemvaultSession("s", agent_id="b", store=str(tmp_path / "s.db"))
    await other.add_items([{"role": "user", "content": "b's"}])
    assert await session.get_items() == []


def test_bad_ids_are_typed_errors() -> None:
    with pytest.raises(MemoryValidationError):
        MemvaultSession("a/b", agent_id="x", store="memory://")
    with pytest.raises(MemoryValidationError):
        MemvaultSession("ok", agent_id=" ", store="memory://")
