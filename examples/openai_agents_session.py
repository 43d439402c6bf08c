"""The OpenAI Agents SDK with memvault tools and a memvault-backed session.

Offline: a scripted model implements the SDK's Model interface (no API key, no network); the
session is saved in the same SQLite file as the memories. Needs
``pip install 'memvault[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from memvault import AsyncMemory
from memvault.integrations.openai_agents import MemvaultSession, memvault_function_tools

AGENT = "support-bot"


def _text(text: str) -> ResponseOutputMessage:
    part = ResponseOutputText(type="output_text", text=text, annotations=[])
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=[part]
    )


class ScriptedModel(Model):
    """Stands in for an LLM: remembers what the user says, then answers from ``recall``."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any):  # type: ignore[no-untyped-def]
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        last = items[-1]
        if last.get("type") == "function_call_output":
            # recall answers "[Type: ... | time]" then the memory's text; keep the best one's text.
            best = str(last["output"]).split("\n\n---\n\n")[0]
            reply = _text(f"(from memory) {best.split(chr(10), 1)[-1]}")
        elif "remember" in str(last.get("content", "")):
            args = {"content": str(last["content"]).split(":", 1)[1].strip()}
            reply = ResponseFunctionToolCall(
                type="function_call", call_id="c1", name="remember", arguments=json.dumps(args)
            )
        else:
            args = {"query": str(last.get("content", ""))}
            reply = ResponseFunctionToolCall(
                type="function_call", call_id="c2", name="recall", arguments=json.dumps(args)
            )
        return ModelResponse(output=[reply], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def main() -> None:
    set_tracing_disabled(True)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bot.db")
        async with AsyncMemory(db) as memory:
            agent = Agent(
                name="support",
                model=ScriptedModel(),
                tools=memvault_function_tools(memory, agent_id=AGENT),
            )
            session = MemvaultSession("ticket-4711", agent_id=AGENT, store=db)
            await Runner.run(agent, "remember: the customer's plan is Pro", session=session)
            result = await Runner.run(agent, "which plan is the customer on?", session=session)
            print("answer:", result.final_output)
            print("session items:", len(await session.get_items()))


if __name__ == "__main__":
    asyncio.run(main())
