"""Message history on the operational store's messages repository: the OpenAI Agents SDK's
``MemvaultMessageSession`` and pydantic-ai's save/load helpers, with real agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents_scripted import ScriptedModel, say
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memvault.integrations.openai_agents import MemvaultMessageSession
from memvault.integrations.pydantic_ai import load_message_history, save_message_history
from memvault.persistence import create_persistence

set_tracing_disabled(True)


@pytest.fixture(params=["sqlite", "postgres"])
def ops_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "ops.db")
    url: str = request.getfixturevalue("postgres_url")
    return f"{url}{'&' if '?' in url else '?'}schema={request.getfixturevalue('schemas')()}"


async def test_openai_session_remembers_the_first_run(ops_url: str) -> None:
    seen: list[Any] = []

    def answer(items: Any) -> Any:
        seen.extend(items)
        said = [i.get("content") for i in items if isinstance(i, dict) and i.get("role") == "user"]
        return say(f"you said {said!r}")

    model = ScriptedModel([say("hello Ada"), answer])
    agent = Agent(name="dev", model=model)
    async with create_persistence(url=ops_url) as ops:
        await Runner.run(
            agent,
            "my name is Ada",
            session=MemvaultMessageSession("chat-1", backend=ops, agent_id="u1"),
        )
    # A new backend object and a new session: the second run sees the first turn.
    async with create_persistence(url=ops_url) as ops:
        session = MemvaultMessageSession("chat-1", backend=ops, agent_id="u1")
        result = await Runner.run(agent, "what is my name?", session=session)
        assert result.final_output == "you said ['my name is Ada', 'what is my name?']"
        items = await session.get_items()
        assert [i.get("role") for i in items] == ["user", "assistant", "user", "assistant"]
        stored = await ops.messages.get_history("chat-1")
        assert [(m.role, m.agent_id) for m in stored][:2] == [("user", "u1"), ("assistant", "u1")]
        assert stored[1].content == "hello Ada"


async def test_openai_session_protocol_limit_pop_clear(tmp_path: Path) -> None:
    async with create_persistence(url=str(tmp_path / "s.db")) as ops:
        session = MemvaultMessageSession("s", backend=ops)
        other = MemvaultMessageSession("t", backend=ops)
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)])
        await other.add_items([{"role": "user", "content": "other"}])
        assert [i["content"] for i in await session.get_items(limit=2)] == ["m3", "m4"]  # type: ignore[typeddict-item]
        assert await session.get_items(limit=0) == []
        assert await session.pop_item() == {"role": "user", "content": "m4"}
        assert len(await session.get_items()) == 4
        await session.clear_session()
        assert await session.get_items() == []
        assert await other.get_items() == [{"role": "user", "content": "other"}]


async def test_pydantic_ai_history_saved_and_reloaded(ops_url: str) -> None:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = [
            part.content
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if part.part_kind == "user-prompt"
        ]
        return ModelResponse(parts=[TextPart(f"prompts so far: {prompts}")])

    agent = PydanticAgent(FunctionModel(reply))
    async with create_persistence(url=ops_url) as ops:
        first = await agent.run("my name is Ada")
        assert await save_message_history(ops, "pa-1", first.new_messages(), agent_id="u1") == 2
    async with create_persistence(url=ops_url) as ops:  # a new process, in effect
        history = await load_message_history(ops, "pa-1")
        assert history == first.all_messages()
        second = await agent.run("what is my name?", message_history=history)
        assert second.output == "prompts so far: ['my name is Ada', 'what is my name?']"
        await save_message_history(ops, "pa-1", second.new_messages())
        assert len(await load_message_history(ops, "pa-1")) == 4
        assert await load_message_history(ops, "pa-1", limit=2) == second.new_messages()
        stored = await ops.messages.get_history("pa-1")
        assert [m.role for m in stored] == ["request", "response", "request", "response"]
        assert stored[0].content == "my name is Ada"
