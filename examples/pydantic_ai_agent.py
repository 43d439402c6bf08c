"""A pydantic-ai agent with memvault's memory tools and injected memories.

Offline: pydantic-ai's FunctionModel plays the LLM (it calls ``remember`` on the first run and
answers from the injected memories on the second). Needs ``pip install 'memvault[pydantic-ai]'``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memvault import AsyncMemory
from memvault.integrations.pydantic_ai import memvault_instructions, memvault_toolset

AGENT = "assistant-1"


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: store a fact when told one, else answer from the instructions."""
    last = messages[-1].parts[-1]
    if getattr(last, "part_kind", "") == "user-prompt" and "remember" in str(last.content):
        fact = str(last.content).split(":", 1)[1].strip()
        return ModelResponse(parts=[ToolCallPart("remember", {"content": fact})])
    if getattr(last, "part_kind", "") == "tool-return":
        return ModelResponse(parts=[TextPart("Noted.")])
    memories = [line for line in (info.instructions or "").splitlines() if "editor" in line]
    return ModelResponse(parts=[TextPart(memories[0] if memories else "No idea.")])


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncMemory(str(Path(tmp) / "agent.db")) as memory:
            agent = Agent(
                FunctionModel(scripted),
                toolsets=[memvault_toolset(memory, agent_id=AGENT)],
                instructions=memvault_instructions(memory, agent_id=AGENT),
            )
            first = await agent.run("Please remember: my favourite editor is Helix")
            print("run 1:", first.output)
            second = await agent.run("Which editor do I like?")
            print("run 2:", second.output)


if __name__ == "__main__":
    asyncio.run(main())
